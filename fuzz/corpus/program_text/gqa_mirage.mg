# Grouped-query attention in Mirage's shape: 2 KV heads; each holds 256 query rows
# (query heads x tokens of a group folded together), head dim 64, 4096 KV positions.
# K is given pre-transposed ([batch, dim, seq]); softmax without max-subtraction, as Mirage.
program gqa_mirage
input Q f16 [2, 256, 64]
input K f16 [2, 64, 4096]
input V f16 [2, 4096, 64]
A = matmul(Q, K)
E = exp(A)
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
