"""mugraph's kernels against PyTorch on the same GPU, in one run.

    python3 tools/python/gpu_bench.py --replays DIR --out bench_gpu.json [--cases a,b,...]

DIR holds one `mugraph replay` output folder per case (named after the schedule files in
schedules/); a folder CASE.LABEL is another of our variants of CASE (impl "mugraph.LABEL"). A
case with no folder is skipped with a note. Every candidate, ours and PyTorch's, is timed the
same way: captured into a CUDA graph and replayed under triton.testing.do_bench (median;
do_bench clears the L2 between runs). Outputs are checked against a float64 reference first.
Prints a table, writes JSON (tools/python/bench_plots.py draws it).

JSON: {"device", "copy_bandwidth_bytes_per_s", "torch", "results": [case, ...]}. A case has
"case", "kind", "rows", and "bytes" where it is memory-bound (inputs read once plus outputs
written once; its rows then carry "fraction_of_copy_bandwidth") and "flops" where counted (its
rows then carry "tflops"). Decode cases and their rows carry "context"; matmul and MLP cases
"m", "k", "n" (X [m, k], weights [k, n]). A row is {"impl", "us", "rel_error",
"ratio_to_best_torch", ...}, or {"impl", "us": null, "error"} for a candidate that could not
run.
"""
import argparse
import functools
import json
import math
import os
import sys
import traceback

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(__file__))
import gemm_sweep  # noqa: E402
from mugraph_launch import Variant, relative_error  # noqa: E402

DECODE_CONTEXTS_K = (1, 2, 4, 8, 16, 32, 64)
MATMUL_BATCHES = (1, 4, 8, 16)
MLP_BATCH = 16
HIDDEN = 4096  # Llama-3-8B's model width and MLP width
FFN = 14336
WEIGHT_STD = 0.02  # a typical initialisation spread of projection weights
LOGIT_SPREADS = (1, 4, 8, 16)  # logit standard deviations of the attention spread checks
COMPILE_MODE = "max-autotune-no-cudagraphs"


def graphed(fn):
    """A CUDA-graph replay of fn (after a warm-up run on a side stream)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def median_us(fn):
    return triton.testing.do_bench(graphed(fn), warmup=50, rep=300, return_mode="median") * 1e3


def copy_bandwidth():
    n = 1 << 30  # 1 GiB each way
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    us = median_us(lambda: dst.copy_(src))
    return 2 * n / (us * 1e-6)


def nbytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def short_error(e):
    """The first line of an exception's message (its type where the message is empty)."""
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:120]


def error_row(label, e):
    return {"impl": label, "us": None, "error": short_error(e)}


def timed_row(label, fn, ref, view=lambda out: out):
    """Runs fn once (its result, seen through `view`, checked against ref), then times it;
    an exception on the way gives an error row."""
    try:
        result = fn()
        torch.cuda.synchronize()
        return {"impl": label, "us": median_us(fn), "rel_error": relative_error(view(result), ref)}
    except Exception as e:  # a backend that does not support the shape, a compile failure
        return error_row(label, e)


def compiled_row(label, fn, args, ref):
    """torch.compile of fn(*args) (static shapes, COMPILE_MODE), compiled and autotuned
    before it is timed."""
    try:
        torch.compiler.reset()  # each case compiles afresh, clear of earlier cases' guards
        compiled = torch.compile(fn, mode=COMPILE_MODE, dynamic=False)
    except Exception as e:
        return error_row(label, e)
    return timed_row(label, lambda: compiled(*args), ref)


def ours_row(label, variant, inputs, output, ref, view=lambda out: out):
    """One of our variants on `inputs` (name -> tensor), writing the tensor named `output`."""
    try:
        out = variant.empty(output)
        tensors = dict(inputs, **{output: out})

        def run():
            variant.launch(tensors)
            return out
        return timed_row(label, run, ref, view)
    except Exception as e:
        return error_row(label, e)


# --- attention -----------------------------------------------------------------------------

def causal_bias(rows, cols, device):
    """0 where query row r may see key c (c <= r + cols - rows, aligned to the last key), -inf
    elsewhere: causal_mask's meaning (graph/ops.h) and SDPA's is_causal for rows == cols."""
    r = torch.arange(rows, device=device)[:, None]
    c = torch.arange(cols, device=device)[None, :]
    zero = torch.zeros((), dtype=torch.float64, device=device)
    return torch.where(c <= r + (cols - rows), zero, zero - math.inf)


