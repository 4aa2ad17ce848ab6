# RMSNorm followed by a projection: Y = rms_norm(X) · W with 16 rows, hidden size 4096 and
# 6144 output features. rms_norm(x) = x / sqrt(mean(x²)) over the hidden dim (no epsilon).
program rmsnorm_matmul
input X f16 [16, 4096]
input W f16 [4096, 6144]
Y = matmul(rms_norm(X, dim=1), W)
output Y
