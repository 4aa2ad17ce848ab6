# A small f16 GEMM for the external-member tests: C = A · B, M = N = 128, K = 64.
program gemm_128
input A f16 [128, 64]
input B f16 [64, 128]
C = matmul(A, B)
output C
