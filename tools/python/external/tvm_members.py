"""TVM members: GEMMs written as a TE compute (f16 inputs, f32 accumulation, f16 output),
scheduled for the GPU with TVM's schedule primitives (s_tir.Schedule: thread-block and
per-thread register tiles, shared-memory staging of both operands, cooperative fetch), and
built by `tvm.compile` for target cuda; the CUDA C++ TVM generates is compiled to sm_90 PTX
with nvcc, as the CUTLASS members are. A plain CUDA-core schedule (no tensor cores): what a
hand-written TVM schedule gives without tuning, which is exactly the spread a dataset of
equivalent kernels should show. Needs the apache-tvm package (it generates code without a GPU).
"""
import os
import re
import subprocess
import tempfile

from .member_folder import Kernel

CUDA_HOME = os.environ.get("MUGRAPH_CUDA_HOME", "/usr/local/cuda")

# (BM, BN, BK, TM, TN): a block computes BM x BN with (BM/TM) x (BN/TN) threads, each TM x TN.
_TILINGS = [(64, 64, 16, 4, 4), (128, 128, 16, 8, 8), (16, 64, 16, 1, 4), (16, 128, 32, 1, 8)]


def _tvm():
    try:
        import tvm
        from tvm import s_tir, te
    except ImportError as e:
        raise SystemExit("TVM members need the apache-tvm package: " + str(e))
    return tvm, s_tir, te


def _schedule(tvm, s_tir, te, m, n, k, names, tiling):
    bm, bn, bk, tm, tn = tiling
    a_name, b_name, c_name = names
    a = te.placeholder((m, k), "float16", name=a_name)
    b = te.placeholder((k, n), "float16", name=b_name)
    r = te.reduce_axis((0, k), "k")
    acc = te.compute((m, n), lambda i, j: te.sum(
        a[i, r].astype("float32") * b[r, j].astype("float32"), axis=r), name="acc")
    c = te.compute((m, n), lambda i, j: acc[i, j].astype("float16"), name=c_name)
    func = te.create_prim_func([a, b, c]).with_attr("global_symbol", "mugraph_tvm_gemm")
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("acc")
    i, j, kk = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [None, bm // tm, tm])
    j0, j1, j2 = sch.split(j, [None, bn // tn, tn])
    k0, k1 = sch.split(kk, [None, bk])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    # Accumulate in registers; the f16 cast happens once, as the registers are stored.
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, j1)
    sch.reverse_compute_inline(sch.get_sblock(c_name))
    for operand in (0, 1):
        shared = sch.cache_read(block, operand, "shared")
        sch.compute_at(shared, k0)
        fused = sch.fuse(*sch.get_loops(shared)[-2:])
        _, ty, tx = sch.split(fused, [None, bm // tm, bn // tn])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    sch.decompose_reduction(block, k0)
    return sch.mod, ((n // bn, m // bm, 1), (bn // tn, bm // tm, 1))


def members(family, program, command, plant_wrong=False):
    if family != "matmul":
        raise ValueError(f"no TVM kernel for the family '{family}' (GEMMs only)")
    if plant_wrong:
        raise ValueError("--plant-wrong plants a Triton member")
    tvm, s_tir, te = _tvm()
    a, b = program.inputs
    if a.layout != "row_major" or b.layout != "row_major" or len(a.shape) != 2:
        raise ValueError(f"{program.path}: the TVM GEMMs take row-major 2-D operands")
    m, k = a.shape
    n = b.shape[1]
    out = program.output_names[0]
    for tiling in _TILINGS:
        bm, bn, bk, tm, tn = tiling
        if m % bm or n % bn or k % bk or (bm == 16) != (m <= 16):
            continue
        mod, (grid, block) = _schedule(tvm, s_tir, te, m, n, k, (a.name, b.name, out), tiling)
        built = tvm.compile(mod, target=tvm.target.Target({"kind": "cuda", "arch": "sm_90"}))
        source = built.mod.imports[0].inspect_source()
        signature = re.search(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\(([^)]*)\)', source)
        entry = signature.group(1)
        # TVM names each pointer parameter after its buffer: "<tensor>_ptr".
        params = [p.split()[-1].removesuffix("_ptr") for p in signature.group(2).split(",")]
        label = "tvm_" + "_".join(str(t) for t in tiling)
        text = (f"// TVM {tvm.__version__} GEMM for {program.name}: TE compute scheduled with\n"
                f"// s_tir.Schedule, tiles BM, BN, BK, TM, TN = {tiling}; tvm.compile for cuda.\n"
                + source)
        with tempfile.TemporaryDirectory() as scratch:
            with open(os.path.join(scratch, "kernel.cu"), "w") as f:
                f.write(text)
            flags = ["-arch=sm_90", "-ptx", "kernel.cu", "-o", "sm_90.ptx"]
            done = subprocess.run([os.path.join(CUDA_HOME, "bin", "nvcc"), "-O3"] + flags,
                                  cwd=scratch, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError("nvcc failed on TVM's CUDA:\n" + done.stderr[-3000:])
            with open(os.path.join(scratch, "sm_90.ptx")) as f:
                ptx = f.read()
        launch = Kernel(entry, grid, block, 0,
                        [(p, "write" if p == out else "read") for p in params])
        info = {"compiler": "tvm", "version": tvm.__version__, "language": "cuda",
                "command": command + f" # tiles {tiling}; nvcc -O3 " + " ".join(flags)}
        yield label, [launch], ptx, "kernel.cu", text, info, ()
