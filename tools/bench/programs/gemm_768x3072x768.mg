# C = A · B with M = 768, N = 3072, K = 768 (f16), both row-major: a GEMM shape the repository
# ships no schedule for (issue 24's "must show" list).
program gemm_768x3072x768
input A f16 [768, 768]
input B f16 [768, 3072]
C = matmul(A, B)
output C
