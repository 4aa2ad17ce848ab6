# C = A · B with M = 1030, N = 1030, K = 1030 (f16); A as given, B as given.
program gemm_1030
input A f16 [1030, 1030]
input B f16 [1030, 1030]
C = matmul(A, B)
output C