def attention_reference(q, k, v, scale, causal=False):
    """Softmax attention in float64 with the row max subtracted (GQA heads repeated)."""
    groups = q.shape[1] // k.shape[1]
    k64 = k.double().repeat_interleave(groups, dim=1)
    v64 = v.double().repeat_interleave(groups, dim=1)
    logits = q.double() @ k64.transpose(-1, -2) * scale
    if causal:
        logits = logits + causal_bias(logits.shape[-2], logits.shape[-1], logits.device)
        finite = logits[torch.isfinite(logits)]
        measured = finite.std().item()
    else:
        measured = logits.std().item()
    weights = torch.exp(logits - logits.amax(-1, keepdim=True))
    return (weights / weights.sum(-1, keepdim=True)) @ v64, measured


def spread_check(variant, q_like, k_like, v_like, to_ours, scale, out_view, spread,
                 causal=False):
    """Our variant on fresh normal inputs whose logits have standard deviation `spread`
    (Q scaled, K and V ~ N(0, 1)): finite, and its error against float64."""
    head_dim = q_like.shape[-1]
    q = torch.randn_like(q_like) * (spread / (scale * math.sqrt(head_dim)))
    k = torch.randn_like(k_like)
    v = torch.randn_like(v_like)
    want, measured = attention_reference(q, k, v, scale, causal)
    got = variant.empty("O")
    variant.launch(dict(to_ours(q, k, v), O=got))
    torch.cuda.synchronize()
    return {"logit_std": spread, "measured_logit_std": measured,
            "finite": bool(torch.isfinite(got).all().item()),
            "rel_error": relative_error(out_view(got), want)}


def attention_case(name, variants, q_sdpa, k_sdpa, v_sdpa, to_ours, scale, out_view,
                   spreads=(), causal=False):
    """q/k/v in SDPA's [B, H, L, E]; to_ours(q, k, v) maps them to our inputs by name.
    variants: impl label -> Variant. spreads: logit standard deviations at which each of our
    variants is also checked (finite, error against float64) on fresh normal inputs."""
    ref, logit_std = attention_reference(q_sdpa, k_sdpa, v_sdpa, scale, causal)
    ours_inputs = to_ours(q_sdpa, k_sdpa, v_sdpa)
    rows = []
    for label, variant in variants.items():
        row = ours_row(label, variant, ours_inputs, "O", ref, out_view)
        if row["us"] is not None:
            try:
                row["spread_checks"] = [spread_check(variant, q_sdpa, k_sdpa, v_sdpa, to_ours,
                                                     scale, out_view, s, causal)
                                        for s in spreads]
            except Exception as e:
                row["spread_checks"] = []
                row["spread_error"] = short_error(e)
        rows.append(row)
    backends = {
        "sdpa_cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
        "sdpa_flash": torch.nn.attention.SDPBackend.FLASH_ATTENTION,
        "sdpa_efficient": torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION,
        "sdpa_math": torch.nn.attention.SDPBackend.MATH,
    }
    for label, backend in backends.items():
        with torch.nn.attention.sdpa_kernel(backend):
            rows.append(timed_row(
                label, lambda: torch.nn.functional.scaled_dot_product_attention(
                    q_sdpa, k_sdpa, v_sdpa, scale=scale, is_causal=causal, enable_gqa=True),
                ref))
    # Inputs read once, the output (Q's shape) written once.
    return {"case": name, "kind": "attention", "bytes": nbytes(*ours_inputs.values(), q_sdpa),
            "logit_std": logit_std, "rows": rows}


def mirage_inputs(q, k, v):
    """SDPA's [1, 16, 32, 64] queries and [1, 2, 4096, 64] keys/values as Mirage's GQA takes
    them: Q [2, 256, 64], K [2, 64, 4096], V [2, 4096, 64]."""
    return {"Q": q.reshape(2, 256, 64).contiguous(),
            "K": k[0].transpose(-1, -2).contiguous(), "V": v[0].contiguous()}


def mirage_heads(o):
    return o.reshape(1, 16, 32, 64)


def gqa_mirage_case(name, variants, options):
    # Mirage's GQA: 2 KV heads, 8 query heads each, 32 query tokens, 4096 positions, d 64,
    # no 1/sqrt(d) scale, no max-subtraction: inputs kept at half spread (logit std 2), since
    # its exp overflows f16 beyond that. Q [2, 256, 64] is SDPA's [1, 16, 32, 64].
    q = torch.randn(1, 16, 32, 64, dtype=torch.float16, device="cuda") * 0.5
    k = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda") * 0.5
    v = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
    return attention_case(name, variants, q, k, v, mirage_inputs, 1.0, mirage_heads)


