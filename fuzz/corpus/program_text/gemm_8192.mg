# C = A · B with M = 8192, N = 8192, K = 8192 (f16).
program gemm_8192
input A f16 [8192, 8192]
input B f16 [8192, 8192]
C = matmul(A, B)
output C
