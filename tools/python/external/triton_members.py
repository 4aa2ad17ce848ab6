"""Triton members: the kernels of triton_kernels.py specialized to a class's shapes, compiled
for sm_90 with an explicit GPUTarget (no GPU needed), PTX taken from the compiler.

Triton appends two pointer parameters to every kernel it compiles (global and profile
scratch). Our kernels need neither (the compiler reports 0 bytes for both), but the launch
ABI lists them anyway, bound to workspace tensors, so a launcher passes exactly the
parameters the PTX declares."""
import inspect

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from . import triton_kernels
from .member_folder import Kernel
from .program_file import Tensor

TARGET = GPUTarget("cuda", 90, 32)
PTX_VERSION = 90
SCRATCH = [Tensor("triton_global_scratch", "f32", [1]),
           Tensor("triton_profile_scratch", "f32", [1])]


class Config:
    def __init__(self, tiles, warps, stages):
        self.tiles, self.warps, self.stages = tiles, warps, stages

    def label(self):
        return "_".join(f"{k}{v}" for k, v in self.tiles.items()) + \
            f"_w{self.warps}_s{self.stages}"


def _gemm_configs(m, n, k):
    small_m = [Config(dict(BM=16, BN=64, BK=128), 4, 4),
               Config(dict(BM=16, BN=128, BK=64), 4, 3),
               Config(dict(BM=16, BN=256, BK=64), 8, 3)]
    large = [Config(dict(BM=128, BN=128, BK=64), 8, 3),
             Config(dict(BM=128, BN=256, BK=64), 8, 3),
             Config(dict(BM=64, BN=128, BK=32), 4, 4)]
    configs = small_m if m <= 16 else large
    return [c for c in configs
            if m % c.tiles["BM"] == 0 and n % c.tiles["BN"] == 0 and k % c.tiles["BK"] == 0]


def _recipe(family, program):
    """(kernel, its pointer parameters as tensor names, constexprs, grid(config), configs)."""
    inputs = program.inputs
    out = program.output_names[0]
    if family == "matmul":
        a, b = inputs
        m, k = a.shape[-2:]
        n = b.shape[-1]
        shapes = dict(M=m, N=n, K=k)
        configs = _gemm_configs(m, n, k)
        for c in configs:
            c.tiles["GROUP"] = 8 if m >= 128 else 1
        grid = lambda c: ((m // c.tiles["BM"]) * (n // c.tiles["BN"]), 1, 1)
        return triton_kernels.matmul, [out, a.name, b.name], shapes, grid, configs
    if family in ("gated_mlp", "rmsnorm_matmul", "lora"):
        x = inputs[0]
        m, k = x.shape
        n = inputs[1].shape[-1]
        shapes = dict(M=m, N=n, K=k)
        kernel = getattr(triton_kernels, family)
        if family == "lora":
            shapes["R"] = inputs[2].shape[-1]
        configs = _gemm_configs(m, n, k)
        grid = lambda c: (n // c.tiles["BN"], m // c.tiles["BM"], 1)
        return kernel, [out] + [t.name for t in inputs], shapes, grid, configs
    if family == "attention":
        q, key, v = inputs
        heads, rows, d = q.shape
        keys = v.shape[-2]
        by_key = key.layout == "transposed"
        scale = 1.0
        for line in program.text.splitlines():
            if "scale(" in line and "c=" in line:
                scale = float(line.split("c=")[1].split(")")[0])
        group_rows = rows
        shapes = dict(ROWS=rows, GROUP_ROWS=group_rows, KEYS=keys, D=d, SCALE=scale,
                      K_STORED_BY_KEY=by_key)
        if rows < 16:
            configs = [Config(dict(BM=16, BN=64), 4, 3), Config(dict(BM=16, BN=128), 4, 3)]
        else:
            configs = [Config(dict(BM=64, BN=64), 4, 3), Config(dict(BM=128, BN=64), 8, 3),
                       Config(dict(BM=64, BN=128), 4, 3)]
        configs = [c for c in configs if keys % c.tiles["BN"] == 0
                   and (rows < 16 or rows % c.tiles["BM"] == 0)]
        grid = lambda c: (max(1, rows // c.tiles["BM"]), heads, 1)
        return triton_kernels.attention, [out, q.name, key.name, v.name], shapes, grid, configs
    raise ValueError(f"no Triton kernel for the family '{family}'")


def compile_kernel(kernel, pointers, constexprs, config):
    signature = {name: "*fp16" for name in list(inspect.signature(kernel.fn).parameters)[:len(pointers)]}
    for name in constexprs:
        signature[name] = "constexpr"
    for name in config.tiles:
        signature[name] = "constexpr"
    constants = dict(constexprs, **config.tiles)
    # Every pointer is 16-byte aligned (tensors come from the allocator), which lets Triton
    # vectorize its loads and stores.
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(pointers))}
    source = ASTSource(kernel, signature, constants, attrs)
    # PTX ISA 9.0: what CUDA 13.0 drivers load (the GPU machines', and the ISA our NVRTC writes).
    # Triton's default is its own, newer toolchain's ISA, which those drivers refuse.
    return triton.compile(source, target=TARGET,
                          options={"num_warps": config.warps, "num_stages": config.stages,
                                   "ptx_version": PTX_VERSION}), constants


def members(family, program, command, plant_wrong=False):
    """Yields (label, kernels, ptx, source_name, source_text, source, workspace) per config."""
    kernel, pointers, constexprs, grid, configs = _recipe(family, program)
    if not configs:
        raise ValueError(f"{program.path}: no Triton tile configuration divides its shapes")
    if plant_wrong:
        # A deliberately wrong member for testing the checks: its loop over K stops one tile
        # short, so it computes a different function behind a correct launch ABI.
        configs = configs[:1]
        constexprs = dict(constexprs, K=constexprs["K"] - configs[0].tiles["BK"])
    for config in configs:
        compiled, constants = compile_kernel(kernel, pointers, constexprs, config)
        meta = compiled.metadata
        if meta.global_scratch_size or meta.profile_scratch_size:
            raise ValueError(f"{kernel.fn.__name__} {config.label()}: needs Triton scratch memory,"
                             " which this generator does not size")
        params = [(pointers[0], "write")] + [(p, "read") for p in pointers[1:]]
        params += [(t.name, "write") for t in SCRATCH]
        launch = Kernel(meta.name, grid(config), (32 * meta.num_warps, 1, 1), meta.shared,
                        params)
        constants_text = ", ".join(f"{k}={v!r}" for k, v in constants.items())
        text = (f"# Triton {triton.__version__} kernel for {program.name}, compiled with\n"
                f"#   triton.compile(ASTSource({kernel.fn.__name__}, constexprs: {constants_text}),\n"
                f"#                  target=GPUTarget('cuda', 90, 32), num_warps={config.warps},"
                f" num_stages={config.stages})\n"
                f"# Parameters: {', '.join(pointers)}, then Triton's global and profile scratch.\n"
                "import triton\nimport triton.language as tl\n\n\n"
                + inspect.getsource(kernel.fn))
        source = {"compiler": "triton", "version": triton.__version__, "language": "triton",
                  "command": command + f" # config {config.label()}"}
        label = ("wrong_" if plant_wrong else "") + config.label()
        yield label, [launch], compiled.asm["ptx"], "kernel.py", text, source, SCRATCH
