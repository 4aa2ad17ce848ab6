"""Wall time of mugraph's commands over MPI ranks on one host, against one process.

    python3 tools/python/distributed_bench.py --kind program --program gqa \
        --search-args="--max-kernels 2" --ranks 1,2,4,8 --out docs/measurements/x.json
    python3 tools/python/distributed_bench.py --kind model \
        --program tests/onnx_import/models/decoder_block.onnx --search-args="--max-kernels 2" \
        --spreads items,searches --ranks 1,2,4,8 --out docs/measurements/y.json
    python3 tools/python/distributed_bench.py --kind dataset \
        --program "tools/bench/dataset_programs/*.mg" --search-args="--max-variants 4" \
        --spreads items,searches --ranks 1,2,4,8 --out docs/measurements/z.json

--kind program runs `mugraph superoptimize PROGRAM`, model `mugraph superoptimize MODEL.onnx`,
dataset `mugraph dataset PROGRAMS...` (a glob). Runs, in turn: one process with --threads 1,
one process with every core (--threads $(nproc)), then `mpirun -np N ... --threads 1` for each N
of --ranks (oversubscribed where N exceeds the cores) and, for a model or a dataset, each
--spread of --spreads (items: whole subgraphs or programs dealt to the ranks; searches: one
after another, each search over every rank). Every run writes its outputs; a digest of their
files (summary.json files left out: they hold times) is compared with the first run's, so the
table also shows the outputs are identical (with a --time-limit they need not be). The load
average before and after each run is recorded: on a shared machine it says how far to trust a
number; so is each run's CPU time, which over its wall time gives the cores it kept busy.
--warmup runs the first configuration once before the table, untimed. Without mpirun on PATH
(or with a binary built without MPI) the MPI rows are reported as not run, and the reason is
printed and stored in the JSON.
"""
import argparse
import glob
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time


def output_files(out_dir):
    """SHA-256 of every written file but summary.json files, by path."""
    files = {}
    for root, _, names in os.walk(out_dir):
        for name in names:
            if name == "summary.json":
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, out_dir)] = hashlib.sha256(f.read()).hexdigest()
    return files


def outputs_digest(files):
    """One SHA-256 over output_files' paths and digests."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def differing_paths(files, first):
    """The paths whose contents differ between two runs' output_files, or that one lacks."""
    return sorted(p for p in set(files) | set(first) if files.get(p) != first.get(p))


def command_for(args, programs, threads, ranks, spread, out_dir):
    if args.kind == "dataset":
        command = [args.binary, "dataset"] + programs + ["--out", out_dir]
    else:
        command = [args.binary, "superoptimize"] + programs + ["--json", "--out", out_dir]
    command += ["--threads", str(threads)] + args.search_args.split()
    if spread:
        command += ["--spread", spread]
    if ranks > 0:
        command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--allow-run-as-root",
                   "--bind-to", "none"] + command
    return command


def run(args, programs, threads, ranks, spread, out_dir):
    command = command_for(args, programs, threads, ranks, spread, out_dir)
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {"command": " ".join(command), "ranks": max(ranks, 1), "threads_per_rank": threads,
              "spread": spread, "wall_seconds": wall, "load_average_before": load_before,
              "load_average_after": os.getloadavg()[0], "exit_code": done.returncode,
              # CPU time of the command and every process it waited for (mpirun's ranks):
              # over the wall time, the cores it kept busy on average.
              "user_seconds": cpu_after.ru_utime - cpu_before.ru_utime,
              "system_seconds": cpu_after.ru_stime - cpu_before.ru_stime}
    if done.returncode not in (0, 1):
        result["error"] = done.stderr.strip().splitlines()[-3:]
        return result
    if args.kind == "dataset":
        with open(os.path.join(out_dir, "manifest.jsonl"), "rb") as f:
            result["manifest_sha256"] = hashlib.sha256(f.read()).hexdigest()
    else:
        summary = json.loads(done.stdout)
        for key in ("seconds", "ranks", "work", "states", "subtrees", "subtrees_completed"):
            if key in summary:
                result[key] = summary[key]
    result["output_files"] = output_files(out_dir)
    result["outputs_sha256"] = outputs_digest(result["output_files"])
    return result


