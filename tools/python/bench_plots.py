"""Bandwidth plots of a gpu_bench.py result.

    python3 tools/python/bench_plots.py bench_gpu.json --out-dir plots/

Writes, from the memory-bound cases of the JSON:

- decode_bandwidth.png: achieved bandwidth (TB/s) of GQA decode against the context, one line
  per implementation (ours: the fastest of our variants at each context);
- matmul_bandwidth.png: the same against the batch M of the matmul_m* cases (ours,
  torch.matmul, torch.compile).

- gemm_sweep.png: TFLOP/s of issue 27's GEMM sweep (tools/python/gemm_sweep.py), ours
  against torch.matmul (cuBLAS): square GEMMs against n, and the projections against the
  tokens m, one panel per family and dtype, with each point's ratio in a table
  (gemm_sweep.md).

Achieved bandwidth is the case's minimal bytes (inputs read once, outputs written once) over
the measured time; a dashed line marks the copy bandwidth measured in the same run, the most a
kernel that reads and writes memory once can reach. Needs matplotlib (no GPU).
"""
import argparse
import json
import os
import sys

OURS = "mugraph (best variant)"


def achieved_tb_per_s(case, row):
    return case["bytes"] / (row["us"] * 1e-6) / 1e12


def series(cases, x_of):
    """impl -> sorted [(x, TB/s)] over `cases`: one point per case for each PyTorch impl that
    ran, and for ours the fastest of our variants."""
    lines = {}
    for case in cases:
        timed = [row for row in case["rows"] if row.get("us")]
        ours = [row for row in timed if row["impl"].startswith("mugraph")]
        best = [min(ours, key=lambda row: row["us"])] if ours else []
        for label, row in [(OURS, r) for r in best] + \
                [(r["impl"], r) for r in timed if not r["impl"].startswith("mugraph")]:
            lines.setdefault(label, []).append((x_of(case), achieved_tb_per_s(case, row)))
    return {label: sorted(points) for label, points in lines.items()}


