"""Triton kernels for the programs of dataset classes, written with Triton's own API.

Every shape is a compile-time constant (tl.constexpr), so a compiled kernel takes only
pointers (plus the scratch pointers Triton appends) and its launch ABI is fixed, as a
dataset member's must be. Each kernel reads and writes contiguous row-major tensors in the
storage layout the class's program gives (a `layout=transposed` input is stored with its
last two dims swapped). No kernel masks: the generator only picks tiles that divide the
shapes, and says so when none does.
"""
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


@triton.jit
def gated_mlp(Y, X, W1, W3, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr):
    """Y = silu(X·W1) * (X·W3): both products share each loaded tile of X."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    gate = tl.zeros((BM, BN), dtype=tl.float32)
    up = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(X + rm[:, None] * K + (k + rk)[None, :])
        w1 = tl.load(W1 + (k + rk)[:, None] * N + rn[None, :])
        w3 = tl.load(W3 + (k + rk)[:, None] * N + rn[None, :])
        gate = tl.dot(x, w1, gate)
        up = tl.dot(x, w3, up)
    y = gate * tl.sigmoid(gate) * up
    tl.store(Y + rm[:, None] * N + rn[None, :], y.to(tl.float16))


@triton.jit
def rmsnorm_matmul(Y, X, W, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
                   BN: tl.constexpr, BK: tl.constexpr):
    """Y = (X / sqrt(mean(X², row))) · W, as diag(1/rms) · (X · W): the row scale is applied
    to the accumulator once, after the products, instead of to every loaded tile of X."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    squares = tl.zeros((BM,), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(X + rm[:, None] * K + (k + rk)[None, :])
        w = tl.load(W + (k + rk)[:, None] * N + rn[None, :])
        xf = x.to(tl.float32)
        squares += tl.sum(xf * xf, axis=1)
        acc = tl.dot(x, w, acc)
    scale = 1.0 / tl.sqrt(squares / K)
    tl.store(Y + rm[:, None] * N + rn[None, :], (acc * scale[:, None]).to(tl.float16))


@triton.jit
def lora(Y, X, W, LA, LB, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, R: tl.constexpr,
         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Y = X·W + (X·LA)·LB: the rank-R product X·LA accumulates in the same loop over K as
    X·W, then one small product adds the adapter."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    rr = tl.arange(0, R)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    low = tl.zeros((BM, R), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(X + rm[:, None] * K + (k + rk)[None, :])
        w = tl.load(W + (k + rk)[:, None] * N + rn[None, :])
        la = tl.load(LA + (k + rk)[:, None] * R + rr[None, :])
        acc = tl.dot(x, w, acc)
        low = tl.dot(x, la, low)
    lb = tl.load(LB + rr[:, None] * N + rn[None, :])
    acc = tl.dot(low.to(tl.float16), lb, acc)
    tl.store(Y + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@triton.jit
def attention(O, Q, K, V, ROWS: tl.constexpr, GROUP_ROWS: tl.constexpr, KEYS: tl.constexpr,
              D: tl.constexpr, SCALE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
              K_STORED_BY_KEY: tl.constexpr):
    """O = softmax(scale · Q·Kᵀ) · V with the row max subtracted, in one pass over the keys
    (online softmax). Q and O are [heads, ROWS, D]; each KV head serves GROUP_ROWS query rows
    (query heads of a group folded into rows). K is stored [heads, KEYS, D] when
    K_STORED_BY_KEY, else [heads, D, KEYS]. A block of BM rows larger than GROUP_ROWS (decode:
    4 query rows) is masked down to the real rows."""
    pid_m = tl.program_id(0)
    head = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    real = rm < GROUP_ROWS
    rd = tl.arange(0, D)
    rn = tl.arange(0, BN)
    q = tl.load(Q + head * ROWS * D + rm[:, None] * D + rd[None, :], mask=real[:, None], other=0.0)
    m = tl.full((BM,), float("-inf"), dtype=tl.float32)
    total = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, KEYS, BN):
        keys = start + rn
        if K_STORED_BY_KEY:
            k = tl.load(K + head * KEYS * D + keys[None, :] * D + rd[:, None])
        else:
            k = tl.load(K + head * D * KEYS + rd[:, None] * KEYS + keys[None, :])
        s = tl.dot(q, k) * SCALE
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        rescale = tl.exp(m - m_new)
        total = total * rescale + tl.sum(p, axis=1)
        v = tl.load(V + head * KEYS * D + keys[:, None] * D + rd[None, :])
        acc = acc * rescale[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    out = acc / total[:, None]
    tl.store(O + head * ROWS * D + rm[:, None] * D + rd[None, :], out.to(tl.float16),
             mask=real[:, None])
