# Causal multi-head attention prefill at any prompt length: 16 heads, s query tokens over their
# own s keys for s from 1 to 8192, head dim 128, safe softmax; the causal mask is structure
# (causal_mask), not an added tensor. One schedule for every prompt.
program mha_prefill_causal_dynamic
dim s in [1, 8192]
input Q f16 [16, s, 128]
input K f16 [16, 128, s] layout=transposed
input V f16 [16, s, 128]
A = causal_mask(scale(matmul(Q, K), c=0.08838834764831843))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
