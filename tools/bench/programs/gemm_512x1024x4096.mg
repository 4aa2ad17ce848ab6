# C = A · B with M = 512, N = 1024, K = 4096 (f16), both row-major: a GEMM shape the repository
# ships no schedule for (issue 24's "must show" list).
program gemm_512x1024x4096
input A f16 [512, 4096]
input B f16 [4096, 1024]
C = matmul(A, B)
output C
