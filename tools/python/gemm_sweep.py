#!/usr/bin/env python3
"""The GEMM sweep of issue 27: one definition of its points, and the programs a search takes.

    python3 tools/python/gemm_sweep.py programs DIR     # writes DIR/<case>.mg for every point

Points, each in f16 and bf16:
- square GEMMs C = A·B, A [n, n], B [n, n] row-major, n in SQUARES (sizes no tile divides
  among them: 1000, 1030, 3000);
- the LLM projections Y = X·Wᵀ, X [m, k] tokens, W [n, k] as nn.Linear stores it (the
  program's B [k, n], layout=transposed), m in TOKENS against each (k, n) in PROJECTIONS.

Case names: gemm_sweep_<m>x<k>x<n>_<dtype>[_bt]. `scripts/device_run.sh sweep` searches
each program (`mugraph superoptimize --profile`, or takes the runs made on another machine),
times the variant against cuBLAS (tools/python/gpu_bench.py, which reads these points from
here) and plots TFLOP/s against size (tools/python/bench_plots.py)."""
import os
import sys

SQUARES = (512, 1000, 1024, 1030, 2048, 3000, 4096, 8192)
TOKENS = (16, 128, 512, 2048)
PROJECTIONS = ((4096, 4096), (4096, 14336), (14336, 4096))  # (k, n)
DTYPES = ("f16", "bf16")


def points():
    """(case, m, k, n, dtype, b_transposed) for every point, in sweep order."""
    found = []
    for dtype in DTYPES:
        for n in SQUARES:
            found.append((f"gemm_sweep_{n}x{n}x{n}_{dtype}", n, n, n, dtype, False))
        for k, n in PROJECTIONS:
            for m in TOKENS:
                found.append((f"gemm_sweep_{m}x{k}x{n}_{dtype}_bt", m, k, n, dtype, True))
    return found


def program_text(case, m, k, n, dtype, b_transposed):
    layout = " layout=transposed" if b_transposed else ""
    return (f"program {case}\n"
            f"input A {dtype} [{m}, {k}]\n"
            f"input B {dtype} [{k}, {n}]{layout}\n"
            "C = matmul(A, B)\n"
            "output C\n")


def write_programs(directory):
    os.makedirs(directory, exist_ok=True)
    for point in points():
        path = os.path.join(directory, point[0] + ".mg")
        with open(path + ".tmp", "w") as f:
            f.write(program_text(*point))
        os.replace(path + ".tmp", path)
    return len(points())


def main(argv):
    if len(argv) != 3 or argv[1] != "programs":
        sys.exit(__doc__)
    print(f"{write_programs(argv[2])} programs in {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
