# C = A · B with M = 8192, N = 8192, K = 8192 (bf16).
program gemm_8192_bf16
input A bf16 [8192, 8192]
input B bf16 [8192, 8192]
C = matmul(A, B)
output C
