# A square f16 GEMM: C = A · B with M = N = K = 1024.
program gemm_1024
input A f16 [1024, 1024]
input B f16 [1024, 1024]
C = matmul(A, B)
output C