def gqa_safe_mirage_shape_case(name, variants, options):
    # The same shape, the safe program (row max subtracted), at real spreads: N(0, 1) inputs
    # (logit std 8), checked up to logit std 16.
    q = torch.randn(1, 16, 32, 64, dtype=torch.float16, device="cuda")
    k = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
    v = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
    return attention_case(name, variants, q, k, v, mirage_inputs, 1.0, mirage_heads,
                          LOGIT_SPREADS)


def decode_inputs(q, k, v):
    """SDPA's [1, Hq, 1, d] query and [1, Hkv, seq, d] cache as our decode program takes
    them: Q [Hkv, Hq / Hkv, d] (the query heads of each KV head), K and V [Hkv, seq, d]."""
    kv_heads, d = k.shape[1], k.shape[3]
    return {"Q": q.reshape(kv_heads, q.shape[1] // kv_heads, d).contiguous(),
            "K": k[0].contiguous(), "V": v[0].contiguous()}


def decode_case(context, name, variants, options, q_heads=32, kv_heads=8, d=128):
    # Decode, safe program: batch 1, 32 query heads, 8 KV heads, d 128 unless told; the KV
    # cache is [kv_heads, seq, d] (schedules/gqa_decode_*k.mg, tools/bench/programs/).
    q = torch.randn(1, q_heads, 1, d, dtype=torch.float16, device="cuda")
    k = torch.randn(1, kv_heads, context, d, dtype=torch.float16, device="cuda")
    v = torch.randn(1, kv_heads, context, d, dtype=torch.float16, device="cuda")
    result = attention_case(name, variants, q, k, v, decode_inputs, 1 / math.sqrt(d),
                            lambda o: o.reshape(1, q_heads, 1, d), LOGIT_SPREADS)
    result["context"] = context
    for row in result["rows"]:
        row["context"] = context
    return result


def prefill_inputs(q, k, v):
    """SDPA's [1, H, L, E] as our prefill program takes them: Q and V [H, L, E], K stored
    [H, L, E] (the program's transposed view of [H, E, L])."""
    return {"Q": q[0].contiguous(), "K": k[0].contiguous(), "V": v[0].contiguous()}


def prefill_case(tokens, name, variants, options, heads=16, d=128, causal=False):
    # MHA prefill, safe program: `heads` heads, `tokens` queries and keys, no mask, head dim d
    # (schedules/mha_prefill_<tokens>.mg, tools/bench/programs/mha_prefill_*.mg); N(0, 1)
    # inputs, checked up to logit std 16.
    q, k, v = (torch.randn(1, heads, tokens, d, dtype=torch.float16, device="cuda")
               for _ in range(3))
    result = attention_case(name, variants, q, k, v, prefill_inputs, 1 / math.sqrt(d),
                            lambda o: o.reshape(1, heads, tokens, d), LOGIT_SPREADS, causal)
    # Two matmuls of 2 · tokens² · d each per head; causal: the blocks below the diagonal, half
    # (FlashAttention's convention for causal TFLOP/s).
    result["flops"] = heads * 4 * tokens * tokens * d // (2 if causal else 1)
    return result


def gqa_prefill_case(q_heads, kv_heads, tokens, d, name, variants, options, causal=False,
                     v_heads_transposed=False):
    # GQA prefill, safe program: each KV head's q_heads / kv_heads query heads folded into
    # query rows (tools/bench/programs/gqa_prefill_*.mg); SDPA runs with enable_gqa.
    # v_heads_transposed: our V is stored [tokens, kv_heads, d], as the V projection writes it
    # (schedules/llama_attention_512.mg).
    group = q_heads // kv_heads
    q = torch.randn(1, q_heads, tokens, d, dtype=torch.float16, device="cuda")
    k, v = (torch.randn(1, kv_heads, tokens, d, dtype=torch.float16, device="cuda")
            for _ in range(2))

    def to_ours(q, k, v):
        return {"Q": q[0].reshape(kv_heads, group * tokens, d).contiguous(),
                "K": k[0].contiguous(),
                "V": (v[0].transpose(0, 1) if v_heads_transposed else v[0]).contiguous()}

    result = attention_case(name, variants, q, k, v, to_ours, 1 / math.sqrt(d),
                            lambda o: o.reshape(1, q_heads, tokens, d), LOGIT_SPREADS, causal)
    result["flops"] = q_heads * 4 * tokens * tokens * d // (2 if causal else 1)
    return result


def biased_scores(logits, bias, cap):
    """Scores with Gemma 2's soft cap (cap · tanh(s / cap), where cap is given) and an added
    bias, as tools/bench/programs/attention_*_bias_*.mg write them."""
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return logits + bias


def biased_attention(q, k, v, bias, scale, cap):
    """Eager attention with an added bias (what a model's eager path runs), in q's dtype."""
    scores = biased_scores((q @ k.transpose(-1, -2)) * scale, bias, cap)
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


def biased_attention_case(name, variants, options, heads=8, tokens=1024, d=128,
                          bias_per_head=False, cap=None):
    # Attention whose scores get an added tensor B (tools/bench/programs/attention_*_bias_*.mg):
    # [1, tokens, tokens] for every head, or [heads, 1, tokens] (a row per head over the keys);
    # with `cap`, soft-capped first. B ~ N(0, 1). PyTorch's best: SDPA with B as attn_mask
    # (without a cap), flex_attention with the cap and B as a score_mod, the eager function and
    # torch.compile of it.
    q, k, v = (torch.randn(1, heads, tokens, d, dtype=torch.float16, device="cuda")
               for _ in range(3))
    shape = (heads, 1, tokens) if bias_per_head else (1, tokens, tokens)
    bias = torch.randn(*shape, dtype=torch.float16, device="cuda")
    scale = 1 / math.sqrt(d)
    logits = biased_scores(q.double() @ k.double().transpose(-1, -2) * scale, bias.double(), cap)
    weights = torch.exp(logits - logits.amax(-1, keepdim=True))
    ref = (weights / weights.sum(-1, keepdim=True)) @ v.double()
    ours = dict(prefill_inputs(q, k, v), B=bias)
    rows = [ours_row(label, variant, ours, "O", ref, lambda o: o.reshape(1, heads, tokens, d))
            for label, variant in variants.items()]
    mask = bias[None]  # [1, heads or 1, 1 or tokens, tokens]: SDPA broadcasts it
    if cap is None:
        backends = {"sdpa_cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
                    "sdpa_efficient": torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION,
                    "sdpa_math": torch.nn.attention.SDPBackend.MATH}
        for label, backend in backends.items():
            with torch.nn.attention.sdpa_kernel(backend):
                rows.append(timed_row(label, lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask, scale=scale), ref))
    try:
        from torch.nn.attention.flex_attention import flex_attention
        per_head = bias_per_head

        def score_mod(score, b, h, q_idx, kv_idx):
            if cap is not None:
                score = torch.tanh(score / cap) * cap
            return score + (bias[h, 0, kv_idx] if per_head else bias[0, q_idx, kv_idx])
        torch.compiler.reset()
        flex = torch.compile(flex_attention, dynamic=False)
        rows.append(timed_row("flex_attention", lambda: flex(q, k, v, score_mod=score_mod,
                                                             scale=scale), ref))
    except Exception as e:
        rows.append(error_row("flex_attention", e))
    rows.append(timed_row("eager", lambda: biased_attention(q, k, v, mask, scale, cap), ref))
    if options.compile:
        rows.append(compiled_row("torch.compile", biased_attention, (q, k, v, mask, scale, cap),
                                 ref))
    return {"case": name, "kind": "attention", "bytes": nbytes(*ours.values(), q),
            "flops": heads * 4 * tokens * tokens * d, "rows": rows}


