# silu(A·B + bias) + R, B stored [N, K] as nn.Linear stores it: a GEMM with a bias, an
# activation and a residual, which the warpgroup GEMM runs as its epilogue in registers.
program gemm_bias_silu_residual_512x1024x2048
input A f16 [512, 1024]
input B f16 [1024, 2048] layout=transposed
input R f16 [512, 2048]
input bias f16 [1, 2048]
t0 = matmul(A, B)
t1 = add(t0, bias)
t2 = silu(t1)
y = add(t2, R)
output y
