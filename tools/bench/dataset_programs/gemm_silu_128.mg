program gemm_silu_128
input A f16 [128, 128]
input B f16 [128, 64]
C = matmul(A, B)
D = silu(C)
output D
