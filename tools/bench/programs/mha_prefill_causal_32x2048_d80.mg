# Causal MHA prefill with Phi-2's attention: 32 heads of dim 80, 2048 tokens over their own
# keys; the causal mask is structure (causal_mask), not an added tensor.
program mha_prefill_causal_32x2048_d80
input Q f16 [32, 2048, 80]
input K f16 [32, 80, 2048] layout=transposed
input V f16 [32, 2048, 80]
A = causal_mask(scale(matmul(Q, K), c=0.11180339887498948))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
