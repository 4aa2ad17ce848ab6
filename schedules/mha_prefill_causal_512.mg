# Causal multi-head attention prefill: 4 heads, 512 queries over their own 512 keys, head dim
# 128, safe softmax, the causal mask as structure (causal_mask); K read through a transposed view.
program mha_prefill_causal_512
input Q f16 [4, 512, 128]
input K f16 [4, 128, 512] layout=transposed
input V f16 [4, 512, 128]
A = causal_mask(scale(matmul(Q, K), c=0.08838834764831843))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
