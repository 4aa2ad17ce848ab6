# A gated MLP's down projection with its residual: Y = X + (silu(G) * U) W, 16 tokens, widths 2816 and 1024.
program down_residual_16x2816x1024
input X f16 [16, 1024]
input G f16 [16, 2816]
input U f16 [16, 2816]
input W f16 [2816, 1024]
Y = add(X, matmul(mul(silu(G), U), W))
output Y
