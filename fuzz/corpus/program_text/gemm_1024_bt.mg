# C = A · B with M = 1024, N = 1024, K = 1024 (f16); A as given, B stored transposed.
program gemm_1024_bt
input A f16 [1024, 1024]
input B f16 [1024, 1024] layout=transposed
C = matmul(A, B)
output C
