# A bf16 GEMM of sizes no tile divides, its A rows 1400 bytes (not 16-byte aligned).
program bf16_gemm_300x500x700
input A bf16 [300, 700]
input B bf16 [700, 500]
Y = matmul(A, B)
output Y
