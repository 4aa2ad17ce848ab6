"""Where a multi-kernel variant's time goes: each kernel's share of a CUDA-graph replay.

    python3 tools/python/chain_bench.py FOLDER... --out chain.json

FOLDER is a `mugraph replay` (or superoptimize variant) output. ncu times kernels one by one,
with the L2 flushed and launches serialized, so it cannot show what a kernel adds to the chain
it runs in: the gap while the next kernel launches, or an epilogue that overlaps it. This
times, the way tools/python/gpu_bench.py times everything (CUDA-graph replays under triton's
do_bench, medians, L2 flushed between runs), the first kernel alone, the first two, and so on
to the whole chain; each kernel alone; the whole chain launched plainly where the manifest lets
its kernels overlap (`waits_for_prior_grids`, codegen/README.md); and a graph of one empty
kernel, the floor every timing here carries. Inputs are normal (std 1); dynamic dims run at
the range's max.

JSON: {"device", "torch", "copy_bandwidth_bytes_per_s", "empty_kernel_us", "variants": [{"folder",
"kernels": [entry, ...], "prefix_us": [...], "alone_us": [...], "overlapped": bool,
"plain_us"}]}.
"""
import argparse
import json
import os
import sys

import cupy
import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import copy_bandwidth, median_us  # noqa: E402
from mugraph_launch import Variant  # noqa: E402


def empty_kernel_us():
    function = cupy.RawModule(code='extern "C" __global__ void empty() {}').get_function("empty")

    def run():
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            function((1,), (32,), ())
    return median_us(run)


def bound_tensors(variant):
    """Normal inputs and empty outputs for every tensor the variant binds."""
    tensors = {}
    for name, t in variant.tensors.items():
        if t["role"] == "input":
            tensors[name] = variant.empty(name).normal_()
        elif t["role"] == "output":
            tensors[name] = variant.empty(name)
    return tensors


def chain(variant, tensors):
    kernels = list(variant.kernels)

    def timed(subset, programmatic=variant.programmatic):
        variant.kernels, saved = subset, variant.programmatic
        variant.programmatic = programmatic
        try:
            return median_us(lambda: variant.launch(tensors))
        finally:
            variant.kernels, variant.programmatic = kernels, saved
    row = {"kernels": [k["entry"] for _, k in kernels],
           "prefix_us": [timed(kernels[:n]) for n in range(1, len(kernels) + 1)],
           "alone_us": [timed([k]) for k in kernels],
           "overlapped": variant.programmatic}
    if variant.programmatic:
        row["plain_us"] = timed(kernels, programmatic=False)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="variant folders (manifest.json and PTX)")
    parser.add_argument("--out", default="chain_bench.json")
    args = parser.parse_args()
    for folder in args.folders:
        if not os.path.isfile(os.path.join(folder, "manifest.json")):
            parser.error(f"{folder}: no manifest.json")
    torch.manual_seed(0)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "copy_bandwidth_bytes_per_s": copy_bandwidth(), "empty_kernel_us": empty_kernel_us(),
              "variants": []}
    print(f"device {result['device']}; one empty kernel: {result['empty_kernel_us']:.2f} us")
    for folder in args.folders:
        manifest = json.load(open(os.path.join(folder, "manifest.json")))
        variant = Variant(folder, dims={d["name"]: d["max"] for d in manifest.get("dims", [])})
        row = dict(folder=os.path.basename(os.path.normpath(folder)),
                   **chain(variant, bound_tensors(variant)))
        result["variants"].append(row)
        print(f"{row['folder']}: whole chain {row['prefix_us'][-1]:.2f} us"
              + (f" (plain launches {row['plain_us']:.2f})" if "plain_us" in row else ""))
        previous = 0.0
        for entry, prefix, alone in zip(row["kernels"], row["prefix_us"], row["alone_us"]):
            print(f"  {entry:48s} adds {prefix - previous:7.2f} us   alone {alone:7.2f} us")
            previous = prefix
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f, indent=2)
    os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
