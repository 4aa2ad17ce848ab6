#!/usr/bin/env python3
"""Adds `mugraph superoptimize --profile` runs to cost-calibration data (the "format":
"mugraph.cost_calibration" file `mugraph calibrate` reads): each run folder becomes one
program, its variants with their schedules and measured times.

    python3 tools/python/calibration_from_runs.py DATA RUN_DIR... [--note TEXT]
    python3 tools/python/calibration_from_runs.py DATA RUN_DIR... --bench BENCH_JSON
    python3 tools/python/calibration_from_runs.py DATA --model-bench MODEL_BENCH_JSON CACHE_DIR

With --model-bench, the programs are a model's subgraphs: every subgraph the torch backend timed
two or more variants of in a `model_bench.py` run (its report's `variants_us`: CUDA-graph
replays on the subgraph's recorded values, medians, no L2 flush), each variant's schedule found
in the kernel cache the run used (CACHE_DIR, $MUGRAPH_CACHE_DIR there). A subgraph whose variants
were all timed before (a model's next layer) is taken once. DATA is created where it does not exist.

With --bench, the runs were searched without --profile (on another machine) and timed by
gpu_bench.py in the replay folders `pick_variants.py --all` made (the folder RUN_DIR's name
for the first, then .r2, .r3, ...): each variant's measured time is its row's in BENCH_JSON.

A program already in DATA is replaced by the run's. Variants are listed by the search's
estimate, then by hash, never by measured time: `calibrate` gives ties to the variant listed
first, and listing the fastest first would hide the ties the model cannot break. DATA is
rewritten through a temporary file. `--note` is appended to the data's "method".
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def bench_times(bench, run):
    """variant name -> the time BENCH_JSON measured for it, for a run linked by
    `pick_variants.py --all RUN REPLAYS CASE` with CASE the run folder's name."""
    import pick_variants

    case = os.path.basename(os.path.normpath(run))
    rows = next((r["rows"] for r in bench["results"] if r["case"] == case), [])
    us = {r["impl"]: r["us"] for r in rows if r.get("us")}
    _, variants = pick_variants.with_code(run)
    return {v["name"]: us.get("mugraph" + folder[len(case):])
            for folder, v in pick_variants.every_pick(variants, case).items()}


def program_of(run, bench=None):
    """The program's name and its variants (name, estimate, measured_us, schedule) from a run."""
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)
    times = bench_times(bench, run) if bench else {}
    variants = []
    program = None
    for v in summary.get("variants", []):
        measured = times.get(v["name"]) if bench else v.get("measured_us")
        path = os.path.join(run, v["name"], "schedule.json")
        if measured is None or not measured > 0 or not os.path.exists(path):
            continue
        with open(path) as f:
            schedule = json.load(f)
        program = program or schedule["program"]["name"]
        variants.append((v["cost"], v["name"], measured, schedule))
    if not variants:
        hint = (f"does --bench hold a case named {os.path.basename(os.path.normpath(run))}?"
                if bench else "was it run with --profile on a GPU?")
        raise SystemExit(f"{run}: no variant with a measured time and a schedule ({hint})")
    variants.sort(key=lambda v: (v[0], v[1]))
    return program, [{"name": name, "measured_us": measured, "schedule": schedule}
                     for _, name, measured, schedule in variants]


def _cache_entries(cache):
    """variant name -> (its schedule.json, its estimate) over every entry of a kernel cache."""
    found = {}
    for target in sorted(os.listdir(cache)):
        for entry in sorted(os.listdir(os.path.join(cache, target))):
            folder = os.path.join(cache, target, entry)
            try:
                with open(os.path.join(folder, "result.json")) as f:
                    result = json.load(f)
            except (OSError, ValueError):
                continue  # not an entry (a temporary folder, a stray file)
            for v in result.get("variants", []):
                path = os.path.join(folder, "variants", v["name"], "schedule.json")
                if os.path.exists(path):
                    found.setdefault(v["name"], (path, v.get("cost_us")))
    return found