def why_no_mpi(binary):
    """Why the MPI rows cannot run here, or None."""
    if shutil.which("mpirun") is None:
        return "mpirun is not on PATH (install openmpi-bin, and build with libopenmpi-dev)"
    probe = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root",
                            binary, "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        return "mpirun -np 2 mugraph --version failed: " + probe.stdout.strip()[-300:]
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/bin/mugraph")
    parser.add_argument("--kind", choices=["program", "model", "dataset"], default="program")
    parser.add_argument("--program", default="gqa",
                        help="built-in name or file; a model; for a dataset, a glob")
    parser.add_argument("--search-args", default="", help="more flags for the command")
    parser.add_argument("--ranks", default="1,2,4,8")
    parser.add_argument("--spreads", default="items",
                        help="for a model or a dataset: --spread values to run under mpirun")
    parser.add_argument("--warmup", action="store_true",
                        help="run the first configuration once before the table, untimed (the "
                             "first command on a fresh machine pays for loading it)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cores = os.cpu_count()
    programs = sorted(glob.glob(args.program)) if args.kind == "dataset" else [args.program]
    if not programs:
        sys.exit(f"no program matches {args.program}")
    spreads = args.spreads.split(",") if args.kind != "program" else [""]
    configs = [("1 process, 1 thread", 1, 0, ""), (f"1 process, {cores} threads", cores, 0, "")]
    no_mpi = why_no_mpi(args.binary)
    if no_mpi:
        print(f"distributed_bench: MPI rows not run: {no_mpi}", file=sys.stderr)
    else:
        for n in map(int, args.ranks.split(",")):
            for spread in spreads:
                label = f"mpirun -np {n}" + (f", --spread {spread}" if spread else "")
                configs.append((label, 1, n, spread))
    scratch = tempfile.mkdtemp(prefix="mugraph_distributed_bench_")
    runs = []
    warmup = None
    try:
        if args.warmup:
            warmup = run(args, programs, 1, 0, "", os.path.join(scratch, "warmup"))
            warmup.pop("output_files", None)
            print(f"warm-up: {warmup['wall_seconds']:.1f} s", file=sys.stderr)
        for i, (label, threads, ranks, spread) in enumerate(configs):
            result = run(args, programs, threads, ranks, spread, os.path.join(scratch, str(i)))
            result["config"] = label
            result["identical_to_first"] = (
                runs and "outputs_sha256" in result and
                result["outputs_sha256"] == runs[0].get("outputs_sha256")) or not runs
            if not result["identical_to_first"] and "output_files" in result:
                # Which files differ, so a run that is not identical says where.
                result["differs_from_first"] = differing_paths(
                    result["output_files"], runs[0].get("output_files", {}))
            runs.append(result)
            print(f"{label:34s} {result['wall_seconds']:8.1f} s  load "
                  f"{result['load_average_before']:.1f}", file=sys.stderr)
    finally:
        shutil.rmtree(scratch)
    print(f"{'configuration':34s} {'wall s':>8s} {'speedup':>8s} {'cores':>5s} {'load':>5s}"
          "  identical")
    for r in runs:
        busy = (r["user_seconds"] + r["system_seconds"]) / r["wall_seconds"]
        print(f"{r['config']:34s} {r['wall_seconds']:8.1f} "
              f"{runs[0]['wall_seconds'] / r['wall_seconds']:8.2f} {busy:5.1f} "
              f"{r['load_average_before']:5.1f}  "
              f"{'error' if 'error' in r else 'yes' if r['identical_to_first'] else 'NO'}")
        if r.get("differs_from_first"):
            shown = r["differs_from_first"]
            print(f"    differs in {len(shown)} file(s): {', '.join(shown[:6])}"
                  f"{' ...' if len(shown) > 6 else ''}")
    if no_mpi:
        print(f"MPI rows not run: {no_mpi}")
    for r in runs:  # the digest stands for the files; their list would make the JSON large
        if "output_files" in r:
            r["output_file_count"] = len(r.pop("output_files"))
    with open(args.out, "w") as f:
        json.dump({"host": os.uname().nodename, "cores": cores, "kind": args.kind,
                   "program": args.program, "search_args": args.search_args,
                   "mpi": no_mpi or "mpirun found", "warmup": warmup, "runs": runs}, f,
                  indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
