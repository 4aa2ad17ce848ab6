"""Per class of a dataset, the spread of measured speeds by source (mugraph, triton, cutlass,
...): a Markdown table, JSON and a PNG plot, from the rows that `mugraph dataset check DIR
--run --record` timed (each row's gpu.timing.median_us: CUDA-graph replays, the same for
every member).

    python3 tools/python/dataset_report.py DIR --out docs/measurements/dataset_issue29_h100

writes OUT.md, OUT.json ({"device", "torch", "copy_bandwidth_bytes_per_s", "classes"}: the
last two measured here where PyTorch and a GPU are, as gpu_bench.py does) and OUT.png (the plot needs matplotlib; the table does not). External
members kept out of their class (failed on the GPU) are listed with their reason, not timed.
"""
import argparse
import json
import os
import statistics
import sys


def source_of(row):
    return row["source"]["compiler"] if row.get("member") == "external" else "mugraph"


def summarize(dataset):
    with open(os.path.join(dataset, "manifest.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    classes = {}
    for row in rows:
        cls = classes.setdefault(row["class"], {"program": row["program"], "sources": {},
                                                "excluded": [], "unchecked": 0})
        verification = row.get("verification", {})
        if verification.get("status") == "failed":
            cls["excluded"].append({"variant": row["variant"], "reason": verification.get("reason")})
            continue
        median = row.get("gpu", {}).get("timing", {}).get("median_us")
        if not median:
            cls["unchecked"] += 1
            continue
        entry = {"variant": row["variant"], "us": median,
                 "evidence": verification.get("level"),
                 "worst_error": verification.get("worst_error",
                                                 row.get("gpu", {}).get("max_rel_error"))}
        cls["sources"].setdefault(source_of(row), []).append(entry)
    for cls in classes.values():
        fastest = min((m["us"] for ms in cls["sources"].values() for m in ms), default=None)
        cls["fastest_us"] = fastest
        for members in cls["sources"].values():
            members.sort(key=lambda m: m["us"])
    return classes


def table(classes, device):
    lines = [f"# Dataset classes by source{f' on {device}' if device else ''}", "",
             "Median latency (µs) over CUDA-graph replays, per member; per class and source the "
             "fastest, median and slowest member, and the fastest's slowdown against the "
             "class's fastest member of any source.", "",
             "| class | source | members | fastest µs | median µs | slowest µs | vs class best |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name in sorted(classes):
        cls = classes[name]
        for source in sorted(cls["sources"]):
            us = [m["us"] for m in cls["sources"][source]]
            lines.append(f"| {cls['program']} | {source} | {len(us)} | {min(us):.2f} | "
                         f"{statistics.median(us):.2f} | {max(us):.2f} | "
                         f"{min(us) / cls['fastest_us']:.2f}× |")
        for ex in cls["excluded"]:
            lines.append(f"| {cls['program']} | kept out: {ex['variant']} | | | | | "
                         f"{ex['reason']} |")
        if cls["unchecked"]:
            lines.append(f"| {cls['program']} | not timed | {cls['unchecked']} | | | | |")
    return "\n".join(lines) + "\n"


def plot(classes, path):
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    names = sorted(classes, key=lambda n: classes[n]["program"])
    sources = sorted({s for c in classes.values() for s in c["sources"]})
    markers = dict(zip(sources, "os^Dvx*"))
    colors = dict(zip(sources, ["C0", "C1", "C2", "C3", "C4", "C5", "C6"]))
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(names)), 5))
    width = 0.8 / max(1, len(sources))
    for i, name in enumerate(names):
        cls = classes[name]
        for j, source in enumerate(sources):
            xs, ys = [], []
            for m in cls["sources"].get(source, []):
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(m["us"] / cls["fastest_us"])
            labelled = any(source in classes[n]["sources"] for n in names[:i])
            ax.scatter(xs, ys, marker=markers[source], color=colors[source],
                       label=None if labelled or not xs else source)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([classes[n]["program"] for n in names], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("latency / fastest member of the class")
    ax.axhline(1.0, color="grey", linewidth=0.5)
    ax.legend()
    ax.set_title("Spread of speeds per class, by source")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--out", required=True, help="path prefix of OUT.md, OUT.json, OUT.png")
    parser.add_argument("--device", default="", help="named in the table's title")
    args = parser.parse_args()
    classes = summarize(args.dataset)
    run = {"device": args.device, "torch": None, "copy_bandwidth_bytes_per_s": None}
    try:
        import torch
        run["torch"] = torch.__version__
        if torch.cuda.is_available():
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import gpu_bench
            run["copy_bandwidth_bytes_per_s"] = gpu_bench.copy_bandwidth()
    except ImportError as e:
        print(f"no copy bandwidth in the report: {e}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".md", "w") as f:
        f.write(table(classes, args.device))
    with open(args.out + ".json", "w") as f:
        json.dump({**run, "classes": classes}, f, indent=1)
    try:
        plot(classes, args.out + ".png")
    except ImportError:
        print("matplotlib is not installed: no plot")
    print(open(args.out + ".md").read())


if __name__ == "__main__":
    main()
