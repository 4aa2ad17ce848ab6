"""mugraph's kernels against PyTorch on the same GPU, in one run.

    python3 tools/python/gpu_bench.py --replays DIR --out bench_gpu.json

DIR holds one `mugraph replay` output folder per case (named after the schedule files in
schedules/). Every candidate, ours and PyTorch's, is timed the same way: captured into a CUDA
graph and replayed under triton.testing.do_bench (median; do_bench clears the L2 between
runs). Outputs are checked against a float64 reference first. Prints a table, writes JSON.
"""
import argparse
import json
import math
import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(__file__))
from mugraph_launch import Variant, relative_error  # noqa: E402


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


def attention_reference(q, k, v, scale):
    """Softmax attention in float64 with the row max subtracted (GQA heads repeated)."""
    groups = q.shape[1] // k.shape[1]
    k64 = k.double().repeat_interleave(groups, dim=1)
    v64 = v.double().repeat_interleave(groups, dim=1)
    logits = q.double() @ k64.transpose(-1, -2) * scale
    weights = torch.exp(logits - logits.amax(-1, keepdim=True))
    return (weights / weights.sum(-1, keepdim=True)) @ v64, logits.std().item()


def attention_case(name, variants, q_sdpa, k_sdpa, v_sdpa, to_ours, scale, out_view,
                   spreads=()):
    """q/k/v in SDPA's [B, H, L, E]; to_ours(q, k, v) maps them to our inputs by name.
    variants: impl label -> Variant. spreads: logit standard deviations at which each of our
    variants is also checked (finite, error against float64) on fresh normal inputs."""
    ref, logit_std = attention_reference(q_sdpa, k_sdpa, v_sdpa, scale)
    ours_inputs = to_ours(q_sdpa, k_sdpa, v_sdpa)
    rows = []
    for label, variant in variants.items():
        out = variant.empty("O")
        tensors = dict(ours_inputs, O=out)
        variant.launch(tensors)
        torch.cuda.synchronize()
        row = {"impl": label, "us": median_us(lambda: variant.launch(tensors)),
               "rel_error": relative_error(out_view(out), ref), "spread_checks": []}
        for spread in spreads:
            # Q scaled so the logits have standard deviation `spread` (K, V ~ N(0, 1)).
            head_dim = q_sdpa.shape[-1]
            q = torch.randn_like(q_sdpa) * (spread / (scale * math.sqrt(head_dim)))
            k = torch.randn_like(k_sdpa)
            v = torch.randn_like(v_sdpa)
            want, measured = attention_reference(q, k, v, scale)
            got = variant.empty("O")
            variant.launch(dict(to_ours(q, k, v), O=got))
            torch.cuda.synchronize()
            row["spread_checks"].append({
                "logit_std": spread, "measured_logit_std": measured,
                "finite": bool(torch.isfinite(got).all().item()),
                "rel_error": relative_error(out_view(got), want)})
        rows.append(row)
    backends = {
        "sdpa_cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
        "sdpa_flash": torch.nn.attention.SDPBackend.FLASH_ATTENTION,
        "sdpa_efficient": torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION,
        "sdpa_math": torch.nn.attention.SDPBackend.MATH,
    }
    for label, backend in backends.items():
        try:
            with torch.nn.attention.sdpa_kernel(backend):
                fn = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
                    q_sdpa, k_sdpa, v_sdpa, scale=scale, enable_gqa=True)
                result = fn()
                torch.cuda.synchronize()
                rows.append({"impl": label, "us": median_us(fn),
                             "rel_error": relative_error(result, ref)})
        except Exception as e:  # a backend that does not support the shape
            rows.append({"impl": label, "us": None, "error": str(e).splitlines()[0][:120]})
    # Inputs read once, the output (Q's shape) written once.
    minimal_bytes = sum(t.numel() * t.element_size() for t in ours_inputs.values()) + \
        q_sdpa.numel() * q_sdpa.element_size()
    return {"case": name, "kind": "attention", "bytes": minimal_bytes, "logit_std": logit_std,
            "rows": rows}