# --- matrix products -----------------------------------------------------------------------

def matmul(x, w):
    """X·W, as the function torch.compile compiles (the eager baseline is torch.matmul)."""
    return x @ w


def matmul_case(m, name, variants, options):
    """Y = X·W, X [m, HIDDEN] ~ N(0, 1), W [HIDDEN, FFN] ~ N(0, WEIGHT_STD²), f16
    (schedules/matmul_m<m>.mg): at small m, bound by reading W."""
    x = torch.randn(m, HIDDEN, dtype=torch.float16, device="cuda")
    w = torch.randn(HIDDEN, FFN, dtype=torch.float16, device="cuda") * WEIGHT_STD
    ref = x.double() @ w.double()
    rows = [ours_row(label, v, {"X": x, "W": w}, "Y", ref) for label, v in variants.items()]
    rows.append(timed_row("torch.matmul", lambda: torch.matmul(x, w), ref))
    if options.compile:
        rows.append(compiled_row("torch.compile", matmul, (x, w), ref))
    return {"case": name, "kind": "matmul", "m": m, "k": HIDDEN, "n": FFN,
            "bytes": nbytes(x, w) + 2 * m * FFN,
            "flops": 2 * m * HIDDEN * FFN, "rows": rows}


def gated_mlp(x, w1, w3):
    """Llama's gated MLP without its down projection: silu(X·W1) * (X·W3)."""
    return torch.nn.functional.silu(x @ w1) * (x @ w3)


