"""CUTLASS members: GEMMs described with the `nvidia-cutlass` package's cutlass_library (a
GemmOperation: tile, stages, warps, tensor-core instruction), whose emitter writes the CUDA C++
type of the kernel; compiled to PTX for sm_90 with the toolkit's nvcc (CUTLASS's headers need
more of the C++ library than NVRTC provides).

A CUTLASS kernel takes one Params struct by value, built on the host. To give the member a
launch ABI of plain pointers, the emitted kernel type is wrapped in an `extern "C"` kernel that
builds the same Params inside the kernel from compile-time shapes and runs the CUTLASS kernel
on dynamic shared memory. Grid, block and shared-memory size come from a host-only probe
compiled from the same source (it makes no CUDA call, so it runs without a GPU)."""
import os
import subprocess
import tempfile

from .member_folder import Kernel

CUDA_HOME = os.environ.get("MUGRAPH_CUDA_HOME", "/usr/local/cuda")


def _library():
    try:
        import cutlass_library
        from cutlass_library import gemm_operation, library
    except ImportError as e:
        raise SystemExit("CUTLASS members need the nvidia-cutlass package "
                         "(pip install nvidia-cutlass): " + str(e))
    include = os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include")
    version = "unknown"
    try:
        from importlib.metadata import version as package_version
        version = package_version("nvidia-cutlass")
    except Exception:  # the version is recorded when known, never guessed
        pass
    return library, gemm_operation, include, version


# (threadblock M, N, K), stages, warps per (M, N, K): tensor-op tilings that fit an sm_90
# block's shared memory; each one a member where it divides the class's shapes.
_TILINGS = [((128, 128, 32), 3, (2, 2, 1)), ((128, 256, 32), 3, (2, 4, 1)),
            ((64, 128, 32), 4, (2, 2, 1)), ((16, 128, 64), 4, (1, 4, 1)),
            ((16, 64, 64), 5, (1, 2, 1))]


def _operation(library, gemm_operation, tiling):
    shape, stages, warps = tiling
    math = library.MathInstruction([16, 8, 16], library.DataType.f16, library.DataType.f16,
                                   library.DataType.f32, library.OpcodeClass.TensorOp,
                                   library.MathOperation.multiply_add)
    tile = library.TileDescription(list(shape), stages, list(warps), math, 80, 1024)
    operand = library.TensorDescription(library.DataType.f16, library.LayoutType.RowMajor, 8)
    return gemm_operation.GemmOperation(library.GemmKind.Gemm, 80, tile, operand, operand,
                                        operand, library.DataType.f32)


_WRAPPER = """
// Wrapper: the kernel above with a launch ABI of plain pointers. Params is built in the
// kernel from the compile-time problem size (the same values the host would compute).
using Operation = {operation};
using GemmKernel = Operation::GemmKernel;
constexpr int kM = {m}, kN = {n}, kK = {k};

__host__ __device__ inline cutlass::gemm::GemmCoord tiled_shape() {{
  return Operation::ThreadblockSwizzle().get_tiled_shape(
      cutlass::gemm::GemmCoord(kM, kN, kK),
      {{GemmKernel::Mma::Shape::kM, GemmKernel::Mma::Shape::kN, GemmKernel::Mma::Shape::kK}}, 1);
}}

extern "C" __global__ void __launch_bounds__(GemmKernel::kThreadCount)
{entry}(cutlass::half_t* D, const cutlass::half_t* A, const cutlass::half_t* B) {{
  extern __shared__ __align__(16) unsigned char shared[];
  const cutlass::gemm::GemmCoord problem(kM, kN, kK);
  typename GemmKernel::Params params(
      problem, tiled_shape(), {{const_cast<cutlass::half_t*>(A), kK}},
      {{const_cast<cutlass::half_t*>(B), kN}}, {{D, kN}}, {{D, kN}},
      {{1.0f, 0.0f}});
  GemmKernel kernel;
  kernel(params, *reinterpret_cast<typename GemmKernel::SharedStorage*>(shared));
}}

#ifdef MUGRAPH_PROBE
#include <cstdio>
int main() {{
  const dim3 grid = Operation::ThreadblockSwizzle().get_grid_shape(tiled_shape());
  std::printf("%u %u %u %d %zu\\n", grid.x, grid.y, grid.z, GemmKernel::kThreadCount,
              sizeof(typename GemmKernel::SharedStorage));
  return 0;
}}
#endif
"""


def _nvcc(include, args, cwd):
    command = [os.path.join(CUDA_HOME, "bin", "nvcc"), "-std=c++17", "-I", include, "-O3",
               "--expt-relaxed-constexpr", "-w"] + args
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("nvcc failed: " + " ".join(command) + "\n" + done.stderr[-3000:])


def members(family, program, command, plant_wrong=False):
    if family != "matmul":
        raise ValueError(f"no CUTLASS kernel for the family '{family}' (GEMMs only)")
    if plant_wrong:
        raise ValueError("--plant-wrong plants a Triton member")
    library, gemm_operation, include, version = _library()
    a, b = program.inputs
    if a.layout != "row_major" or b.layout != "row_major" or len(a.shape) != 2:
        raise ValueError(f"{program.path}: the CUTLASS GEMMs take row-major 2-D operands")
    m, k = a.shape
    n = b.shape[1]
    out = program.output_names[0]
    for tiling in _TILINGS:
        (tm, tn, tk), _, _ = tiling
        if m % tm or n % tn or k % tk or (tm == 16) != (m <= 16):
            continue
        operation = _operation(library, gemm_operation, tiling)
        name = operation.procedural_name()
        entry = "mugraph_cutlass_" + name
        source = ("// CUTLASS GEMM for " + program.name + ", emitted by cutlass_library "
                  + version + " (nvidia-cutlass)\n#include <cutlass/gemm/device/gemm.h>\n"
                  + gemm_operation.EmitGemmInstance().emit(operation)
                  + _WRAPPER.format(operation="Operation_" + name, m=m, n=n, k=k, entry=entry))
        with tempfile.TemporaryDirectory() as scratch:
            with open(os.path.join(scratch, "kernel.cu"), "w") as f:
                f.write(source)
            ptx_flags = ["-arch=sm_90", "-ptx", "kernel.cu", "-o", "sm_90.ptx"]
            _nvcc(include, ptx_flags, scratch)
            _nvcc(include, ["-DMUGRAPH_PROBE", "kernel.cu", "-o", "probe"], scratch)
            probe = subprocess.run([os.path.join(scratch, "probe")], capture_output=True,
                                   text=True, check=True).stdout.split()
            with open(os.path.join(scratch, "sm_90.ptx")) as f:
                ptx = f.read()
        gx, gy, gz, threads, shared = (int(v) for v in probe)
        launch = Kernel(entry, (gx, gy, gz), (threads, 1, 1), shared,
                        [(out, "write"), (a.name, "read"), (b.name, "read")])
        info = {"compiler": "cutlass", "version": version, "language": "cuda",
                "command": command + f" # {name}; nvcc " + " ".join(ptx_flags)}
        yield name, [launch], ptx, "kernel.cu", source, info, ()
