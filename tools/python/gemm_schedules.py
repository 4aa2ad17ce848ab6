"""Tiled GEMM schedules C = A·B for any M, N, K, tile and thread count.

    python3 tools/python/gemm_schedules.py gemm_4096 4096 4096 4096 --tile 128x256x64 \
        --threads 384 --label warpgroups --out-dir schedules
    python3 tools/python/gemm_schedules.py gemm_8192_bf16 8192 8192 8192 --dtype bf16 \
        --tile 128x256x64 --threads 384 --label warpgroups --out-dir schedules

Writes the program PROGRAM.mg (A [M, K] and B [K, N] row-major, C = matmul(A, B)) unless it
exists, and the schedule PROGRAM.LABEL.json: one block graph over a grid of (M / BM, N / BN)
blocks, each looping K / BK times (rounded up) over an A tile [BM, BK] and a B tile [BK, BN], multiplying
them and accumulating the product, then storing its [BM, BN] tile of C. On sm_90 such a block
graph takes the warpgroup path (plan/kernel_plan.h, WarpgroupMmaPlan) when the thread count is
whole warpgroups: 384 threads are one copy warpgroup and two multiplying ones. The tile must
need not divide the sizes: the grid and the loop then take ⌈size / tile⌉ parts, the inputs
declare their tiles and the last part of each dim is partial (graph/tile_splits.h). `mugraph check` and `mugraph replay` accept every schedule written
here.
"""
import argparse
import json
import os
import sys

from schedule_files import write_atomic


def tensor(name, dtype, shape, layout="row_major"):
    return {"name": name, "dtype": dtype, "shape": shape, "layout": layout}


def program_json(name, m, n, k, dtype, layouts):
    return {"format": "mugraph.program", "version": 1, "name": name,
            "inputs": [tensor("A", dtype, [m, k], layouts[0]),
                       tensor("B", dtype, [k, n], layouts[1])],
            "ops": [{"op": "matmul", "inputs": ["A", "B"], "output": "C"}],
            "outputs": ["C"]}


def program_text(name, m, n, k, dtype, layouts):
    def layout(which):
        return "" if layouts[which] == "row_major" else f" layout={layouts[which]}"
    stored = {"row_major": "as given", "transposed": "stored transposed"}
    return (f"# C = A · B with M = {m}, N = {n}, K = {k} ({dtype}); A {stored[layouts[0]]}, "
            f"B {stored[layouts[1]]}.\n"
            f"program {name}\n"
            f"input A {dtype} [{m}, {k}]{layout(0)}\n"
            f"input B {dtype} [{k}, {n}]{layout(1)}\n"
            f"C = matmul(A, B)\n"
            f"output C\n")


def schedule_json(name, label, m, n, k, dtype, bm, bn, bk, threads, layouts):
    def axes(x, y):
        return {"x": x, "y": y, "z": -1}
    def parts(size, tile):
        return -(-size // tile)
    partial = m % bm or n % bn or k % bk
    a_tile = {"tile": [bm, bk]} if partial else {}
    b_tile = {"tile": [bk, bn]} if partial else {}
    rows = 0 if parts(m, bm) > 1 else -1  # a grid axis of one block maps no dim
    cols = 1 if parts(n, bn) > 1 else -1
    ops = [
        {"op": "input", "from": "A", "output": "a", "imap": axes(rows, -1), "fmap": 1, **a_tile},
        {"op": "input", "from": "B", "output": "b", "imap": axes(-1, cols), "fmap": 0, **b_tile},
        {"op": "matmul", "inputs": ["a", "b"], "output": "c"},
        {"op": "accum_sum", "inputs": ["c"], "output": "c_acc"},
        {"op": "output", "inputs": ["c_acc"], "to": "C", "omap": axes(rows, cols)},
    ]
    kernel = {"op": "block_graph", "name": "gemm_tiled", "inputs": ["A", "B"], "outputs": ["C"],
              "grid": {"x": parts(m, bm), "y": parts(n, bn), "z": 1}, "threads": threads,
              "forloop": parts(k, bk), "ops": ops, "fusion": []}
    return {"format": "mugraph.schedule", "version": 1, "name": f"{name}.{label}",
            "program": program_json(name, m, n, k, dtype, layouts),
            "tensors": [tensor("A", dtype, [m, k], layouts[0]),
                        tensor("B", dtype, [k, n], layouts[1]),
                        tensor("C", dtype, [m, n])],
            "kernels": [kernel], "outputs": ["C"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("program", help="program name, e.g. gemm_4096")
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    parser.add_argument("--tile", default="128x256x64", help="BMxBNxBK")
    parser.add_argument("--threads", type=int, default=384)
    parser.add_argument("--label", default="warpgroups")
    parser.add_argument("--out-dir", default="schedules")
    parser.add_argument("--a-layout", default="row_major", choices=["row_major", "transposed"],
                        help="transposed: A is stored [K, M]")
    parser.add_argument("--b-layout", default="row_major", choices=["row_major", "transposed"],
                        help="transposed: B is stored [N, K] (as K of attention's Q·Kᵀ)")
    args = parser.parse_args()
    try:
        bm, bn, bk = (int(x) for x in args.tile.split("x"))
    except ValueError:
        parser.error(f"--tile {args.tile}: expected BMxBNxBK")
    for size, tile, what in ((args.m, bm, "M"), (args.n, bn, "N"), (args.k, bk, "K")):
        if tile <= 0 or tile > size:
            parser.error(f"the tile's {what} extent {tile} must be in 1..{what} = {size}")
    os.makedirs(args.out_dir, exist_ok=True)
    program_path = os.path.join(args.out_dir, args.program + ".mg")
    layouts = (args.a_layout, args.b_layout)
    if not os.path.exists(program_path):
        write_atomic(program_path,
                     program_text(args.program, args.m, args.n, args.k, args.dtype, layouts))
    schedule = schedule_json(args.program, args.label, args.m, args.n, args.k, args.dtype,
                             bm, bn, bk, args.threads, layouts)
    path = os.path.join(args.out_dir, f"{args.program}.{args.label}.json")
    write_atomic(path, json.dumps(schedule, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
