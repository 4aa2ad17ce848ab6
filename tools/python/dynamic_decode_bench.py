"""A decode loop over a growing transformers DynamicCache, as a user runs one: eager PyTorch,
torch.compile(max-autotune) and torch.compile(backend="mugraph"), each with dynamic=True, on
the same GPU in one run (issue 28: the torch backend's dynamic decode).

    python3 tools/python/dynamic_decode_bench.py --out docs/measurements/dynamic_decode_model_h200.json \
        [--models llama] [--hidden 2048] [--contexts 256,1024,4000] [--steps 16] [--max-length 4096]

Per model and context L: each implementation gets a cache filled by an eager prefill of L - 1
random tokens and runs `--steps` decode steps in lockstep with an eager reference cache (the
same tokens). Reported per step: the median wall time (synchronized; a DynamicCache changes
shape every step, so no CUDA graph replays it: this is the latency a user sees, Python and
guard checks included), the largest relative error of the logits against eager's, and how
many graphs were compiled during the measured steps (0 is the goal: no recompilation per
token). Before the contexts, each compiled model is warmed up (4 steps at --warmup-context)
so its compiles (and mugraph's searches and first-call decisions) happen first; their seconds
are reported.
Every row runs once per --sdpa backend (PyTorch's own choice, cuDNN on Hopper, rebuilds its
plan for each new length; the flash backend does not), and each context is compared with the
fastest eager and torch.compile rows. JSON: {"device", "torch", "transformers",
"copy_bandwidth_bytes_per_s", "results": [...]}.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import gpu_bench  # noqa: E402
import model_graphs  # noqa: E402
from mugraph.substitute import max_relative_error  # noqa: E402


def compiled_graphs():
    """Graphs Dynamo has compiled so far in this process (every backend's)."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def candidates(model, args):
    import mugraph.backend

    yield "eager", lambda: model
    yield "torch.compile max-autotune", lambda: torch.compile(
        model, mode=gpu_bench.COMPILE_MODE, dynamic=True)
    options = {"time_limit": args.time_limit, "max_length": args.max_length,
               "mode": gpu_bench.COMPILE_MODE}
    yield "mugraph", lambda: torch.compile(model, backend=mugraph.backend.mugraph_backend,
                                           options=options, dynamic=True)


def filled_cache(model, length, vocab, seed):
    from transformers import DynamicCache

    cache = DynamicCache()
    torch.manual_seed(seed)
    ids = torch.randint(0, vocab, (1, length), device="cuda")
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
    return cache


def decode_steps(model, runner, context, steps, vocab, seed):
    """(per-step seconds, worst relative error against eager) of `steps` decode steps."""
    ours, reference = (filled_cache(model, context - 1, vocab, seed) for _ in range(2))
    torch.manual_seed(seed + 1)
    times, worst = [], 0.0
    with torch.no_grad():
        for _ in range(steps):
            ids = torch.randint(0, vocab, (1, 1), device="cuda")
            torch.cuda.synchronize()
            start = time.perf_counter()
            got = runner(input_ids=ids, past_key_values=ours, use_cache=True).logits
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            expected = model(input_ids=ids, past_key_values=reference, use_cache=True).logits
            worst = max(worst, max_relative_error(got, expected))
    return times, worst


def sdpa_backends(name):
    """The SDPA backends a row may use: PyTorch's own choice, or one named. cuDNN's attention
    (PyTorch's choice on Hopper) builds a plan per new shape, which a growing cache is at every
    step: the flash backend is PyTorch's best for this loop, so both are run."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if name == "default":
        return contextlib.nullcontext()
    return sdpa_kernel([{"flash": SDPBackend.FLASH_ATTENTION,
                         "efficient": SDPBackend.EFFICIENT_ATTENTION,
                         "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[name]])


def run_model(name, args):
    model = model_graphs.causal_lm(name, device="cuda", hidden=args.hidden, layers=args.layers,
                                   vocab=args.vocab)
    rows = []
    for sdpa in args.sdpa.split(","):
        for impl, make in candidates(model, args):
            with sdpa_backends(sdpa):
                rows.append(run_row(name, model, impl, sdpa, make, args))
    # Against the best of PyTorch at each context: the fastest eager and torch.compile rows.
    for kind in ("eager", "torch.compile"):
        best = {}
        for r in rows:
            if r["impl"].startswith(kind):
                for c in r.get("contexts", []):
                    best[c["context"]] = min(best.get(c["context"], c["step_us"]), c["step_us"])
        for r in rows:
            for c in r.get("contexts", []):
                c[f"vs_best_{kind.replace('.', '_')}"] = best.get(c["context"], 0) / c["step_us"]
    del model
    torch.cuda.empty_cache()
    return {"model": name, "hidden": args.hidden, "layers": args.layers, "steps": args.steps,
            "max_length": args.max_length, "rows": rows}


def run_row(name, model, impl, sdpa, make, args):
    """One implementation under one SDPA backend: its warm-up, then each context."""
    import mugraph.backend

    torch._dynamo.reset()
    first_report = len(mugraph.backend.REPORTS)
    try:
        runner = make()
        start, graphs = time.monotonic(), compiled_graphs()
        # compiles happen here; mugraph's first call also decides, by timing the graph at
        # this length, whether our kernels run (backend.py)
        decode_steps(model, runner, args.warmup_context, 4, args.vocab, seed=7)
        row = {"impl": impl, "sdpa": sdpa, "warmup_s": time.monotonic() - start,
               "warmup_graphs": compiled_graphs() - graphs, "contexts": []}
        for context in (int(c) for c in args.contexts.split(",")):
            graphs = compiled_graphs()
            times, error = decode_steps(model, runner, context, args.steps, args.vocab,
                                        seed=context)
            row["contexts"].append({
                "context": context, "step_us": 1e6 * statistics.median(times),
                "first_step_us": 1e6 * times[0], "rel_error": error,
                "graphs_compiled": compiled_graphs() - graphs})
        if impl == "mugraph":
            row["report"] = [r.as_dict() for r in mugraph.backend.REPORTS[first_report:]]
    except Exception as e:  # every candidate is reported, then the next runs
        traceback.print_exc()
        row = {"impl": impl, "sdpa": sdpa, "error": gpu_bench.short_error(e)}
    print_row(name, row)
    return row


def print_row(name, row):
    label = f"{row['impl']} [sdpa {row['sdpa']}]"
    if "error" in row:
        print(f"{name:8} {label:40} error: {row['error']}", flush=True)
        return
    print(f"{name:8} {label:40} warm-up {row['warmup_s']:.0f} s, "
          f"{row['warmup_graphs']} graphs", flush=True)
    for c in row["contexts"]:
        print(f"{'':8} {'':40} context {c['context']:6}: {c['step_us']:9.1f} us/step, "
              f"err {c['rel_error']:.1e}, {c['graphs_compiled']} graphs compiled", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default="llama")
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--contexts", default="256,1024,4000")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--warmup-context", type=int, default=1024)
    parser.add_argument("--sdpa", default="default,flash",
                        help="SDPA backends to run every row under (default: PyTorch's choice)")
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--time-limit", type=int, default=20, help="search seconds per subgraph")
    args = parser.parse_args()
    import transformers

    results = []
    bandwidth = gpu_bench.copy_bandwidth()
    for name in args.models.split(","):
        results.append(run_model(name, args))
        data = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                "transformers": transformers.__version__,
                "copy_bandwidth_bytes_per_s": bandwidth, "results": results}
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(data, f, indent=1)
        os.rename(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
