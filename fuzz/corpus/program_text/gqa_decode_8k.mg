# GQA decode: batch 1, 32 query heads in 8 KV groups of 4, head dim 128, 8192 cached
# positions. The KV cache is stored [kv_head, seq, dim]; K is read through a transposed view.
program gqa_decode_8k
input Q f16 [8, 4, 128]
input K f16 [8, 128, 8192] layout=transposed
input V f16 [8, 8192, 128]
A = scale(matmul(Q, K), c=0.08838834764831843)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
