program gemm_128x128x128
input A f16 [128, 128]
input B f16 [128, 128]
C = matmul(A, B)
output C
