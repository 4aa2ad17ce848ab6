# A projection of a model at any number of tokens: C = A·B with A [m, 4096] for m from 1 to
# 4096 and B [4096, 4096] stored transposed (as nn.Linear keeps its weight [out, in]), f16.
program gemm_dynamic_m_4096x4096
dim m in [1, 4096]
input A f16 [m, 4096]
input B f16 [4096, 4096] layout=transposed
C = matmul(A, B)
output C
