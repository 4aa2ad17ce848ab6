"""Issue 28's dynamic programs on a GPU: one dispatch over the lengths of a dim (dispatch.json,
the variants of `mugraph superoptimize P.mg` of a program with `dim NAME in [...]`) launched at
several lengths, against the static search's variants for each length and PyTorch's best, in
one run, timed as gpu_bench.py times everything (CUDA-graph replays, triton do_bench medians,
L2 flushed), on fresh normal inputs.

    python3 tools/python/dynamic_bench.py --dispatch DIR --static DIR --lengths 1,16,100,512,4096 \\
        --k 4096 --n 4096 --out dynamic_gemm.json
    python3 tools/python/dynamic_bench.py --kind decode --dispatch DIR --static DIR \\
        --lengths 1,100,1000,4096,65536 --out dynamic_decode.json
    python3 tools/python/dynamic_bench.py --kind prefill --dispatch DIR --static DIR \
        --lengths 100,1000,2048,5000 --out dynamic_prefill.json

DIR of --dispatch: the dynamic program's superoptimize folder. DIR of --static: one
superoptimize folder per length, named <dim><N> (scripts/dynamic_bench_search.sh writes both).
Per length the rows are: "dispatch" (the bucket's variant), every other variant of the dispatch
("bucket <min>-<max>"), with --every-variant the folder's other variants ("variant.r<rank>"),
the static search's variants in rank order ("static.r<i>") and PyTorch:
- gemm: C = A·B with A [m, k] and B stored [n, k] (layout=transposed, as nn.Linear keeps its
  weight), against torch.matmul (cuBLAS);
- decode: GQA decode, 32 query heads over 8 KV heads, d 128, a KV cache of s positions
  (tools/bench/dynamic_programs/gqa_decode_dynamic_65536.mg), against every SDPA backend (cuDNN
  among them), each of ours also checked finite and accurate at logit std 1, 4, 8 and 16;
- prefill: causal attention prefill, --heads heads (16) of --head-dim (128), s query tokens
  over their own s keys (tools/bench/dynamic_programs/mha_prefill_causal_dynamic.mg), against
  every SDPA backend with is_causal, checked at the same logit spreads.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench  # noqa: E402
from mugraph_launch import Dispatch, Variant, dispatch_bucket, relative_error  # noqa: E402


def ranked_variants(folder):
    """The variant folders of a superoptimize output, in its summary's rank order."""
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    return [os.path.join(folder, v["name"]) for v in summary["variants"]
            if os.path.exists(os.path.join(folder, v["name"], "manifest.json"))]


def timed(label, run, out, ref):
    try:
        run()
        torch.cuda.synchronize()
        return {"impl": label, "us": gpu_bench.median_us(run),
                "rel_error": relative_error(out.float(), ref)}
    except Exception as e:  # a variant that cannot run here: its row says why
        return {"impl": label, "us": None, "error": gpu_bench.short_error(e)}


def static_folders(static, dim, n):
    folder = os.path.join(static, f"{dim}{n}")
    return ranked_variants(folder) if os.path.isdir(folder) else []


def gemm_rows(args, dispatch, variants, m):
    dims = {dispatch.spec["dim"]: m}
    a = torch.randn(m, args.k, dtype=torch.float16, device="cuda")
    w = torch.randn(args.n, args.k, dtype=torch.float16, device="cuda") * gpu_bench.WEIGHT_STD
    ref = (a.double() @ w.double().t()).float()
    rows = []
    c = dispatch.empty("C", dims)
    inputs = {"A": a, "B": w, "C": c}
    rows.append(timed("dispatch", lambda: dispatch.launch(inputs, dims), c, ref))
    rows[-1]["variant"] = dispatch_bucket(dispatch.spec, dims)["variant"]
    for b in dispatch.spec["buckets"]:
        if b["variant"] == rows[0]["variant"]:
            continue
        v = variants[b["variant"]]
        out = v.empty("C", dims)
        rows.append(timed(f"bucket {b['min']}-{b['max']}",
                          lambda v=v, out=out: v.launch({"A": a, "B": w, "C": out}, dims),
                          out, ref))
        rows[-1]["variant"] = b["variant"]
    for i, folder in enumerate(static_folders(args.static, dispatch.spec["dim"], m)):
        v = Variant(folder)
        out = v.empty("C")
        rows.append(timed(f"static.r{i + 1}", lambda v=v, out=out: v.launch(
            {"A": a, "B": w, "C": out}), out, ref))
        rows[-1]["variant"] = os.path.basename(folder)
    rows.append(gpu_bench.timed_row("torch.matmul", lambda: torch.matmul(a, w.t()), ref))
    return {"m": m, "k": args.k, "n": args.n, "rows": rows}, "torch.matmul"


def decode_rows(args, dispatch, variants, s):
    return attention_rows(args, dispatch, s, lambda labelled: gpu_bench.decode_case(
        s, f"decode {dispatch.spec['dim']}={s}", labelled, None))


