# Causal GQA prefill: 8 query heads over 2 KV heads, 512 queries over their own 512 keys, head
# dim 128, safe softmax. Each KV head's 4 query heads are folded into its query rows (4
# sequences of 512: causal_mask's queries=512), so K and V are read once per KV head.
program gqa_prefill_causal_512
input Q f16 [2, 2048, 128]
input K f16 [2, 128, 512] layout=transposed
input V f16 [2, 512, 128]
A = causal_mask(scale(matmul(Q, K), c=0.08838834764831843), queries=512)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
