# The attention of a Llama layer as the torch.compile front end cuts it (hidden 2048: 32 query
# heads over 8 KV heads, head dim 64, 512 tokens, causal, safe softmax). Each KV head's 4 query
# heads are folded into its query rows; K is read through a transposed view, and V straight
# from the V projection's result [512, 8·64] (heads_transposed), with no copy.
program llama_attention_512
input Q f16 [8, 2048, 64]
input K f16 [8, 64, 512] layout=transposed
input V f16 [8, 512, 64] layout=heads_transposed
A = causal_mask(scale(matmul(Q, K), c=0.125), queries=512)
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
