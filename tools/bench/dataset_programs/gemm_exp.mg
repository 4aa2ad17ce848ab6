program gemm_exp
input A f16 [64, 128]
input B f16 [128, 64]
C = matmul(A, B)
D = exp(C)
output D
