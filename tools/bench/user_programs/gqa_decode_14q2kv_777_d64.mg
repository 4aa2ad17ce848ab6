# Qwen2-0.5B-shaped decode: 14 query heads over 2 KV heads (7 per group), head dim 64, 777 cached positions.
program gqa_decode_14q2kv_777_d64
input Q f16 [2, 7, 64]
input K f16 [2, 64, 777] layout=transposed
input V f16 [2, 777, 64]
A = scale(matmul(Q, K), c=0.125)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
O = matmul(div(E, reduce_sum(E, dim=2)), V)
output O
