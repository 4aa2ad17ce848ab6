# R + (A·B + bias) / 2, B stored [N, K] as nn.Linear stores it: a GEMM with a bias, a scale and
# a residual, which the warpgroup GEMM runs as its epilogue in registers.
program gemm_bias_scaled_residual_512x1024x2048
input A f16 [512, 1024]
input B f16 [1024, 2048] layout=transposed
input R f16 [512, 2048]
input bias f16 [1, 2048]
t0 = matmul(A, B)
t1 = add(t0, bias)
t2 = scale(t1, c=0.5)
y = add(R, t2)
output y