def rmsnorm_gated_mlp(x, w1, w3):
    """rms_norm over the hidden dim (no epsilon, as the program's op), then gated_mlp; the
    mean of squares in at least f32."""
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    return gated_mlp(x / torch.sqrt(torch.mean(wide ** 2, dim=1, keepdim=True)).to(x.dtype), w1, w3)


def mlp_case(m, name, variants, options, ffn=FFN, fn=gated_mlp):
    """fn (gated_mlp, or rmsnorm_gated_mlp) at batch m, inputs drawn as in matmul_case
    (schedules/mlp_batch16.mg, tools/bench/programs/rmsnorm_mlp_8x4096x11008.mg): bound by
    reading the two weights."""
    x = torch.randn(m, HIDDEN, dtype=torch.float16, device="cuda")
    w1 = torch.randn(HIDDEN, ffn, dtype=torch.float16, device="cuda") * WEIGHT_STD
    w3 = torch.randn(HIDDEN, ffn, dtype=torch.float16, device="cuda") * WEIGHT_STD
    ref = fn(x.double(), w1.double(), w3.double())
    inputs = {"X": x, "W1": w1, "W3": w3}
    rows = [ours_row(label, v, inputs, "Y", ref) for label, v in variants.items()]
    rows.append(timed_row("torch.eager", lambda: fn(x, w1, w3), ref))
    if options.compile:
        rows.append(compiled_row("torch.compile", fn, (x, w1, w3), ref))
    return {"case": name, "kind": "mlp", "m": m, "k": HIDDEN, "n": ffn,
            "bytes": nbytes(x, w1, w3) + 2 * m * ffn,
            "flops": 4 * m * HIDDEN * ffn, "rows": rows}


def linear_silu_residual(x, w, bias, r):
    """A projection with its bias, activation and residual: silu(X·Wᵀ + b) + R, W stored as
    nn.Linear stores it ([out, in])."""
    return torch.nn.functional.silu(x @ w.t() + bias) + r


def linear_scaled_residual(x, w, bias, r):
    """R + (X·Wᵀ + b) / 2."""
    return r + (x @ w.t() + bias) * 0.5


def epilogue_case(m, k, n, name, variants, options, fn=linear_silu_residual):
    """fn with X [m, k] ~ N(0, 1), W [n, k] ~ N(0, WEIGHT_STD²), b and R ~ N(0, 1)
    (tools/bench/programs/gemm_bias_*.mg): a GEMM whose epilogue PyTorch runs as cuBLAS and
    a fused element-wise kernel (Inductor: a Triton template or cuBLAS with its epilogue)."""
    x = torch.randn(m, k, dtype=torch.float16, device="cuda")
    w = torch.randn(n, k, dtype=torch.float16, device="cuda") * WEIGHT_STD
    bias = torch.randn(1, n, dtype=torch.float16, device="cuda")
    r = torch.randn(m, n, dtype=torch.float16, device="cuda")
    ref = fn(x.double(), w.double(), bias.double(), r.double())
    inputs = {"A": x, "B": w, "bias": bias, "R": r}
    rows = [ours_row(label, v, inputs, "y", ref) for label, v in variants.items()]
    rows.append(timed_row("torch.eager", lambda: fn(x, w, bias, r), ref))
    if options.compile:
        rows.append(compiled_row("torch.compile", fn, (x, w, bias, r), ref))
    return {"case": name, "kind": "gemm", "flops": 2 * m * k * n, "rows": rows}


