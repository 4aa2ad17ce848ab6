# Phi-2-shaped causal prefill: 32 heads, 512 tokens, head dim 80.
program mha_causal_32x512_d80
input Q f16 [32, 512, 80]
input K f16 [32, 80, 512] layout=transposed
input V f16 [32, 512, 80]
A = causal_mask(scale(matmul(Q, K), c=0.11180339887498948))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
O = matmul(div(E, reduce_sum(E, dim=2)), V)
output O
