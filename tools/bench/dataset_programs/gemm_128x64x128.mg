program gemm_128x64x128
input A f16 [128, 64]
input B f16 [64, 128]
C = matmul(A, B)
output C
