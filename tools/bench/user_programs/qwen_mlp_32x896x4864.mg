# Qwen2-0.5B's RMSNorm and gated MLP up to the down projection, 32 tokens.
program qwen_mlp_32x896x4864
input X f16 [32, 896]
input W1 f16 [896, 4864]
input W3 f16 [896, 4864]
N = rms_norm(X, dim=1)
Y = mul(silu(matmul(N, W1)), matmul(N, W3))
output Y