def prefill_rows(args, dispatch, variants, s):
    return attention_rows(args, dispatch, s, lambda labelled: gpu_bench.prefill_case(
        s, f"causal prefill {dispatch.spec['dim']}={s}", labelled, None, heads=args.heads,
        d=args.head_dim, causal=True))


def attention_rows(args, dispatch, s, case):
    """The dispatch's variant at s, the other buckets' and the static search's, then every SDPA
    backend: `case(labelled variants)` runs gpu_bench's attention case."""
    dim = dispatch.spec["dim"]
    dims = {dim: s}
    chosen = dispatch_bucket(dispatch.spec, dims)["variant"]
    labelled = {"dispatch": Variant(os.path.join(args.dispatch, chosen), dims)}
    names = {"dispatch": chosen}
    for b in dispatch.spec["buckets"]:
        if b["variant"] != chosen:
            label = f"bucket {b['min']}-{b['max']}"
            labelled[label] = Variant(os.path.join(args.dispatch, b["variant"]), dims)
            names[label] = b["variant"]
    if args.every_variant:  # the dispatch folder's other variants too, in rank order
        for i, folder in enumerate(ranked_variants(args.dispatch)):
            name = os.path.basename(folder)
            if name not in names.values():
                labelled[f"variant.r{i + 1}"] = Variant(folder, dims)
                names[f"variant.r{i + 1}"] = name
    for i, folder in enumerate(static_folders(args.static, dim, s)):
        labelled[f"static.r{i + 1}"] = Variant(folder)
        names[f"static.r{i + 1}"] = os.path.basename(folder)
    result = case(labelled)
    for row in result["rows"]:
        if row["impl"] in names:
            row["variant"] = names[row["impl"]]
        checks = row.get("spread_checks", [])
        row["finite_at_every_spread"] = all(c["finite"] for c in checks) if checks else None
    sdpa = [r for r in result["rows"] if r["impl"].startswith("sdpa_") and r.get("us")]
    best = min(sdpa, key=lambda r: r["us"])["impl"] if sdpa else None
    return result, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["gemm", "decode", "prefill"], default="gemm")
    parser.add_argument("--dispatch", required=True)
    parser.add_argument("--static", required=True)
    parser.add_argument("--lengths", default="1,16,100,512,4096")
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=16, help="prefill: attention heads")
    parser.add_argument("--head-dim", type=int, default=128, help="prefill: head dim")
    parser.add_argument("--every-variant", action="store_true",
                        help="decode, prefill: also time every variant of --dispatch that no "
                             "bucket chose (rows variant.r<rank>)")
    parser.add_argument("--out", default="dynamic_gemm.json")
    args = parser.parse_args()
    device = torch.cuda.get_device_name()
    bandwidth = gpu_bench.copy_bandwidth()
    print(f"device {device}; measured copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    dispatch = Dispatch(args.dispatch)
    buckets = dispatch.spec["buckets"]
    variants = {}
    for b in buckets:  # loaded once, each at the lengths given to its launches
        variants.setdefault(b["variant"], Variant(os.path.join(args.dispatch, b["variant"])))
    results = []
    rows_of = {"gemm": gemm_rows, "decode": decode_rows, "prefill": prefill_rows}[args.kind]
    dim = dispatch.spec["dim"]
    for n in (int(x) for x in args.lengths.split(",")):
        result, reference = rows_of(args, dispatch, variants, n)
        rows = result["rows"]
        ref_us = next((r["us"] for r in rows if r["impl"] == reference), None)
        cudnn_us = next((r["us"] for r in rows if r["impl"] == "sdpa_cudnn" and r.get("us")), None)
        fastest_static = min((r["us"] for r in rows if r["impl"].startswith("static")
                              and r.get("us")), default=None)
        for r in rows:
            if r.get("us"):
                r["vs_pytorch_best"] = ref_us / r["us"] if ref_us else None
                r["vs_best_static"] = fastest_static / r["us"] if fastest_static else None
                if cudnn_us:
                    r["vs_cudnn"] = cudnn_us / r["us"]
            us = f"{r['us']:.1f}" if r.get("us") else r.get("error", "-")
            extra = (f"  {r['vs_pytorch_best']:.2f}x {reference}"
                     if r.get("vs_pytorch_best") else "") + \
                (f"  {r['vs_best_static']:.2f}x best static" if r.get("vs_best_static") else "") + \
                (f"  {r['vs_cudnn']:.2f}x cuDNN" if r.get("vs_cudnn") else "")
            print(f"{dim}={n:<6} {r['impl']:16s} {us:>10}  err {r.get('rel_error', float('nan')):.1e}"
                  f"{extra}  {r.get('variant', '')}")
        result["length"] = n
        result["pytorch_best"] = reference
        results.append(result)
    with open(args.out + ".tmp", "w") as f:
        json.dump({"device": device, "copy_bandwidth_bytes_per_s": bandwidth,
                   "torch": torch.__version__, "dispatch": dispatch.spec,
                   "results": results}, f, indent=2)
    os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
