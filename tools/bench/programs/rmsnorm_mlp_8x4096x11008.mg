# RMSNorm followed by Llama's gated MLP without its down projection, at batch 8:
# Y = silu(N·W1) · (N·W3), N = rms_norm(X) over the hidden dim (no epsilon), X [8, 4096],
# W1 and W3 [4096, 11008] (Llama-2-7B's widths), f16. Bound by reading the two weights (180 MB).
program rmsnorm_mlp_8x4096x11008
input X f16 [8, 4096]
input W1 f16 [4096, 11008]
input W3 f16 [4096, 11008]
N = rms_norm(X, dim=1)
Y = mul(silu(matmul(N, W1)), matmul(N, W3))
output Y
