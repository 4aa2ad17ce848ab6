"""The torch.compile backend: `torch.compile(model, backend="mugraph")`.

Dynamo hands over a graph; AOTAutograd lowers it to aten ops; then, per graph:
  1. fx_graph writes it in the partitioner's vocabulary and the C++ partitioner (the same one
     `mugraph superoptimize model.onnx` uses) cuts it into subgraphs, listing every node it
     leaves to PyTorch with the reason;
  2. each subgraph's program is superoptimized, or read from the cache (cache.py);
  3. on the first call, the graph runs eagerly with every value recorded; each subgraph's
     variants are launched on those values and the first whose outputs match PyTorch's is
     used (substitute.py) where it runs faster than PyTorch's own nodes (timing.py); the rest
     fall back, with the reason in the report;
  4. what stays in PyTorch is compiled by TorchInductor with the torch.compile mode's settings
     (rest.py; or runs eagerly, rest="eager"), and the graph is timed whole with and without
     our kernels: the faster runs from then on, so a compile never makes the model slower
     than `torch.compile` with that mode, as measured on the first call's values.
An op we do not map stays in PyTorch; any failure falls back to PyTorch with a warning.

With dynamic shapes (a DynamicCache's growing length, torch.compile's automatic dynamic or
dynamic=True), a symbolic size is a dynamic dim of the programs up to `max_length`
(fx_dims.py): one search, and kernels that take the length at each launch, serve every step;
the graph is guarded on the range, and the rest is compiled for the symbolic sizes.
"""
import functools
import sys
import time
import warnings

import torch

from . import _capi, fx_graph, optimize, report, substitute, timing
from .rest import Rest


# Every graph's report, in compile order: what tools and tests read after a compile.
REPORTS = []


class Config:
    def __init__(self, time_limit=60, max_variants=4, profile=None, verbose=True,
                 time_subgraphs=True, only_faster=True, target="sm_90", rest="inductor",
                 end_to_end=True, mode=None, inductor_options=None,
                 max_length=fx_graph.DEFAULT_MAX_LENGTH):
        self.search = optimize.Options(time_limit=time_limit, max_variants=max_variants,
                                       profile=torch.cuda.is_available() if profile is None
                                       else profile)
        self.verbose = verbose
        self.time_subgraphs = time_subgraphs or only_faster
        self.only_faster = only_faster  # a subgraph PyTorch runs faster stays in PyTorch
        self.target = target
        self.rest = Rest(rest, mode, inductor_options)
        self.end_to_end = end_to_end  # keep our kernels only if the whole graph is faster
        # A dynamic size (torch.compile's dynamic shapes: a growing KV cache) is a dynamic dim
        # of the programs up to this length; the graph is guarded on it (fx_dims.py).
        self.max_length = max_length

    @classmethod
    def from_torch_compile(cls, mode=None, options=None, **keywords):
        """torch.compile(backend="mugraph", mode=M) or (options=O): O's keys that are Config's
        parameters configure mugraph ("mode" among them, since torch.compile takes a mode or
        options, not both), the others are Inductor settings for the rest."""
        import inspect

        ours = set(inspect.signature(cls.__init__).parameters) - {"self"}
        options = dict(options or {})
        keywords.update({k: options.pop(k) for k in list(options) if k in ours})
        unknown = set(keywords) - ours
        if unknown:
            raise TypeError(f"mugraph: unknown option(s) {', '.join(sorted(unknown))}")
        if options:
            keywords["inductor_options"] = {**keywords.get("inductor_options", {}), **options}
        keywords.setdefault("mode", mode)
        return cls(**keywords)


def _log(config, line):
    if config.verbose:
        print(f"mugraph: {line}", file=sys.stderr, flush=True)


def _target(config):
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return "sm_90" if (major, minor) >= (9, 0) else "sm_80"
    return config.target


