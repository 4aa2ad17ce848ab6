# LayerNorm (mean and variance written out, epsilon 1e-5) then a projection with tanh-GELU, BERT-base widths, 64 tokens.
program ln_gelu_64x768x3072
input X f16 [64, 768]
input W f16 [768, 3072]
Mu = scale(reduce_sum(X, dim=1), c=0.0013020833333333333)
C = sub(X, Mu)
V = scale(reduce_sum(square(C), dim=1), c=0.0013020833333333333)
N = div(C, sqrt(add_scalar(V, c=0.00001)))
H = matmul(N, W)
Y = mul(scale(H, c=0.5), add_scalar(tanh(scale(add(H, scale(mul(H, mul(H, H)), c=0.044715)), c=0.7978845608)), c=1.0))
output Y
