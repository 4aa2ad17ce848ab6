# Triton 3.9.0 kernel for gemm_128, compiled with
#   triton.compile(ASTSource(matmul, constexprs: M=128, N=128, K=0, BM=128, BN=128, BK=64, GROUP=8),
#                  target=GPUTarget('cuda', 90, 32), num_warps=8, num_stages=3)
# Parameters: C, A, B, then Triton's global and profile scratch.
import triton
import triton.language as tl


@triton.jit
def matmul(C, A, B, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
           BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    """C[M, N] = A[M, K] · B[K, N]; blocks grouped along M so neighbours share B in L2."""
    pid = tl.program_id(0)
    blocks_n = N // BN
    per_group = GROUP * blocks_n
    first_m = (pid // per_group) * GROUP
    rows = min(M // BM - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16))
