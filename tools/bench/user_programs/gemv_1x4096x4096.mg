# One token through a 4096 x 4096 projection (decode's GEMV).
program gemv_1x4096x4096
input X f16 [1, 4096]
input W f16 [4096, 4096]
Y = matmul(X, W)
output Y
