# A projection with a bias and erf-GELU, 128 tokens, 1024 -> 4096.
program erf_gelu_mlp_128x1024x4096
input X f16 [128, 1024]
input W1 f16 [1024, 4096]
input B1 f16 [1, 4096]
H = add(matmul(X, W1), B1)
Y = mul(scale(H, c=0.5), add_scalar(erf(scale(H, c=0.7071067811865476)), c=1.0))
output Y
