"""Where a model step's GPU time goes: one case of model_bench.py (a prefill or a decode step)
under torch.compile max-autotune and under the mugraph backend, each profiled by
torch.profiler, with a table of the GPU kernels by total time for each.

    python3 tools/python/profile_step.py --models qwen3 --prefill "" --decode 4096 \
        [--ours always|measured] [--rows 25]

`--ours always` keeps every subgraph whose variant is faster alone, whatever the whole graph
measures (the backend's end_to_end off), so a graph that is slower with our kernels shows
which kernels make it so; `measured` is the backend's default. Uses the kernel cache of
MUGRAPH_CACHE_DIR as model_bench.py does.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import gpu_bench  # noqa: E402
import model_graphs  # noqa: E402


def profiled(label, step, restore, m, rows, steps=5):
    """Print the kernels of `steps` calls of step(m), by total GPU time."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        for _ in range(2):  # compiled, warm
            if restore:
                restore()
            step(m)
        torch.cuda.synchronize()
        from mugraph import kernels

        kernels.COPIES.clear()  # those of the steps profiled, not of the compile's checks
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                step(m)
            torch.cuda.synchronize()
        torch.cuda.synchronize()
        from mugraph import timing

        if restore:
            restore()
        bench_us = gpu_bench.median_us(lambda: step(m))
        if restore:
            restore()
        replay_us = timing.replay_us(lambda: step(m))
    events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    total = sum(e.self_device_time_total for e in events) / steps
    print(f"== {label}: {total:.1f} us of kernels per step; the step {bench_us:.1f} us "
          f"(model_bench's timer), {replay_us:.1f} us (the backend's, timing.replay_us)")
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:rows]:
        print(f"  {e.self_device_time_total / steps:9.1f} us  x{e.count // steps:<3d} {e.key[:110]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model_graphs.add_case_arguments(parser)
    parser.add_argument("--ours", default="always", choices=("always", "measured"))
    parser.add_argument("--rows", type=int, default=25)
    args = parser.parse_args()
    import mugraph.backend

    for name in args.models.split(","):
        model = model_graphs.causal_lm(name, device="cuda", hidden=args.hidden,
                                       layers=args.layers, vocab=args.vocab)
        for label, make, value in model_graphs.cases(args):
            step, restore = make(model, value, args.vocab)
            torch._dynamo.reset()
            compiled = torch.compile(model, mode=gpu_bench.COMPILE_MODE, dynamic=False)
            profiled(f"{name} {label} torch.compile max-autotune", step, restore, compiled,
                     args.rows)
            torch._dynamo.reset()
            options = {"time_limit": args.time_limit, "mode": gpu_bench.COMPILE_MODE,
                       "end_to_end": args.ours == "measured"}
            ours = torch.compile(model, backend=mugraph.backend.mugraph_backend,
                                 options=options, dynamic=False)
            from mugraph import kernels
            from mugraph.substitute import max_relative_error

            profiled(f"{name} {label} mugraph (--ours {args.ours})", step, restore, ours,
                     args.rows)
            with torch.no_grad():
                if restore:
                    restore()
                expected = step(model)
                if restore:
                    restore()
                print(f"logits with our kernels against eager: max relative error "
                      f"{max_relative_error(step(ours), expected):.2e}")
            print(f"copies our launches made in the steps profiled ({len(kernels.COPIES)}):")
            for c in sorted(kernels.COPIES):
                print(f"  {c}")


if __name__ == "__main__":
    main()
