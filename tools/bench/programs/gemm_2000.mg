# C = A · B with M = 2000, N = 2000, K = 2000 (f16), both row-major: a GEMM shape the repository
# ships no schedule for (issue 24's "must show" list).
program gemm_2000
input A f16 [2000, 2000]
input B f16 [2000, 2000]
C = matmul(A, B)
output C
