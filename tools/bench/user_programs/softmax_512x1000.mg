# A row softmax over 1000 classes (no power of two), batch 512.
program softmax_512x1000
input X f16 [512, 1000]
M = reduce_max(X, dim=1)
E = exp(sub(X, M))
Y = div(E, reduce_sum(E, dim=1))
output Y
