# C = A · B with M = 1000, N = 1000, K = 1000 (f16); A as given, B as given.
program gemm_1000
input A f16 [1000, 1000]
input B f16 [1000, 1000]
C = matmul(A, B)
output C
