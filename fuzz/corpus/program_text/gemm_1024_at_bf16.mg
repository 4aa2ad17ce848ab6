# C = A · B with M = 1024, N = 1024, K = 1024 (bf16); A stored transposed, B as given.
program gemm_1024_at_bf16
input A bf16 [1024, 1024] layout=transposed
input B bf16 [1024, 1024]
C = matmul(A, B)
output C