def gemm_case(n, dtype, name, variants, options, k=None, n_cols=None):
    """C = A·B, A [n, k] and B [k, n_cols] (both n by default) ~ N(0, 1): compute-bound."""
    k = k or n
    n_cols = n_cols or n
    a = torch.randn(n, k, dtype=dtype, device="cuda")
    b = torch.randn(k, n_cols, dtype=dtype, device="cuda")
    ref = a.double() @ b.double()
    rows = [ours_row(label, v, {"A": a, "B": b}, "C", ref) for label, v in variants.items()]
    rows.append(timed_row("torch.matmul", lambda: torch.matmul(a, b), ref))
    if options.compile:
        rows.append(compiled_row("torch.compile", matmul, (a, b), ref))
    return {"case": name, "kind": "gemm", "flops": 2 * n * k * n_cols, "rows": rows}


def sweep_case(m, k, n, dtype, b_transposed, name, variants, options):
    """A point of the GEMM sweep (tools/python/gemm_sweep.py): C = A·B with A [m, k] ~ N(0, 1);
    B [k, n] ~ N(0, 1) row-major, or, for a projection, W [n, k] ~ N(0, WEIGHT_STD²) as
    nn.Linear stores it (the program's B, layout=transposed), against cuBLAS (torch.matmul)."""
    torch_dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, dtype=torch_dtype, device="cuda")
    if b_transposed:
        b = torch.randn(n, k, dtype=torch_dtype, device="cuda") * WEIGHT_STD
        ref = a.double() @ b.double().t()
        theirs = lambda: torch.matmul(a, b.t())  # noqa: E731
    else:
        b = torch.randn(k, n, dtype=torch_dtype, device="cuda")
        ref = a.double() @ b.double()
        theirs = lambda: torch.matmul(a, b)  # noqa: E731
    rows = [ours_row(label, v, {"A": a, "B": b}, "C", ref) for label, v in variants.items()]
    rows.append(timed_row("torch.matmul", theirs, ref))
    if options.compile:
        rows.append(compiled_row("torch.compile", matmul, (a, b.t() if b_transposed else b),
                                 ref))
    return {"case": name, "kind": "gemm_sweep", "m": m, "k": k, "n": n, "dtype": dtype,
            "b_transposed": b_transposed, "flops": 2 * m * k * n,
            "bytes": nbytes(a, b) + m * n * a.element_size(), "rows": rows}


def vocab_case(m, k, n, name, variants, options):
    """Y = X·Wᵀ, the vocabulary projection of a model: X [m, k] ~ N(0, 1), W [n, k] ~
    N(0, WEIGHT_STD²) as nn.Linear stores it (the program's B [k, n], stored transposed);
    n = 32001 ends every tile grid in a partial tile. Bound by reading W."""
    x = torch.randn(m, k, dtype=torch.float16, device="cuda")
    w = torch.randn(n, k, dtype=torch.float16, device="cuda") * WEIGHT_STD
    ref = x.double() @ w.double().t()
    rows = [ours_row(label, v, {"A": x, "B": w}, "C", ref) for label, v in variants.items()]
    rows.append(timed_row("torch.matmul", lambda: torch.matmul(x, w.t()), ref))
    rows.append(timed_row("torch.linear", lambda: torch.nn.functional.linear(x, w), ref))
    return {"case": name, "kind": "matmul", "m": m, "k": k, "n": n,
            "bytes": nbytes(x, w) + 2 * m * n, "flops": 2 * m * k * n, "rows": rows}


