# OPT-shaped MLP: fc1 with its bias, ReLU, fc2 with its bias, 64 tokens, widths 768 and 3072.
program relu_mlp_64x768x3072
input X f16 [64, 768]
input W1 f16 [768, 3072]
input B1 f16 [1, 3072]
input W2 f16 [3072, 768]
input B2 f16 [1, 768]
Y = add(matmul(relu(add(matmul(X, W1), B1)), W2), B2)
output Y
