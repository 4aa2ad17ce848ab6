"""Whole models through the mugraph torch.compile backend against eager PyTorch and
torch.compile(max-autotune), on the same GPU in one run.

    python3 tools/python/model_bench.py --out docs/measurements/model_bench_h100.json \
        [--models llama,qwen3,mistral] [--hidden 2048] [--prefill 512,2048] [--decode 4096]

`transformers` architectures with random weights (their own initialisation), f16, batch 1,
2 layers. Cases: prefill of N tokens (the logits), and one decode step over a StaticCache of
the --decode length filled by an eager prefill. Every candidate is captured into a CUDA graph
and replayed under triton.testing.do_bench (median, L2 cleared between runs; gpu_bench.py's
timer); logits are compared with eager's. The mugraph rows carry the backend's report: each
subgraph with PyTorch's and our time, and every aten node left to PyTorch with its reason.
JSON: {"device", "torch", "transformers", "copy_bandwidth_bytes_per_s", "results": [...]}.
"""
import argparse
import json
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import gpu_bench  # noqa: E402
import model_graphs  # noqa: E402
from mugraph import rest  # noqa: E402
from mugraph.substitute import max_relative_error  # noqa: E402


def run_case(name, model, label, make, args, reports):
    step, restore = make(model, args.value, args.vocab)
    rows = []
    with torch.no_grad():
        if restore:
            restore()
        expected = step(model).clone()
        candidates = [("eager", model)]
        if not args.no_compile:
            candidates.append(("torch.compile max-autotune",
                               torch.compile(model, mode=gpu_bench.COMPILE_MODE, dynamic=False)))
        candidates.append(("mugraph", "mugraph"))
        for impl, m in candidates:
            try:
                start = time.monotonic()
                if m == "mugraph":
                    import mugraph.backend

                    first_report = len(mugraph.backend.REPORTS)
                    m = mugraph_compiled(model, args)
                if restore:
                    restore()
                out = step(m)  # compiles (and, for mugraph, checks and substitutes)
                compile_s = time.monotonic() - start
                if restore:
                    restore()
                out = step(m).clone()
                row = {"impl": impl, "rel_error": max_relative_error(out, expected),
                       "compile_s": compile_s}
                row["us"] = gpu_bench.median_us(lambda: step(m))
                if impl == "mugraph":
                    row["report"] = [r.as_dict() for r in mugraph.backend.REPORTS[first_report:]]
                    (row["cached_compile_s"], row["cached_compile_phases_s"],
                     row["cached_compile_report"]) = cached_compile_s(model, step, restore, args)
                rows.append(row)
            except Exception as e:  # every candidate is reported, then the next runs
                traceback.print_exc()
                rows.append({"impl": impl, "us": None, "error": gpu_bench.short_error(e)})
    eager = next((r["us"] for r in rows if r["impl"] == "eager" and r.get("us")), None)
    best_compile = next((r["us"] for r in rows if r["impl"].startswith("torch.compile")
                         and r.get("us")), None)
    for r in rows:
        if r.get("us"):
            r["speedup_vs_eager"] = eager / r["us"] if eager else None
            r["speedup_vs_compile"] = best_compile / r["us"] if best_compile else None
    return {"model": name, "case": label, "rows": rows}


def mugraph_compiled(model, args):
    """The model under the mugraph backend, the nodes it leaves to PyTorch compiled in the
    torch.compile row's mode."""
    import mugraph.backend

    torch._dynamo.reset()
    options = {"time_limit": args.time_limit, "rest": args.mugraph_rest}
    if args.mugraph_rest == "inductor":
        options["mode"] = gpu_bench.COMPILE_MODE
    return torch.compile(model, backend=mugraph.backend.mugraph_backend, options=options,
                         dynamic=False)


def cached_compile_s(model, step, restore, args):
    """(seconds, seconds by phase summed over its graphs: report.GraphReport.phases, its
    graphs' reports) of a second compile of the model in this process (dynamo reset): the
    kernel cache and the measured decisions are on disk from the first, Inductor's caches
    warm."""
    import mugraph.backend

    first_report = len(mugraph.backend.REPORTS)
    start = time.monotonic()
    again = mugraph_compiled(model, args)
    if restore:
        restore()
    step(again)
    torch.cuda.synchronize()
    seconds = time.monotonic() - start
    phases = {}
    for r in mugraph.backend.REPORTS[first_report:]:
        for name, s in r.phases.items():
            phases[name] = phases.get(name, 0.0) + s
    reports = [r.as_dict() for r in mugraph.backend.REPORTS[first_report:]]
    return seconds, phases, reports


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    model_graphs.add_case_arguments(parser)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--mugraph-rest", default="inductor", choices=rest.RUNNERS,
                        help="how the mugraph row runs the nodes it leaves to PyTorch")
    args = parser.parse_args()
    import transformers

    results = []
    bandwidth = gpu_bench.copy_bandwidth()
    for name in args.models.split(","):
        model = model_graphs.causal_lm(name, device="cuda", hidden=args.hidden,
                                       layers=args.layers, vocab=args.vocab)
        for label, make, value in model_graphs.cases(args):
            args.value = value
            result = run_case(name, model, label, make, args, None)
            results.append(result)
            for r in result["rows"]:
                us = f"{r['us']:9.1f} us" if r.get("us") else f"  error: {r.get('error')}"
                extra = (f"  x{r['speedup_vs_compile']:.2f} vs compile" if r.get("speedup_vs_compile")
                         else "")
                if r.get("cached_compile_s") is not None:
                    extra += f"  compile {r['compile_s']:.0f} s, cached {r['cached_compile_s']:.1f} s"
                    phases = r.get("cached_compile_phases_s") or {}
                    if phases:
                        extra += " (" + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()) + ")"
                print(f"{name:8} {label:12} {r['impl']:28} {us}{extra}"
                      f"  err {r.get('rel_error', float('nan')):.2e}", flush=True)
            write(args.out, results, bandwidth, transformers.__version__)
        del model
        torch.cuda.empty_cache()


def write(path, results, bandwidth, transformers_version):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    data = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "transformers": transformers_version, "copy_bandwidth_bytes_per_s": bandwidth,
            "results": results}
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.rename(path + ".tmp", path)


if __name__ == "__main__":
    main()
