program gemm_64x256x64
input A f16 [64, 256]
input B f16 [256, 64]
C = matmul(A, B)
output C
