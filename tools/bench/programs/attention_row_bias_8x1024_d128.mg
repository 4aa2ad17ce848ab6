# Attention with one added bias row per head over the keys ([8, 1, 1024], broadcast over every
# query: ALiBi's slope times the key position, a padding mask), 8 heads, 1024 tokens, d 128;
# K stored [head, seq, dim].
program attention_row_bias_8x1024_d128
input Q f16 [8, 1024, 128]
input K f16 [8, 128, 1024] layout=transposed
input V f16 [8, 1024, 128]
input B f16 [8, 1, 1024]
A = add(scale(matmul(Q, K), c=0.08838834764831843), B)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
