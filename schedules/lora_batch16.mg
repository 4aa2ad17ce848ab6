# A projection with a LoRA adapter at batch 16: Y = X·W + (X·LA)·LB, X [16, 4096], W [4096, 4096],
# rank 16 (LA [4096, 16], LB [16, 4096]), f16. Bound by reading W (33.5 MB).
program lora_batch16
input X f16 [16, 4096]
input W f16 [4096, 4096]
input LA f16 [4096, 16]
input LB f16 [16, 4096]
Y = add(matmul(X, W), matmul(matmul(X, LA), LB))
output Y
