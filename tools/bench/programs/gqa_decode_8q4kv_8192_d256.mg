# Decode with Gemma-2-2B's attention: batch 1, 8 query heads in 4 KV groups of 2, head dim
# 256, 8192 cached positions. Safe softmax; K stored [head, seq, dim] and read through a
# transposed view.
program gqa_decode_8q4kv_8192_d256
input Q f16 [4, 2, 256]
input K f16 [4, 256, 8192] layout=transposed
input V f16 [4, 8192, 256]
A = scale(matmul(Q, K), c=0.0625)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