def programs_of_model_bench(bench, cache):
    """(program name, variants) for each subgraph of each model case timed with 2+ variants."""
    entries = _cache_entries(cache)
    seen = set()
    programs = []
    for case in bench.get("results", []):
        label = f"{case['model']}.{case['case'].replace(' ', '_')}"
        for row in case.get("rows", []):
            for graph in row.get("report") or []:
                for sub in graph.get("subgraphs", []):
                    times = sub.get("variants_us") or {}
                    if len(times) < 2 or frozenset(times) in seen:
                        continue
                    missing = [n for n in times if n not in entries]
                    if missing:
                        raise SystemExit(f"{cache}: no schedule of {', '.join(missing)} "
                                         f"({label} {sub['name']}): the cache the bench used?")
                    seen.add(frozenset(times))
                    variants = []
                    for name, measured in times.items():
                        path, estimate = entries[name]
                        with open(path) as f:
                            schedule = json.load(f)
                        variants.append((estimate if estimate is not None else float("inf"),
                                         name, measured, schedule))
                    variants.sort(key=lambda v: (v[0], v[1]))
                    programs.append((f"{label}.{sub['name']}",
                                     [{"name": n, "measured_us": m, "schedule": sch}
                                      for _, n, m, sch in variants]))
    return programs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="calibration data file to extend")
    parser.add_argument("runs", nargs="*", help="superoptimize --profile output folders")
    parser.add_argument("--note", default="", help="appended to the data's method")
    parser.add_argument("--bench", help="gpu_bench.py JSON that timed the runs' variants "
                        "(linked by pick_variants.py --all)")
    parser.add_argument("--model-bench", nargs=2, metavar=("BENCH_JSON", "CACHE_DIR"),
                        help="a model_bench.py JSON and the kernel cache it ran with")
    args = parser.parse_args()
    if not args.runs and not args.model_bench:
        parser.error("give RUN_DIRs or --model-bench")
    model_bench = None
    if args.model_bench:
        try:
            with open(args.model_bench[0]) as f:
                model_bench = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"{args.model_bench[0]}: {e}")
    try:
        with open(args.data) as f:
            data = json.load(f)
    except FileNotFoundError:
        if not model_bench:
            raise SystemExit(f"{args.data}: no such file")
        data = {"format": "mugraph.cost_calibration", "version": 1,
                "device": model_bench.get("device", "?"), "target": "sm_90",
                "method": "the torch backend's timing of each subgraph's variants in a "
                          "model_bench.py run (CUDA-graph replays on the subgraph's recorded "
                          "values, medians, no L2 flush)", "programs": []}
    except (OSError, ValueError) as e:
        raise SystemExit(f"{args.data}: {e}")
    if data.get("format") != "mugraph.cost_calibration":
        raise SystemExit(f"{args.data}: not mugraph.cost_calibration data")
    bench = None
    if args.bench:
        try:
            with open(args.bench) as f:
                bench = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"{args.bench}: {e}")
    found = []
    for run in args.runs:
        try:
            found.append((*program_of(run, bench), run))
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"{run}: not a superoptimize --profile output folder: {e!r}")
    if model_bench:
        found += [(program, variants, args.model_bench[0])
                  for program, variants in programs_of_model_bench(model_bench,
                                                                   args.model_bench[1])]
        if not found:
            raise SystemExit(f"{args.model_bench[0]}: no subgraph with two or more variants timed")
    for program, variants, source in found:
        data["programs"] = [p for p in data["programs"] if p["program"] != program]
        data["programs"].append({"program": program, "variants": variants})
        print(f"{program}: {len(variants)} variants from {source}")
    if args.note:
        data["method"] += "; " + args.note
    folder = os.path.dirname(os.path.abspath(args.data))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    os.chmod(f.name, 0o644)  # as a file written in place would be
    os.replace(f.name, args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