class CompiledGraph:
    """One aten graph: eager on its first call (which checks the variants and decides what
    runs), then the rest compiled, with our kernels where the whole graph is faster with them."""

    def __init__(self, gm, config, graph_report, example_inputs=None):
        self.gm = gm
        self.config = config
        self.report = graph_report
        self.runner = None  # what runs from the second call on
        # A graph with symbolic sizes is compiled for them (AOTAutograd's fake inputs), not for
        # the first call's: it serves every length its guards admit.
        self.symbolic_inputs = example_inputs if _symbolic(example_inputs) else None

    def __call__(self, *args):
        if self.runner is None:
            try:
                with self.report.phase("check_and_substitute"):
                    substituted, outputs = substitute.check_and_substitute(
                        self.gm, list(args), self.report, self.config)
            except Exception as e:  # never wrong, never stuck: PyTorch with a warning
                warnings.warn(f"mugraph: substitution failed, running in PyTorch: {e}")
                substituted, outputs = None, None
            self.runner = self._finish(substituted, args, outputs)
            report.print_report(self.report, self.config.verbose)
            if outputs is not None:
                return outputs
        try:
            return self.runner(*args)
        except Exception as e:  # a compiled graph that cannot run falls back for good
            if self.runner is self.gm:
                raise
            warnings.warn(f"mugraph: the compiled graph failed, running eagerly from now: {e}")
            self.runner = self.gm
            return self.gm(*args)

    def _finish(self, substituted, args, expected=None):
        """The callable that runs the graph from now on: the rest compiled (rest.py), with our
        kernels where the whole graph gives PyTorch's outputs (`expected`, this call's, where
        given) and measures faster with them."""
        rest = self.config.rest
        # The written arguments' values before the first call: used once by the check below,
        # not kept (a KV cache's copy would live as long as the report).
        inputs_before, self.report.inputs_before = self.report.inputs_before, []
        earlier = self.report.decided_before() if substituted is not None else None
        if earlier and self.config.end_to_end and torch.cuda.is_available():
            # The same graph with the same variants was timed whole on an earlier compile:
            # only the side that won is compiled.
            runs = earlier["runs"]
            chosen, why = self._compiled(substituted if runs == "mugraph" else self.gm, args,
                                         "the graph")
            self.report.finished(runs, rest.describe(), compiled=why is None, why=why,
                                 pytorch_us=earlier["pytorch_us"], ours_us=earlier["ours_us"],
                                 earlier=True)
            return chosen
        pytorch, why = self._compiled(self.gm, args, "the graph")
        if substituted is None or not self.report.any_used():
            self.report.finished("pytorch", rest.describe(), compiled=why is None, why=why)
            if substituted is not None and why is None:
                self.report.remember()  # the subgraphs' times: not measured again next time
            return pytorch
        ours, why_ours = self._compiled(substituted, args, "the graph with our kernels")
        why = why or why_ours
        mismatch = substitute.outputs_mismatch(ours, args, expected, inputs_before) \
            if why is None else None
        if mismatch:  # never wrong: each subgraph matched, the graph as a whole did not
            self.report.finished("pytorch", rest.describe(), compiled=True, why=(
                f"the graph with our kernels does not match PyTorch: {mismatch}"))
            return pytorch
        if not (self.config.end_to_end and torch.cuda.is_available()):
            self.report.finished("mugraph", rest.describe(), compiled=why is None, why=why)
            if why is None:
                self.report.remember()  # the subgraphs' times and variants, for next time
            return ours
        with self.report.phase("whole_graph_timing"):
            (pytorch_us, ours_us), rounds_us = timing.interleaved_us(
                [lambda: pytorch(*args), lambda: ours(*args)])
            shorter = self._shorter_arguments(args)
            try:
                if shorter:  # a step at a new length costs what a replay hides (timing.py)
                    at_new_lengths = (timing.new_lengths_us(pytorch, shorter),
                                      timing.new_lengths_us(ours, shorter))
                    pytorch_us = max(pytorch_us, at_new_lengths[0])
                    ours_us = max(ours_us, at_new_lengths[1])
            except Exception as e:  # timing is a report, never a reason to fail
                warnings.warn(f"mugraph: timing the graph at new lengths failed: {e}")
        chosen = "mugraph" if ours_us < pytorch_us else "pytorch"
        self.report.finished(chosen, rest.describe(), compiled=why is None, why=why,
                             pytorch_us=pytorch_us, ours_us=ours_us, rounds_us=rounds_us)
        if why is None:
            self.report.remember()
        return ours if chosen == "mugraph" else pytorch

    def _shorter_arguments(self, args):
        """The graph's arguments at a few shorter lengths (timing.shorter_sets), for a graph
        with symbolic sizes that writes none of its inputs (a write into a view of a shorter
        cache would change the model's state); None otherwise."""
        if self.symbolic_inputs is None:
            return None
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n in self.gm.graph.nodes:
            if n.target is torch.ops.aten.copy_.default and n.args[0] in placeholders:
                return None
        return timing.shorter_sets(list(args), placeholders)

    def _compiled(self, gm, args, what):
        """(gm compiled by the rest's runner, None), or (gm, why) where that failed."""
        rest = self.config.rest
        if rest.runner == "eager":
            return gm, None
        try:
            with self.report.phase("rest_compile"):
                return rest.compile(gm, self.symbolic_inputs or args), None
        except Exception as e:
            warnings.warn(f"mugraph: {rest.describe()} failed on {what}, running it eagerly: {e}")
            return gm, f"{rest.runner} failed on {what}: {e}"