def all_cases():
    """Case name -> fn(name, variants, options), in the order they run."""
    cases = {"gqa_mirage": gqa_mirage_case,
             "gqa_safe_mirage_shape": gqa_safe_mirage_shape_case}
    for k in DECODE_CONTEXTS_K:
        cases[f"gqa_decode_{k}k"] = functools.partial(decode_case, k * 1024)
    for m in MATMUL_BATCHES:
        cases[f"matmul_m{m}"] = functools.partial(matmul_case, m)
    cases[f"mlp_batch{MLP_BATCH}"] = functools.partial(mlp_case, MLP_BATCH)
    cases["mha_prefill_2048"] = functools.partial(prefill_case, 2048)
    for n in (1024, 4096, 8192):
        cases[f"gemm_{n}"] = functools.partial(gemm_case, n, torch.float16)
    cases["gemm_8192_bf16"] = functools.partial(gemm_case, 8192, torch.bfloat16)
    # Sizes no power-of-two tile divides (partial tiles) and their power-of-two neighbours.
    cases["gemm_1030"] = functools.partial(gemm_case, 1030, torch.float16)
    cases["gemm_1000"] = functools.partial(gemm_case, 1000, torch.float16)
    cases["vocab_16x32001"] = functools.partial(vocab_case, 16, 4096, 32001)
    for context in (1000, 5000, 12345, 100000):
        cases[f"gqa_decode_{context}"] = functools.partial(decode_case, context)
    for tokens in (1000, 1024):
        cases[f"mha_prefill_{tokens}"] = functools.partial(prefill_case, tokens)
    # Programs the repository ships no schedule for (tools/bench/programs/): what
    # `mugraph superoptimize PROGRAM --profile` finds for a new user's shapes.
    cases["gemm_512x1024x4096"] = functools.partial(gemm_case, 512, torch.float16, k=4096,
                                                    n_cols=1024)
    cases["gemm_768x3072x768"] = functools.partial(gemm_case, 768, torch.float16, k=768,
                                                   n_cols=3072)
    cases["gemm_2000"] = functools.partial(gemm_case, 2000, torch.float16)
    cases["gemm_bias_silu_residual_512x1024x2048"] = functools.partial(epilogue_case, 512, 1024,
                                                                       2048)
    cases["gemm_bias_scaled_residual_512x1024x2048"] = functools.partial(
        epilogue_case, 512, 1024, 2048, fn=linear_scaled_residual)
    cases["mha_prefill_8x1024_d64"] = functools.partial(prefill_case, 1024, heads=8, d=64)
    cases["mha_prefill_16x4096_d128"] = functools.partial(prefill_case, 4096)
    cases["gqa_prefill_32q8kv_1024_d128"] = functools.partial(gqa_prefill_case, 32, 8, 1024, 128)
    for context in (6000, 20000):
        cases[f"gqa_decode_{context}"] = functools.partial(decode_case, context)
    cases["rmsnorm_mlp_8x4096x11008"] = functools.partial(mlp_case, 8, ffn=11008,
                                                           fn=rmsnorm_gated_mlp)
    # Causal prefill (causal_mask in the program; SDPA with is_causal=True).
    cases["mha_prefill_causal_16x2048_d128"] = functools.partial(prefill_case, 2048, causal=True)
    cases["gqa_prefill_causal_32q8kv_2048_d128"] = functools.partial(
        gqa_prefill_case, 32, 8, 2048, 128, causal=True)
    cases["mha_prefill_16x512_d64"] = functools.partial(prefill_case, 512, heads=16, d=64)
    # Head dims other than 64 and 128: Phi-2's 80, Phi-3-mini's 96, Gemma's 256.
    cases["mha_prefill_16x1024_d96"] = functools.partial(prefill_case, 1024, heads=16, d=96)
    cases["mha_prefill_causal_32x2048_d96"] = functools.partial(prefill_case, 2048, heads=32,
                                                                d=96, causal=True)
    cases["mha_prefill_causal_32x2048_d80"] = functools.partial(prefill_case, 2048, heads=32,
                                                                d=80, causal=True)
    cases["mha_prefill_8x1024_d256"] = functools.partial(prefill_case, 1024, heads=8, d=256)
    cases["mha_decode_32x4096_d96"] = functools.partial(decode_case, 4096, q_heads=32,
                                                        kv_heads=32, d=96)
    cases["gqa_decode_8q4kv_8192_d256"] = functools.partial(decode_case, 8192, q_heads=8,
                                                            kv_heads=4, d=256)
    cases["gqa_prefill_causal_8q4kv_2048_d256"] = functools.partial(
        gqa_prefill_case, 8, 4, 2048, 256, causal=True)
    # A Llama layer's attention as the torch.compile front end cuts it (hidden 2048).
    cases["llama_attention_512"] = functools.partial(gqa_prefill_case, 32, 8, 512, 64,
                                                     causal=True, v_heads_transposed=True)
    # Scores with an added tensor (an eager model's mask, ALiBi), soft-capped as Gemma 2's.
    cases["attention_capped_bias_8x1024_d128"] = functools.partial(biased_attention_case,
                                                                   cap=50.0)
    cases["attention_row_bias_8x1024_d128"] = functools.partial(biased_attention_case,
                                                                bias_per_head=True)
    # Issue 27's sweep (run with --cases of its names: `scripts/device_run.sh sweep`).
    for case, m, k, n, dtype, b_transposed in gemm_sweep.points():
        cases[case] = functools.partial(sweep_case, m, k, n, dtype, b_transposed)
    return cases


