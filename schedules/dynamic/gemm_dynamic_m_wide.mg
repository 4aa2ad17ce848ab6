# A projection at any number of tokens, wide enough that its reference extents have more tiles
# than an H100 has multiprocessors: C = A·B with A [m, 256] for m from 1 to 1024 and B
# [256, 4096] stored transposed. The schedule beside it is the search's persistent warpgroup
# GEMM: one block per multiprocessor, walking as many tiles as m gives.
program gemm_dynamic_m_wide
dim m in [1, 1024]
input A f16 [m, 256]
input B f16 [256, 4096] layout=transposed
C = matmul(A, B)
output C
