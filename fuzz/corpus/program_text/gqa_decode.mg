# Grouped-query attention, decode step: batch 1, 32 query heads in 8 KV groups of 4, head
# dim 128, 4096 cached positions. K is a KV cache stored [8, 4096, 128] and read as the
# logical [8, 128, 4096] operand (layout=transposed). The row max is subtracted before exp (safe softmax).
program gqa_decode
input Q f16 [8, 4, 128]
input K f16 [8, 128, 4096] layout=transposed
input V f16 [8, 4096, 128]
A = scale(matmul(Q, K), c=0.08838834764831843)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