# --- running and reporting -----------------------------------------------------------------

def find_variants(replays, case):
    """Our variants of a case: replay folders named CASE (impl "mugraph") or CASE.LABEL (impl
    "mugraph.LABEL"); a folder that does not load is reported and left out."""
    found = {}
    for folder in sorted(os.listdir(replays)):
        if folder == case or folder.startswith(case + "."):
            label = "mugraph" + folder[len(case):]
            try:
                found[label] = Variant(os.path.join(replays, folder))
            except Exception as e:
                print(f"note: {case}: replay folder {folder} left out: {short_error(e)}")
    return found


def annotate(result, bandwidth):
    """Adds each row's ratio to the fastest PyTorch row and its throughput: the fraction of
    the copy bandwidth for a memory-bound case, TFLOP/s for the others."""
    torch_times = [row["us"] for row in result["rows"]
                   if not row["impl"].startswith("mugraph") and row.get("us")]
    best = min(torch_times) if torch_times else None
    for row in result["rows"]:
        if row.get("us") is None:
            continue
        if "bytes" in result:
            row["fraction_of_copy_bandwidth"] = result["bytes"] / (row["us"] * 1e-6) / bandwidth
        if "flops" in result:
            row["tflops"] = result["flops"] / (row["us"] * 1e-6) / 1e12
        row["ratio_to_best_torch"] = best / row["us"] if best else None


def print_table(results):
    print(f"{'case':22} {'impl':22} {'time us':>9} {'rel err':>9} {'metric':>18} "
          f"{'vs best torch':>13}")
    for r in results:
        for row in r["rows"]:
            if row.get("us") is None:
                print(f"{r['case']:22} {row['impl']:22} {'-':>9} {'-':>9} "
                      f"{row.get('error', '')[:60]}")
                continue
            if "fraction_of_copy_bandwidth" in row:
                metric = f"{100 * row['fraction_of_copy_bandwidth']:.1f}% of copy BW"
            else:
                metric = f"{row['tflops']:.1f} TFLOP/s"
            ratio = row["ratio_to_best_torch"]
            ratio = f"{ratio:.2f}x" if ratio else "-"
            print(f"{r['case']:22} {row['impl']:22} {row['us']:9.1f} {row['rel_error']:9.2e} "
                  f"{metric:>18} {ratio:>13}")
            for check in row.get("spread_checks", []):
                print(f"{'':22}   logit std {check['logit_std']:>2} (measured "
                      f"{check['measured_logit_std']:5.1f}): finite {check['finite']}, "
                      f"rel err {check['rel_error']:.2e}")
            if "spread_error" in row:
                print(f"{'':22}   spread checks failed: {row['spread_error']}")


def main():
    cases = all_cases()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", required=True, help="folder of `mugraph replay` outputs")
    parser.add_argument("--out", default="bench_gpu.json")
    parser.add_argument("--cases", default=",".join(c for c in cases
                                                    if not c.startswith("gemm_sweep_")),
                        help="comma-separated, from: " + ", ".join(cases) +
                        " (default: all but the gemm_sweep_* ones)")
    parser.add_argument("--no-compile", dest="compile", action="store_false",
                        help="leave out the torch.compile baselines (they autotune, slowly)")
    args = parser.parse_args()
    wanted = [c for c in args.cases.split(",") if c]
    unknown = [c for c in wanted if c not in cases]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(cases)}")
    if not os.path.isdir(args.replays):
        parser.error(f"--replays {args.replays}: not a folder")
    torch.manual_seed(0)
    device = torch.cuda.get_device_name()
    bandwidth = copy_bandwidth()
    print(f"device {device}; measured copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    results = []
    for name in wanted:
        variants = find_variants(args.replays, name)
        if not variants:
            print(f"note: {name} skipped: no replay folder {name} (or {name}.LABEL) in "
                  f"{args.replays}")
            continue
        print(f"running {name} ({', '.join(variants)})", flush=True)
        try:
            result = cases[name](name, variants, args)
        except Exception:  # e.g. out of memory drawing a reference: the other cases still run
            traceback.print_exc()
            print(f"note: {name} failed (above); left out of the results")
            continue
        annotate(result, bandwidth)
        results.append(result)
        torch.cuda.empty_cache()
    print_table(results)
    with open(args.out, "w") as f:
        json.dump({"device": device, "copy_bandwidth_bytes_per_s": bandwidth,
                   "torch": torch.__version__, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