def _symbolic(inputs):
    """Whether any of the graph's inputs has a symbolic size or is a symbolic int."""
    for x in inputs or []:
        sizes = x.shape if isinstance(x, torch.Tensor) else [x]
        if any(isinstance(d, torch.SymInt) for d in sizes):
            return True
    return False


def _decisions(graph, config):
    """The cache file of this graph's measured decisions on this device, or None off a GPU."""
    if not torch.cuda.is_available():
        return None
    import json

    from . import cache

    return cache.decision_path(_capi.version(), json.dumps(graph, sort_keys=True),
                               torch.cuda.get_device_name(), torch.__version__,
                               config.rest.describe(), str(config.only_faster),
                               str(config.end_to_end))


def compile_graph(gm, example_inputs, config):
    """The aten-level GraphModule's compiled form (a callable on the same arguments)."""
    try:
        start = time.monotonic()
        graph, writer = fx_graph.to_graph_json(gm, max_length=config.max_length)
        partition = _capi.partition(graph)
        if graph.get("dims"):
            writer.dims.guard_ranges(fx_graph.program_dims(partition))
            _log(config, "dynamic dims: " + ", ".join(
                f"{d['name']} in [{d['min']}, {d['max']}]" for d in graph["dims"]))
        graph_report = report.GraphReport(gm, writer, partition, _decisions(graph, config))
        graph_report.phases["partition"] = time.monotonic() - start
        REPORTS.append(graph_report)
        target = _target(config)
        subgraphs = partition["subgraphs"]
        for i, s in enumerate(subgraphs):
            label = f"[{i + 1}/{len(subgraphs)}] {s['name']}"
            _log(config, f"{label}: {len(s['nodes'])} nodes, program {s['canonical_hash']}")
            with graph_report.phase("search_or_cache"):
                entry, result, cached = optimize.variants_for(
                    s["canonical_program_text"], s["canonical_hash"], target, config.search)
            graph_report.searched(s, entry, result, cached)
            _log(config, f"{label}: " + report.search_line(result, cached))
        return CompiledGraph(gm, config, graph_report, example_inputs)
    except Exception as e:
        warnings.warn(f"mugraph: compile failed, running eagerly: {e}")
        return gm


def aot(forward_compiler):
    """AOTAutograd as the backend applies it, handing forward_compiler the aten graph.

    An input the model mutates (a KV cache's index_copy_) stays mutated in the graph, as a
    final copy_ into the input, as torch.compile's own Inductor backend keeps it: Inductor then
    writes the one new position in place. Without it the graph returns a new copy of every
    cache, and a wrapper outside the graph copies each back, reading and writing the whole
    cache twice per step."""
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=forward_compiler, keep_inference_input_mutations=True)


def mugraph_backend(gm, example_inputs, **options):
    """The backend torch.compile finds by name (entry point torch_dynamo_backends)."""
    from functorch.compile import make_boxed_func

    config = Config.from_torch_compile(**options)

    def forward_compiler(aten_gm, aten_inputs):
        _tensorify_python_scalars(aten_gm, aten_inputs)
        compiled = compile_graph(aten_gm, aten_inputs, config)
        return make_boxed_func(compiled)

    return aot(forward_compiler)(gm, example_inputs)


def _tensorify_python_scalars(gm, example_inputs):
    """What Inductor does to a graph before compiling it, done while Dynamo still traces: with
    dynamic=True a Python float (an eps, a scale) is a symbolic input, and the pass that turns
    it into a tensor may ask Dynamo to trace again with it specialized (an exception Dynamo
    catches). Done later, when the rest is compiled on the first call, nothing could restart,
    and Inductor would fail on the graph."""
    from torch._guards import detect_fake_mode

    fake_mode = detect_fake_mode(example_inputs)
    if fake_mode is None or fake_mode.shape_env is None:
        return
    try:
        from torch.fx.passes._tensorify_python_scalars import tensorify_python_scalars
    except ImportError:  # a PyTorch without the pass has no symbolic floats either
        return
    tensorify_python_scalars(gm, fake_mode.shape_env, fake_mode)


def compile(model, example_inputs=None, dynamic=False, **options):
    """Ahead of time: the model compiled with the mugraph backend; with example inputs, it is
    run once on them, so the search, the checks and the substitution happen now. `dynamic` is
    torch.compile's: False compiles each new shape (the default: every subgraph searched at
    its real sizes), None or True lets sizes that change (a DynamicCache's length) be dynamic
    dims of the programs, searched once for every length up to `max_length`."""
    backend = functools.partial(mugraph_backend, **options)
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    if example_inputs is not None:
        with torch.no_grad():
            compiled(*example_inputs)
    return compiled