def plot(pyplot, lines, copy_tb_per_s, title, xlabel, xticks, path):
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    # Ours first so it keeps the first colour in every plot.
    for label in sorted(lines, key=lambda label: (label != OURS, label)):
        xs, ys = zip(*lines[label])
        axes.plot(xs, ys, marker="o", linewidth=2.5 if label == OURS else 1.5, label=label)
    axes.axhline(copy_tb_per_s, color="gray", linestyle="--",
                 label=f"copy bandwidth ({copy_tb_per_s:.2f} TB/s)")
    axes.set_xscale("log", base=2)
    axes.set_xticks([x for x, _ in xticks])
    axes.set_xticklabels([text for _, text in xticks])
    axes.minorticks_off()
    axes.set_ylim(bottom=0)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("achieved bandwidth (TB/s)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
    print(f"{path}: written")


def tflops(case, row):
    return case["flops"] / (row["us"] * 1e-6) / 1e12


def sweep_plot(pyplot, cases, subtitle, out_dir):
    """gemm_sweep.png and gemm_sweep.md from the gemm_sweep cases."""
    panels = {}  # (family, dtype) -> cases
    for c in cases:
        family = "projection" if c["b_transposed"] else "square"
        panels.setdefault((family, c["dtype"]), []).append(c)
    keys = sorted(panels)
    figure, axes = pyplot.subplots(len(keys), 1, figsize=(7, 3.6 * len(keys)), squeeze=False)
    lines = ["| case | ours (TFLOP/s) | torch.matmul (TFLOP/s) | ratio |", "|---|---|---|---|"]
    ratios = []
    for axis, key in zip(axes[:, 0], keys):
        family, dtype = key
        groups = {}  # line label -> [(x, TFLOP/s)]
        for c in sorted(panels[key], key=lambda c: (c["k"], c["n"], c["m"])):
            timed = [r for r in c["rows"] if r.get("us")]
            ours = [r for r in timed if r["impl"].startswith("mugraph")]
            cublas = next((r for r in timed if r["impl"] == "torch.matmul"), None)
            shape = "" if family == "square" else f" [{c['k']}x{c['n']}]"
            x = c["n"] if family == "square" else c["m"]
            best = min(ours, key=lambda r: r["us"]) if ours else None
            if best:
                groups.setdefault("ours" + shape, []).append((x, tflops(c, best)))
            if cublas:
                groups.setdefault("cuBLAS" + shape, []).append((x, tflops(c, cublas)))
            if best and cublas:
                ratio = cublas["us"] / best["us"]
                ratios.append(ratio)
                lines.append(f"| {c['case']} | {tflops(c, best):.1f} | {tflops(c, cublas):.1f} | "
                             f"{ratio:.2f}x |")
        for label, points in sorted(groups.items()):
            xs, ys = zip(*sorted(points))
            axis.plot(xs, ys, marker="o", linestyle="-" if label.startswith("ours") else "--",
                      label=label)
        axis.set_xscale("log", base=2)
        axis.set_ylim(bottom=0)
        axis.set_xlabel("n (C = A·B, all n)" if family == "square" else "tokens m (Y = X·Wᵀ)")
        axis.set_ylabel("TFLOP/s")
        axis.set_title(f"{family} GEMMs, {dtype}\n{subtitle}")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize="x-small")
    figure.tight_layout()
    path = os.path.join(out_dir, "gemm_sweep.png")
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    if ratios:
        ordered = sorted(ratios)
        lines.append(f"\n{len(ratios)} points: lowest {ordered[0]:.2f}x, median "
                     f"{ordered[len(ordered) // 2]:.2f}x of cuBLAS.")
    with open(os.path.join(out_dir, "gemm_sweep.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: written")


def context_text(context):
    return f"{context // 1024}K" if context % 1024 == 0 else str(context)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_json", help="gpu_bench.py's output")
    parser.add_argument("--out-dir", default=".")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        from matplotlib import pyplot
    except ImportError:
        sys.exit("bench_plots.py needs matplotlib (pip install matplotlib)")
    try:
        with open(args.bench_json) as f:
            bench = json.load(f)
        results = bench["results"]
        copy_tb_per_s = bench["copy_bandwidth_bytes_per_s"] / 1e12
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"{args.bench_json}: not a gpu_bench.py result ({e})")
    os.makedirs(args.out_dir, exist_ok=True)
    subtitle = f"{bench.get('device', '?')}, torch {bench.get('torch', '?')}"

    decode = [c for c in results if "context" in c and "bytes" in c]
    if decode:
        contexts = sorted(c["context"] for c in decode)
        plot(pyplot, series(decode, lambda c: c["context"]), copy_tb_per_s,
             f"GQA decode (32 query / 8 KV heads, d 128)\n{subtitle}", "context (positions)",
             [(c, context_text(c)) for c in contexts],
             os.path.join(args.out_dir, "decode_bandwidth.png"))
    else:
        print("note: no decode cases in the result; decode_bandwidth.png not drawn")

    matmul = [c for c in results if c.get("kind") == "matmul" and "bytes" in c]
    if matmul:
        batches = sorted(c["m"] for c in matmul)
        plot(pyplot, series(matmul, lambda c: c["m"]), copy_tb_per_s,
             f"Y = X·W, W [{matmul[0]['k']}, {matmul[0]['n']}] f16\n{subtitle}",
             "batch M (rows of X)",
             [(m, str(m)) for m in batches], os.path.join(args.out_dir, "matmul_bandwidth.png"))
    else:
        print("note: no matmul_m* cases in the result; matmul_bandwidth.png not drawn")

    sweep = [c for c in results if c.get("kind") == "gemm_sweep"]
    if sweep:
        sweep_plot(pyplot, sweep, subtitle, args.out_dir)


if __name__ == "__main__":
    main()
