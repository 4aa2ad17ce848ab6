# Causal attention prefill at any number of tokens: 2 heads, s query tokens over their own s
# keys for s from 1 to 1024, head dim 64, safe softmax, the causal mask as structure. The
# schedules beside it are what `mugraph superoptimize` of this program found (see
# schedules/README.md, "Dynamic dims"): warpgroup flash kernels whose grid, trip count, key
# masks, causal bounds and tensor maps follow s.
program prefill_causal_dynamic
dim s in [1, 1024]
input Q f16 [2, s, 64]
input K f16 [2, 64, s] layout=transposed
input V f16 [2, s, 64]
A = causal_mask(scale(matmul(Q, K), c=0.125))
M = reduce_max(A, dim=2)
E = exp(sub(A, M))
S = reduce_sum(E, dim=2)
O = matmul(div(E, S), V)
output O
