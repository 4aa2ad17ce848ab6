program bad_causal
input X f16 [2, 16, 64]
Y = causal_mask(X, queries=5)
Z = causal_mask(X, dim=1)
output Y
