# The gated MLP of Llama-style models at batch 16: silu(X·W1) · (X·W3), X [16, 4096],
# W1 and W3 [4096, 14336], f16. Bound by reading the two weights (235 MB).
program mlp_batch16
input X f16 [16, 4096]
input W1 f16 [4096, 14336]
input W3 f16 [4096, 14336]
Y = mul(silu(matmul(X, W1)), matmul(X, W3))
output Y
