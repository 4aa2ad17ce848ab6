# C = A · B with M = 16, N = 32001, K = 4096 (f16); A as given, B stored transposed.
program vocab_16x32001
input A f16 [16, 4096]
input B f16 [4096, 32001] layout=transposed
C = matmul(A, B)
output C
