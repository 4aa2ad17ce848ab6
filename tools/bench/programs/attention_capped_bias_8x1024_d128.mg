# Attention with soft-capped scores (Gemma 2's tanh(s / 50) * 50) and an added bias read as a
# tensor: one [1024, 1024] for every head, as an eager model's padding or window mask or
# ALiBi's distances come. 8 heads, 1024 tokens, d 128; K stored [head, seq, dim].
program attention_capped_bias_8x1024_d128
input Q f16 [8, 1024, 128]
input K f16 [8, 128, 1024] layout=transposed
input V f16 [8, 1024, 128]
input B f16 [1, 1024, 1024]
A = add(scale(tanh(scale(matmul(Q, K), c=0.0017677669529663688)), c=50), B)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
