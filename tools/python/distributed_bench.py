"""Wall time of `mugraph superoptimize` over MPI ranks on one host, against one process.

    python3 tools/python/distributed_bench.py --program gqa --search-args="--max-kernels 2" \
        --ranks 1,2,4 --out docs/measurements/distributed_search_2core.json

Runs, in turn: one process with --threads 1, one process with every core (--threads
$(nproc)), then `mpirun -np N ... --threads 1` for each N of --ranks (oversubscribed where N
exceeds the cores). Every run writes its variants; a digest of their files (all but summary.json) is
compared with the first run's, so the table also shows the outputs are identical (with a
--time-limit they need not be: each run finishes the subtrees it reaches in time).
Prints a table; the JSON holds each run's wall time and its summary's "work" and "ranks"
(docs/distributed_search.md models larger machines from them).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def outputs_digest(out_dir):
    """One SHA-256 over every written file but summary.json, with its path."""
    files = {}
    for root, _, names in os.walk(out_dir):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, out_dir)
            if rel == "summary.json":
                continue
            with open(path, "rb") as f:
                files[rel] = hashlib.sha256(f.read()).hexdigest()
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def run(binary, program, search_args, threads, ranks, out_dir):
    command = [binary, "superoptimize", program, "--threads", str(threads), "--json",
               "--out", out_dir] + search_args
    if ranks > 0:
        command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--allow-run-as-root",
                   "--bind-to", "none"] + command
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit("failed: " + " ".join(command) + "\n" + done.stderr)
    summary = json.loads(done.stdout)
    return {"command": " ".join(command), "ranks": max(ranks, 1), "threads_per_rank": threads,
            "wall_seconds": wall, "search_seconds": summary["seconds"], "work": summary["work"],
            "rank_work": summary["ranks"], "variants": [v["name"] for v in summary["variants"]],
            "states": summary["states"], "subtrees_completed": summary["subtrees_completed"],
            "subtrees": summary["subtrees"], "outputs_sha256": outputs_digest(out_dir)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/bin/mugraph")
    parser.add_argument("--program", default="gqa")
    parser.add_argument("--search-args", default="", help="more flags for superoptimize")
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cores = os.cpu_count()
    search_args = args.search_args.split()
    configs = [("1 process, 1 thread", 1, 0), (f"1 process, {cores} threads", cores, 0)]
    configs += [(f"mpirun -np {n}, 1 thread each", 1, n) for n in map(int, args.ranks.split(","))]
    scratch = tempfile.mkdtemp(prefix="mugraph_distributed_bench_")
    runs = []
    try:
        for i, (label, threads, ranks) in enumerate(configs):
            result = run(args.binary, args.program, search_args, threads, ranks,
                         os.path.join(scratch, str(i)))
            result["config"] = label
            result["identical_to_first"] = (
                result["outputs_sha256"] == runs[0]["outputs_sha256"] if runs else True)
            runs.append(result)
            print(f"{label:32s} {result['wall_seconds']:8.1f} s", file=sys.stderr)
    finally:
        shutil.rmtree(scratch)
    print(f"{'configuration':32s} {'wall s':>8s} {'speedup':>8s} {'enum s':>8s} {'states':>9s}"
          f" {'subtrees':>11s} {'verify s':>9s} {'merge s':>8s}  identical")
    for r in runs:
        w = r["work"]
        print(f"{r['config']:32s} {r['wall_seconds']:8.1f} "
              f"{runs[0]['wall_seconds'] / r['wall_seconds']:8.2f} "
              f"{w['enumeration_seconds']:8.1f} {r['states']:9d} "
              f"{r['subtrees_completed']:5d}/{r['subtrees']:<5d} {w['verification_seconds']:9.1f} "
              f"{w['merge_seconds']:8.2f}  {'yes' if r['identical_to_first'] else 'NO'}")
    with open(args.out, "w") as f:
        json.dump({"host": os.uname().nodename, "cores": cores, "program": args.program,
                   "search_args": args.search_args, "runs": runs}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
