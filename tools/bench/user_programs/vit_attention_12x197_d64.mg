# ViT-B/16 self-attention: 12 heads, 197 tokens (196 patches and a class token), head dim 64.
program vit_attention_12x197_d64
input Q f16 [12, 197, 64]
input K f16 [12, 64, 197] layout=transposed
input V f16 [12, 197, 64]
A = scale(matmul(Q, K), c=0.125)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
O = matmul(div(E, reduce_sum(E, dim=2)), V)
output O
