#!/usr/bin/env python3
"""Adds `mugraph superoptimize --profile` runs to cost-calibration data (the "format":
"mugraph.cost_calibration" file `mugraph calibrate` reads): each run folder becomes one
program, its variants with their schedules and measured times.

    python3 tools/python/calibration_from_runs.py DATA RUN_DIR... [--note TEXT]

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


def program_of(run):
    """The program's name and its variants (name, estimate, measured_us, schedule) from a run."""
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)
    variants = []
    program = None
    for v in summary.get("variants", []):
        measured = v.get("measured_us")
        path = os.path.join(run, v["name"], "schedule.json")
        if measured is None or not measured > 0 or not os.path.exists(path):
            continue
        with open(path) as f:
            schedule = json.load(f)
        program = program or schedule["program"]["name"]
        variants.append((v["cost"], v["name"], measured, schedule))
    if not variants:
        raise SystemExit(f"{run}: no variant with a measured time and a schedule "
                         "(was it run with --profile on a GPU?)")
    variants.sort(key=lambda v: (v[0], v[1]))
    return program, [{"name": name, "measured_us": measured, "schedule": schedule}
                     for _, name, measured, schedule in variants]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="calibration data file to extend")
    parser.add_argument("runs", nargs="+", help="superoptimize --profile output folders")
    parser.add_argument("--note", default="", help="appended to the data's method")
    args = parser.parse_args()
    try:
        with open(args.data) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"{args.data}: {e}")
    if data.get("format") != "mugraph.cost_calibration":
        raise SystemExit(f"{args.data}: not mugraph.cost_calibration data")
    for run in args.runs:
        try:
            program, variants = program_of(run)
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
