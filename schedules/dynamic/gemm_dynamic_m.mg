program gemm_dynamic_m
dim m in [1, 4096]
input A f16 [m, 128]
input B f16 [128, 64]
C = matmul(A, B)
output C
