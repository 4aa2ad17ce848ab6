# Causal GQA prefill with Gemma-2-2B's attention: 8 query heads over 4 KV heads of dim 256,
# 2048 tokens. Each KV head's 2 query heads are folded into its query rows (2 sequences of
# 2048), so K and V are read once per KV head; causal_mask repeats per sequence.
program gqa_prefill_causal_8q4kv_2048_d256
input Q f16 [4, 4096, 256]
input K f16 [4, 256, 2048] layout=transposed
input V f16 [4, 2048, 256]
A = causal_mask(scale(matmul(Q, K), c=0.0625), queries=2048)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
