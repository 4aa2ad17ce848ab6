# Stable-Diffusion-shaped cross-attention: 4096 image queries over 77 text keys, 8 heads, head dim 64.
program cross_attention_8x77x4096_d64
input Q f16 [8, 4096, 64]
input K f16 [8, 64, 77] layout=transposed
input V f16 [8, 77, 64]
A = scale(matmul(Q, K), c=0.125)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
O = matmul(div(E, reduce_sum(E, dim=2)), V)
output O
