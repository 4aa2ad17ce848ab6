# A batched GEMM of odd sizes whose result gates itself: Y = P * sigmoid(P), P = A B.
program bmm_4x333x257x129
input A f16 [4, 333, 257]
input B f16 [4, 257, 129]
Y = mul(matmul(A, B), sigmoid(matmul(A, B)))
output Y
