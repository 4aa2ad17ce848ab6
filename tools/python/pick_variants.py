#!/usr/bin/env python3
"""Links a superoptimize run's variants into a `gpu_bench.py --replays` folder: the one
`--profile` measured fastest as CASE (impl "mugraph") and, where it differs, the cost model's
first choice as CASE.cost_first, so one bench run compares both with PyTorch. With --all
(a run searched without --profile, on another machine), every variant with code: the cost
model's first as CASE, the others it costs within 2x of it as CASE.r2, CASE.r3, ..., so the
bench run measures each.

    python3 tools/python/pick_variants.py [--all] RUN_DIR REPLAYS_DIR CASE
"""
import json
import os
import sys


def with_code(run):
    """(the run's summary, its variants whose folder holds code)."""
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)
    return summary, [v for v in summary.get("variants", [])
                     if os.path.exists(os.path.join(run, v["name"], "manifest.json"))]


def every_pick(variants, case):
    """--all's folders: replay folder name -> variant (the bench's impl is "mugraph" plus
    what follows CASE). calibration_from_runs.py --bench maps measured rows back through it."""
    ranked = sorted(variants, key=lambda v: v["cost"])
    ranked = [v for v in ranked if v["cost"] <= 2 * ranked[0]["cost"]]
    return {case if i == 0 else f"{case}.r{i + 1}": v for i, v in enumerate(ranked)}


def main():
    args = [a for a in sys.argv[1:] if a != "--all"]
    every = len(args) < len(sys.argv) - 1
    run, replays, case = args[:3]
    summary, variants = with_code(run)
    if not variants:
        print(f"{case}: no variant with code in {run}: {summary.get('no_variants', '')}")
        return 1
    measured = [v for v in variants if v.get("measured_us") is not None]
    fastest = min(measured, key=lambda v: v["measured_us"]) if measured else variants[0]
    cost_first = min(variants, key=lambda v: v["cost"])
    if every:
        picks = every_pick(variants, case)
    else:
        picks = {case: fastest}
        if cost_first["name"] != fastest["name"]:
            picks[case + ".cost_first"] = cost_first
    for folder, v in picks.items():
        os.makedirs(replays, exist_ok=True)
        target = os.path.join(replays, folder)
        if os.path.lexists(target):
            os.remove(target)
        os.symlink(os.path.abspath(os.path.join(run, v["name"])), target)
        print(f"{folder}: {v['name']} (cost {v['cost']:.1f} us, measured "
              f"{v.get('measured_us', float('nan')):.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
