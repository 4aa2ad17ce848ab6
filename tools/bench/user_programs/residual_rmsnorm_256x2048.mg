# A residual add, RMSNorm and its weight, 256 tokens of width 2048.
program residual_rmsnorm_256x2048
input X f16 [256, 2048]
input R f16 [256, 2048]
input G f16 [1, 2048]
Y = mul(rms_norm(add(X, R), dim=1), G)
output Y
