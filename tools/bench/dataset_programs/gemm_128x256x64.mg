program gemm_128x256x64
input A f16 [128, 256]
input B f16 [256, 64]
C = matmul(A, B)
output C
