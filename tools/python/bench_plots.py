"""Bandwidth plots of a gpu_bench.py result.

    python3 tools/python/bench_plots.py bench_gpu.json --out-dir plots/

Writes, from the memory-bound cases of the JSON:

- decode_bandwidth.png: achieved bandwidth (TB/s) of GQA decode against the context, one line
  per implementation (ours: the fastest of our variants at each context);
- matmul_bandwidth.png: the same against the batch M of the matmul_m* cases (ours,
  torch.matmul, torch.compile).

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


if __name__ == "__main__":
    main()
