# A large square f16 GEMM: C = A · B with M = N = K = 4096.
program gemm_4096
input A f16 [4096, 4096]
input B f16 [4096, 4096]
C = matmul(A, B)
output C
