# MHA prefill: 16 heads, 4096 tokens attending to 4096 keys, head dim 128.
# Safe softmax (the row max subtracted before exp), no mask; K stored [head, seq, dim] and read
# through a transposed view.
program mha_prefill_16x4096_d128
input Q f16 [16, 4096, 128]
input K f16 [16, 128, 4096] layout=transposed
input V f16 [16, 4096, 128]
A = scale(matmul(Q, K), c=0.08838834764831843)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
