program gemm_64x128x64
input A f16 [64, 128]
input B f16 [128, 64]
C = matmul(A, B)
output C
