"""Issue 28's dynamic-length GEMM on a GPU: one dispatch over the lengths of m (dispatch.json,
the variants of `mugraph superoptimize P.mg` of a program with `dim m in [...]`) launched at
several m, against the static search's variants for each m and torch.matmul (cuBLAS), in one
run, timed as gpu_bench.py times everything (CUDA-graph replays, triton do_bench medians, L2
flushed), on fresh normal inputs.

    python3 tools/python/dynamic_bench.py --dispatch DIR --static DIR --lengths 1,16,100,512,4096 \\
        --k 4096 --n 4096 --out dynamic_gemm.json

DIR of --dispatch: the dynamic program's superoptimize folder. DIR of --static: one
superoptimize folder per length, named m<M> (scripts/dynamic_bench_search.sh writes both). Per
length the rows are: "dispatch" (the bucket's variant), every other variant of the dispatch
("bucket <min>-<max>"), the static search's variants in rank order ("static.r<i>") and
torch.matmul. B is stored [n, k] (layout=transposed), as nn.Linear keeps its weight.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatch", required=True)
    parser.add_argument("--static", required=True)
    parser.add_argument("--lengths", default="1,16,100,512,4096")
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--out", default="dynamic_gemm.json")
    args = parser.parse_args()
    device = torch.cuda.get_device_name()
    bandwidth = gpu_bench.copy_bandwidth()
    print(f"device {device}; measured copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    dispatch = Dispatch(args.dispatch)
    buckets = dispatch.spec["buckets"]
    variants = {}
    for b in buckets:
        variants.setdefault(b["variant"], Variant(os.path.join(args.dispatch, b["variant"])))
    results = []
    for m in (int(x) for x in args.lengths.split(",")):
        dims = {dispatch.spec["dim"]: m}
        a = torch.randn(m, args.k, dtype=torch.float16, device="cuda")
        w = torch.randn(args.n, args.k, dtype=torch.float16, device="cuda") * gpu_bench.WEIGHT_STD
        ref = (a.double() @ w.double().t()).float()
        rows = []
        c = dispatch.empty("C", dims)
        inputs = {"A": a, "B": w, "C": c}
        rows.append(timed("dispatch", lambda: dispatch.launch(inputs, dims), c, ref))
        rows[-1]["variant"] = dispatch_bucket(dispatch.spec, dims)["variant"]
        for b in buckets:
            if b["variant"] == rows[0]["variant"]:
                continue
            v = variants[b["variant"]]
            out = v.empty("C", dims)
            rows.append(timed(f"bucket {b['min']}-{b['max']}",
                              lambda v=v, out=out: v.launch({"A": a, "B": w, "C": out}, dims),
                              out, ref))
            rows[-1]["variant"] = b["variant"]
        static = os.path.join(args.static, f"m{m}")
        for i, folder in enumerate(ranked_variants(static) if os.path.isdir(static) else []):
            v = Variant(folder)
            out = v.empty("C")
            rows.append(timed(f"static.r{i + 1}", lambda v=v, out=out: v.launch(
                {"A": a, "B": w, "C": out}), out, ref))
            rows[-1]["variant"] = os.path.basename(folder)
        rows.append(gpu_bench.timed_row("torch.matmul", lambda: torch.matmul(a, w.t()), ref))
        cublas = rows[-1]["us"]
        fastest_static = min((r["us"] for r in rows if r["impl"].startswith("static")
                              and r["us"]), default=None)
        for r in rows:
            if r.get("us"):
                r["vs_cublas"] = cublas / r["us"] if cublas else None
                r["vs_best_static"] = fastest_static / r["us"] if fastest_static else None
            label = r["impl"]
            us = f"{r['us']:.1f}" if r.get("us") else r.get("error", "-")
            extra = (f"  {r['vs_cublas']:.2f}x cuBLAS" if r.get("vs_cublas") else "") + \
                (f"  {r['vs_best_static']:.2f}x best static" if r.get("vs_best_static") else "")
            print(f"m={m:<6} {label:16s} {us:>10}  err {r.get('rel_error', float('nan')):.1e}"
                  f"{extra}  {r.get('variant', '')}")
        results.append({"m": m, "k": args.k, "n": args.n, "rows": rows})
    with open(args.out + ".tmp", "w") as f:
        json.dump({"device": device, "copy_bandwidth_bytes_per_s": bandwidth,
                   "torch": torch.__version__, "dispatch": dispatch.spec,
                   "results": results}, f, indent=2)
    os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
