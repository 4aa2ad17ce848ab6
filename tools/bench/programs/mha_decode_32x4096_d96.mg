# Decode with Phi-3-mini's attention: batch 1, 32 query heads over their own 32 KV heads of
# dim 96, 4096 cached positions. Safe softmax; K stored [head, seq, dim] and read through a
# transposed view.
program mha_decode_32x4096_d96
input Q f16 [32, 1, 96]
input K f16 [32, 96, 4096] layout=transposed
input V f16 [32, 4096, 96]
A = scale(matmul(Q, K), c=0.10206207261596575)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
