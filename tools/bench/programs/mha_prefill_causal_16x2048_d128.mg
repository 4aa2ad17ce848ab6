# Causal multi-head attention prefill: 16 heads, 2048 query tokens over their own 2048 keys,
# head dim 128, safe softmax; the causal mask is structure (causal_mask), not an added tensor.
program mha_prefill_causal_16x2048_d128
input Q f16 [16, 2048, 128]
input K f16 [16, 128, 2048] layout=transposed
input V f16 [16, 2048, 128]
A = causal_mask(scale(matmul(Q, K), c=0.08838834764831843))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
