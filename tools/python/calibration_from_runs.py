#!/usr/bin/env python3
"""Adds `mugraph superoptimize --profile` runs to cost-calibration data (the "format":
"mugraph.cost_calibration" file `mugraph calibrate` reads): each run folder becomes one
program, its variants with their schedules and measured times.

    python3 tools/python/calibration_from_runs.py DATA RUN_DIR... [--note TEXT]
    python3 tools/python/calibration_from_runs.py DATA RUN_DIR... --bench BENCH_JSON

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="calibration data file to extend")
    parser.add_argument("runs", nargs="+", help="superoptimize --profile output folders")
    parser.add_argument("--note", default="", help="appended to the data's method")
    parser.add_argument("--bench", help="gpu_bench.py JSON that timed the runs' variants "
                        "(linked by pick_variants.py --all)")
    args = parser.parse_args()
    try:
        with open(args.data) as f:
            data = json.load(f)
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
    for run in args.runs:
        try:
            program, variants = program_of(run, bench)
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"{run}: not a superoptimize --profile output folder: {e!r}")
        data["programs"] = [p for p in data["programs"] if p["program"] != program]
        data["programs"].append({"program": program, "variants": variants})
        print(f"{program}: {len(variants)} variants from {run}")
    if args.note:
        data["method"] += "; " + args.note
    folder = os.path.dirname(os.path.abspath(args.data))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    os.replace(f.name, args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
