#!/usr/bin/env python3
"""Fills the kernel cache for whole models on a machine without a GPU: each case of
model_bench.py (the same models, sizes and inputs) is traced on the CPU and compiled with the
mugraph backend, which partitions its aten graph and superoptimizes every subgraph for the
target into the persistent cache ($MUGRAPH_CACHE_DIR, python/mugraph/cache.py), ranked by the
cost model. A GPU machine given the same cache directory then compiles the model without
searching: it checks, times and substitutes only.

    MUGRAPH_CACHE_DIR=out/model_cache python3 tools/python/model_search.py \
        --models llama,qwen3 --prefill 512,2048 --decode 4096 --time-limit 20

Prints one line per subgraph (the backend's progress) and, per case, the cache entries it
searched or found; exits 1 where a subgraph got no verified variant. `--list` searches
nothing: it traces each case (on the GPU where there is one, with --device cuda) and prints
every subgraph's program hash and whether the cache holds it, which shows whether a cache
filled on one machine serves another's graphs.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import model_graphs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model_graphs.add_case_arguments(parser)
    parser.add_argument("--target", default="sm_90", choices=("sm_90", "sm_80"))
    parser.add_argument("--list", action="store_true",
                        help="only list each case's subgraph programs and whether they are cached")
    parser.add_argument("--device", default="cpu", help="where --list traces the models")
    args = parser.parse_args()
    if args.list:
        return list_programs(args)
    import mugraph.backend

    failed = []
    for name in args.models.split(","):
        model = model_graphs.causal_lm(name, hidden=args.hidden, layers=args.layers,
                                       vocab=args.vocab)
        for label, make, value in model_graphs.cases(args):
            start = time.monotonic()
            step, restore = make(model, value, args.vocab)
            if restore:
                restore()
            torch._dynamo.reset()
            first = len(mugraph.backend.REPORTS)
            compiled = torch.compile(model, backend=mugraph.backend.mugraph_backend, options={
                "time_limit": args.time_limit, "profile": False, "target": args.target,
                "rest": "eager", "time_subgraphs": False, "only_faster": False,
                "end_to_end": False}, dynamic=False)
            with torch.no_grad():
                step(compiled)
            for graph_report in mugraph.backend.REPORTS[first:]:
                for row in graph_report.subgraphs.values():
                    if not row.get("verified"):
                        failed.append(f"{name} {label}: {row.get('name')}")
            print(f"{name} {label}: {time.monotonic() - start:.0f} s", flush=True)
        del model
    if failed:
        print("no verified variant: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


def list_programs(args):
    from mugraph import _capi, cache, fx_graph

    missing = 0
    for name in args.models.split(","):
        model = model_graphs.causal_lm(name, device=args.device, hidden=args.hidden,
                                       layers=args.layers, vocab=args.vocab)
        for label, make, value in model_graphs.cases(args):
            step, restore = make(model, value, args.vocab)
            if restore:
                restore()
            for gm in model_graphs.traced_graphs(model, step):
                graph, _ = fx_graph.to_graph_json(gm)
                for s in _capi.partition(graph)["subgraphs"]:
                    path = cache.entry_path(_capi.version(), args.target, s["canonical_hash"],
                                            s["canonical_program_text"])
                    cached = cache.load(path) is not None
                    missing += not cached
                    print(f"{name} {label}: {s['name']} program {s['canonical_hash']} "
                          f"{'cached' if cached else 'not cached'}", flush=True)
        del model
    print(f"{missing} subgraph programs not cached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
