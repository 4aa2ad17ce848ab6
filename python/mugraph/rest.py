"""What stays in PyTorch, and how it runs: eagerly, or compiled by TorchInductor (the default),
so a node we leave to PyTorch runs as fast as `torch.compile` would run it and our kernels
only ever replace what they beat.

`torch.compile(model, backend="mugraph", mode=M, options=O)` hands the backend M and O: the
mode's Inductor settings (`torch._inductor.list_mode_options`) apply here, and so do the keys
of O that are Inductor settings (`torch._inductor.config`). Inductor's own CUDA graphs
(`triton.cudagraphs`) stay off inside the backend: the module it returns captures into a CUDA
graph as a whole, and timing a subgraph captures one of its own.
"""
import torch

RUNNERS = ("inductor", "eager")


class Rest:
    """How the aten nodes left to PyTorch run: `compile(gm, args)` is a callable with gm's
    behaviour (gm itself for eager)."""

    def __init__(self, runner="inductor", mode=None, inductor_options=None):
        if runner not in RUNNERS:
            raise ValueError(f"mugraph: rest={runner!r}: expected one of {', '.join(RUNNERS)}")
        self.runner = runner
        self.patches = {}
        if runner == "inductor":
            from torch._inductor import list_mode_options

            self.patches.update(list_mode_options(mode) if mode else {})
            self.patches.update(inductor_options or {})
            self.patches["triton.cudagraphs"] = False
        elif mode or inductor_options:
            raise ValueError("mugraph: mode and Inductor options need rest='inductor'")

    def describe(self):
        if self.runner == "eager":
            return "eager PyTorch"
        settings = ", ".join(f"{k}={v}" for k, v in sorted(self.patches.items()))
        return f"TorchInductor ({settings})"

    def compile(self, gm, args):
        if self.runner == "eager":
            return gm
        import concurrent.futures

        # The first call runs inside the compiled frame, whose thread-local dispatch state
        # (AOTAutograd's runtime) breaks a nested trace; a fresh thread starts clean.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mugraph-rest") as pool:
            compiled = pool.submit(self._inductor, gm, [_plain(a) for a in args]).result()
        return _Unboxed(compiled)

    def _inductor(self, gm, args):
        from torch._inductor import compile as inductor_compile

        with torch.no_grad():  # an inference graph: the backend sees AOTAutograd's forward
            return inductor_compile(gm, args, options=dict(self.patches))


class _Unboxed:
    """Inductor's callable, called like the GraphModule it compiled (positional arguments)."""

    def __init__(self, compiled):
        self.compiled = compiled

    def __call__(self, *args):
        return self.compiled(*args)


def _plain(value):
    """A parameter as the plain tensor it holds (same storage): Inductor compiles the forward
    graph, which never differentiates through its inputs."""
    return value.detach() if isinstance(value, torch.Tensor) and value.requires_grad else value
