program gemm_64x64x256
input A f16 [64, 64]
input B f16 [64, 256]
C = matmul(A, B)
output C
