# Causal GQA prefill: 32 query heads over 8 KV heads, 2048 tokens, head dim 128. Each KV head's
# 4 query heads are folded into its query rows (4 sequences of 2048), so K and V are read once
# per KV head, never copied; causal_mask repeats per sequence (queries=2048).
program gqa_prefill_causal_32q8kv_2048_d128
input Q f16 [8, 8192, 128]
input K f16 [8, 128, 2048] layout=transposed
input V f16 [8, 2048, 128]
A = causal_mask(scale(matmul(Q, K), c=0.08838834764831843), queries=2048)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