def gemm_case(name, variant, n):
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, n, dtype=torch.float16, device="cuda")
    c = variant.empty("C")
    tensors = {"A": a, "B": b, "C": c}
    variant.launch(tensors)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    rows = [{"impl": "mugraph", "us": median_us(lambda: variant.launch(tensors)),
             "rel_error": relative_error(c, ref)}]
    result = torch.matmul(a, b)
    rows.append({"impl": "torch.matmul", "us": median_us(lambda: torch.matmul(a, b)),
                 "rel_error": relative_error(result, ref)})
    return {"case": name, "kind": "gemm", "flops": 2 * n ** 3, "rows": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", required=True)
    parser.add_argument("--out", default="bench_gpu.json")
    parser.add_argument("--cases", default="gqa_mirage,gqa_safe_mirage_shape,gqa_decode_4k,"
                        "gqa_decode_32k,gemm_1024,gemm_4096")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.cuda.get_device_name()
    bandwidth = copy_bandwidth()
    results = []
    wanted = args.cases.split(",")

    def variants(case):
        """Our variants of a case: replay folders named CASE (impl "mugraph") or CASE.LABEL
        (impl "mugraph.LABEL")."""
        found = {}
        for folder in sorted(os.listdir(args.replays)):
            if folder == case or folder.startswith(case + "."):
                label = "mugraph" + folder[len(case):]
                found[label] = Variant(os.path.join(args.replays, folder))
        return found

    def variant(case):
        return variants(case)["mugraph"]

    spreads = (1, 4, 8, 16)
    mirage_heads = lambda o: o.reshape(1, 16, 32, 64)  # noqa: E731

    def mirage_inputs(q, k, v):
        return {"Q": q.reshape(2, 256, 64).contiguous(),
                "K": k[0].transpose(-1, -2).contiguous(), "V": v[0].contiguous()}

    if "gqa_mirage" in wanted:
        # Mirage's GQA: 2 KV heads, 8 query heads each, 32 query tokens, 4096 positions, d 64,
        # no 1/sqrt(d) scale, no max-subtraction: inputs kept at half spread (logit std 2),
        # since its exp overflows f16 beyond that. Q [2, 256, 64] is SDPA's [1, 16, 32, 64].
        q = torch.randn(1, 16, 32, 64, dtype=torch.float16, device="cuda") * 0.5
        k = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda") * 0.5
        v = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
        results.append(attention_case("gqa_mirage", variants("gqa_mirage"), q, k, v,
                                      mirage_inputs, 1.0, mirage_heads))
    if "gqa_safe_mirage_shape" in wanted:
        # The same shape, the safe program (row max subtracted), at real spreads: N(0, 1)
        # inputs (logit std 8), checked up to logit std 16.
        q = torch.randn(1, 16, 32, 64, dtype=torch.float16, device="cuda")
        k = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
        v = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
        results.append(attention_case("gqa_safe_mirage_shape", variants("gqa_safe_mirage_shape"),
                                      q, k, v, mirage_inputs, 1.0, mirage_heads, spreads))
    for ctx in (4, 32):
        case = f"gqa_decode_{ctx}k"
        if case not in wanted:
            continue
        # Decode, safe program: batch 1, 32 query heads, 8 KV heads, d 128; the KV cache is
        # [8, seq, 128].
        seq = ctx * 1024
        q = torch.randn(1, 32, 1, 128, dtype=torch.float16, device="cuda")
        k = torch.randn(1, 8, seq, 128, dtype=torch.float16, device="cuda")
        v = torch.randn(1, 8, seq, 128, dtype=torch.float16, device="cuda")
        results.append(attention_case(
            case, variants(case), q, k, v,
            lambda q, k, v: {"Q": q.reshape(8, 4, 128).contiguous(), "K": k[0].contiguous(),
                             "V": v[0].contiguous()},
            1 / math.sqrt(128), lambda o: o.reshape(1, 32, 1, 128), spreads))
    for n in (1024, 4096):
        case = f"gemm_{n}"
        if case in wanted:
            results.append(gemm_case(case, variant(case), n))

    print(f"device {device}; measured copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    print(f"{'case':22} {'impl':22} {'time us':>9} {'rel err':>9} {'metric':>18} {'vs best torch':>13}")
    for r in results:
        torch_times = [row["us"] for row in r["rows"]
                       if not row["impl"].startswith("mugraph") and row.get("us")]
        best = min(torch_times) if torch_times else None
        for row in r["rows"]:
            if row.get("us") is None:
                print(f"{r['case']:22} {row['impl']:22} {'-':>9} {'-':>9} {row.get('error', '')[:40]}")
                continue
            if r["kind"] == "attention":
                row["fraction_of_copy_bandwidth"] = r["bytes"] / (row["us"] * 1e-6) / bandwidth
                metric = f"{100 * row['fraction_of_copy_bandwidth']:.1f}% of copy BW"
            else:
                row["tflops"] = r["flops"] / (row["us"] * 1e-6) / 1e12
                metric = f"{row['tflops']:.1f} TFLOP/s"
            row["ratio_to_best_torch"] = best / row["us"] if best else None
            ratio = f"{row['ratio_to_best_torch']:.2f}x" if best else "-"
            print(f"{r['case']:22} {row['impl']:22} {row['us']:9.1f} {row['rel_error']:9.2e} "
                  f"{metric:>18} {ratio:>13}")
            for check in row.get("spread_checks", []):
                print(f"{'':22}   logit std {check['logit_std']:>2} (measured "
                      f"{check['measured_logit_std']:5.1f}): finite {check['finite']}, "
                      f"rel err {check['rel_error']:.2e}")
    with open(args.out, "w") as f:
        json.dump({"device": device, "copy_bandwidth_bytes_per_s": bandwidth,
                   "torch": torch.__version__, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
