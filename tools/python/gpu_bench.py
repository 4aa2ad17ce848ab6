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


def attention_case(name, variant, q_sdpa, k_sdpa, v_sdpa, ours_inputs, scale, out_view):
    """q/k/v in SDPA's [B, H, L, E]; ours_inputs maps our input names to storage tensors."""
    out = variant.empty("O")
    tensors = dict(ours_inputs, O=out)
    variant.launch(tensors)
    torch.cuda.synchronize()
    # The program's reference: softmax without max-subtraction, in float64.
    groups = q_sdpa.shape[1] // k_sdpa.shape[1]
    k64 = k_sdpa.double().repeat_interleave(groups, dim=1)
    v64 = v_sdpa.double().repeat_interleave(groups, dim=1)
    weights = torch.exp(q_sdpa.double() @ k64.transpose(-1, -2) * scale)
    ref = (weights / weights.sum(-1, keepdim=True)) @ v64
    ours_error = relative_error(out_view(out), ref)
    rows = [{"impl": "mugraph", "us": median_us(lambda: variant.launch(tensors)),
             "rel_error": ours_error}]
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
    minimal_bytes = sum(t.numel() * t.element_size() for t in ours_inputs.values()) + \
        out.numel() * out.element_size()
    return {"case": name, "kind": "attention", "bytes": minimal_bytes, "rows": rows}


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
    parser.add_argument("--cases", default="gqa_mirage,gqa_decode_4k,gqa_decode_32k,gemm_1024,gemm_4096")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.cuda.get_device_name()
    bandwidth = copy_bandwidth()
    results = []
    wanted = args.cases.split(",")

    def variant(folder):
        return Variant(os.path.join(args.replays, folder))

    if "gqa_mirage" in wanted:
        # Mirage's GQA: 2 KV heads, 8 query heads each, 32 query tokens, 4096 positions, d 64,
        # no 1/sqrt(d) scale. Our Q [2, 256, 64] is SDPA's [1, 16, 32, 64] with heads grouped.
        q = torch.randn(1, 16, 32, 64, dtype=torch.float16, device="cuda") * 0.5
        k = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda") * 0.5
        v = torch.randn(1, 2, 4096, 64, dtype=torch.float16, device="cuda")
        ours = {"Q": q.reshape(2, 256, 64).contiguous(),
                "K": k[0].transpose(-1, -2).contiguous(), "V": v[0].contiguous()}
        results.append(attention_case("gqa_mirage", variant("gqa_mirage"), q, k, v, ours, 1.0,
                                      lambda o: o.reshape(1, 16, 32, 64)))
    for ctx in (4, 32):
        case = f"gqa_decode_{ctx}k"
        if case not in wanted:
            continue
        # Decode: batch 1, 32 query heads, 8 KV heads, d 128; the KV cache is [8, seq, 128].
        seq = ctx * 1024
        q = torch.randn(1, 32, 1, 128, dtype=torch.float16, device="cuda")
        k = torch.randn(1, 8, seq, 128, dtype=torch.float16, device="cuda")
        v = torch.randn(1, 8, seq, 128, dtype=torch.float16, device="cuda")
        ours = {"Q": q.reshape(8, 4, 128).contiguous(), "K": k[0].contiguous(),
                "V": v[0].contiguous()}
        results.append(attention_case(case, variant(case), q, k, v, ours, 1 / math.sqrt(128),
                                      lambda o: o.reshape(1, 32, 1, 128)))
    for n in (1024, 4096):
        case = f"gemm_{n}"
        if case in wanted:
            results.append(gemm_case(case, variant(case), n))

    print(f"device {device}; measured copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    print(f"{'case':16} {'impl':16} {'time us':>9} {'rel err':>9} {'metric':>18} {'vs best torch':>13}")
    for r in results:
        torch_times = [row["us"] for row in r["rows"] if row["impl"] != "mugraph" and row.get("us")]
        best = min(torch_times) if torch_times else None
        for row in r["rows"]:
            if row.get("us") is None:
                print(f"{r['case']:16} {row['impl']:16} {'-':>9} {'-':>9} {row.get('error', '')[:40]}")
                continue
            if r["kind"] == "attention":
                row["fraction_of_copy_bandwidth"] = r["bytes"] / (row["us"] * 1e-6) / bandwidth
                metric = f"{100 * row['fraction_of_copy_bandwidth']:.1f}% of copy BW"
            else:
                row["tflops"] = r["flops"] / (row["us"] * 1e-6) / 1e12
                metric = f"{row['tflops']:.1f} TFLOP/s"
            row["ratio_to_best_torch"] = best / row["us"] if best else None
            ratio = f"{row['ratio_to_best_torch']:.2f}x" if best else "-"
            print(f"{r['case']:16} {row['impl']:16} {row['us']:9.1f} {row['rel_error']:9.2e} "
                  f"{metric:>18} {ratio:>13}")
    with open(args.out, "w") as f:
        json.dump({"device": device, "copy_bandwidth_bytes_per_s": bandwidth,
                   "torch": torch.__version__, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
