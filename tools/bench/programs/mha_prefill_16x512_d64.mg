# MHA prefill: 16 heads, 512 tokens attending to 512 keys, head dim 64.
# Safe softmax (the row max subtracted before exp), no mask; K stored [head, seq, dim] and read
# through a transposed view.
program mha_prefill_16x512_d64
input Q f16 [16, 512, 64]
input K f16 [16, 64, 512] layout=transposed
input V f16 [16, 512, 64]
A = scale(matmul(Q, K), c=0.125)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
