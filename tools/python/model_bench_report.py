"""A table and a plot of model_bench.py results: end-to-end times of each case (eager,
torch.compile, mugraph) and, for the mugraph row, every subgraph with PyTorch's time and ours
and which one runs.

    python3 tools/python/model_bench_report.py A.json [B.json ...] --out docs/measurements/model_bench

Writes OUT.md (the tables) and, where matplotlib imports, OUT.png (per case: the end-to-end
bars, then each subgraph's two times). No GPU needed.
"""
import argparse
import json


def load(paths):
    cases = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for result in data["results"]:
            cases.append({"source": path, "device": data["device"], "torch": data["torch"],
                          "transformers": data.get("transformers"), **result})
    return cases


def _mugraph_row(case):
    return next((r for r in case["rows"] if r["impl"] == "mugraph"), None)


def subgraph_rows(case):
    row = _mugraph_row(case)
    if not row or not row.get("report"):
        return []
    return [s for graph in row["report"] for s in graph["subgraphs"]]


def markdown(cases):
    lines = []
    for case in cases:
        lines.append(f"## {case['model']}, {case['case']} ({case['device']}, torch "
                     f"{case['torch']}, transformers {case['transformers']})\n")
        lines.append("| implementation | time (µs) | vs torch.compile | max rel. error |")
        lines.append("|---|---|---|---|")
        for r in case["rows"]:
            us = f"{r['us']:.1f}" if r.get("us") else f"error: {r.get('error')}"
            ratio = f"{r['speedup_vs_compile']:.2f}x" if r.get("speedup_vs_compile") else "-"
            error = f"{r['rel_error']:.1e}" if r.get("rel_error") is not None else "-"
            lines.append(f"| {r['impl']} | {us} | {ratio} | {error} |")
        row = _mugraph_row(case)
        for graph in (row or {}).get("report") or []:
            whole = graph.get("graph") or {}
            if whole:
                lines.append(f"\nThe rest ran in {whole.get('rest')}; the graph ran "
                             f"{'with' if whole.get('runs') == 'mugraph' else 'without'} our "
                             "kernels" + (f" (whole graph {whole['pytorch_us']:.1f} µs without, "
                                          f"{whole['ours_us']:.1f} µs with)"
                                          if whole.get("ours_us") else "") + ".")
        if row and row.get("cached_compile_s") is not None:
            phases = row.get("cached_compile_phases_s") or {}
            lines.append(f"\nCompile {row['compile_s']:.0f} s; a second compile "
                         f"{row['cached_compile_s']:.1f} s" +
                         (" (" + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()) + ")"
                          if phases else "") + ".")
        subgraphs = subgraph_rows(case)
        if subgraphs:
            lines.append("\n| subgraph | nodes | PyTorch (µs) | ours (µs) | runs | why |")
            lines.append("|---|---|---|---|---|---|")
            for s in subgraphs:
                theirs = f"{s['pytorch_us']:.1f}" if s.get("pytorch_us") else "-"
                ours = f"{s['ours_us']:.1f}" if s.get("ours_us") else "-"
                runs = "ours" if s["status"] == "used" else "PyTorch"
                lines.append(f"| {s['name']} | {s['nodes']} | {theirs} | {ours} | {runs} | "
                             f"{s.get('reason', '') if runs == 'PyTorch' else ''} |")
        lines.append("")
    return "\n".join(lines)


def plot(cases, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(cases), 2, figsize=(13, 3.2 * len(cases)), squeeze=False)
    for (left, right), case in zip(axes, cases):
        timed = [r for r in case["rows"] if r.get("us")]
        left.barh([r["impl"] for r in timed], [r["us"] for r in timed],
                  color=["tab:gray" if r["impl"] == "eager" else
                         "tab:blue" if r["impl"] != "mugraph" else "tab:green" for r in timed])
        left.set_xlabel("end-to-end µs (CUDA graph, median)")
        left.set_title(f"{case['model']}, {case['case']}")
        subgraphs = [s for s in subgraph_rows(case) if s.get("pytorch_us") and s.get("ours_us")]
        names = [s["name"] for s in subgraphs]
        ys = range(len(subgraphs))
        right.barh([y - 0.2 for y in ys], [s["pytorch_us"] for s in subgraphs], height=0.4,
                   label="PyTorch", color="tab:blue")
        right.barh([y + 0.2 for y in ys], [s["ours_us"] for s in subgraphs], height=0.4,
                   label="ours", color="tab:green")
        for y, s in zip(ys, subgraphs):
            right.text(max(s["pytorch_us"], s["ours_us"]), y,
                       " ours runs" if s["status"] == "used" else " PyTorch runs",
                       va="center", fontsize=8)
        right.set_yticks(list(ys), names, fontsize=8)
        right.set_xlabel("subgraph µs (CUDA graph, median)")
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--out", required=True, help="path without extension")
    args = parser.parse_args()
    cases = load(args.results)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(cases))
    try:
        plot(cases, args.out + ".png")
    except ImportError:
        print("note: matplotlib does not import here; no plot")


if __name__ == "__main__":
    main()
