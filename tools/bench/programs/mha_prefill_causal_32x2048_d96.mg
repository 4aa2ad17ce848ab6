# Causal MHA prefill with Phi-3-mini's attention: 32 heads of dim 96, 2048 tokens over their
# own keys; the causal mask is structure (causal_mask), not an added tensor.
program mha_prefill_causal_32x2048_d96
input Q f16 [32, 2048, 96]
input K f16 [32, 96, 2048] layout=transposed
input V f16 [32, 2048, 96]
A = causal_mask(scale(matmul(Q, K), c=0.10206207261596575))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
