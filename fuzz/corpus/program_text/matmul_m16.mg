# A small-batch projection: [16, 4096] · [4096, 14336] in f16 (decode of 16 tokens through an
# MLP's up projection). Bound by reading the 117 MB weight.
program matmul_m16
input X f16 [16, 4096]
input W f16 [4096, 14336]
Y = matmul(X, W)
output Y
