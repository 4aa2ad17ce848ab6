program gemm_256x64x64
input A f16 [256, 64]
input B f16 [64, 64]
C = matmul(A, B)
output C
