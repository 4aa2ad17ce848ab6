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
  4. the GraphModule with those subgraphs replaced by `mugraph::launch` runs from then on.
An op we do not map stays in PyTorch; any failure falls back to the eager graph with a warning.
"""
import functools
import sys
import warnings

import torch

from . import _capi, fx_graph, optimize, report, substitute


# Every graph's report, in compile order: what tools and tests read after a compile.
REPORTS = []


class Config:
    def __init__(self, time_limit=60, max_variants=4, profile=None, verbose=True,
                 time_subgraphs=True, only_faster=True, target="sm_90"):
        self.search = optimize.Options(time_limit=time_limit, max_variants=max_variants,
                                       profile=torch.cuda.is_available() if profile is None
                                       else profile)
        self.verbose = verbose
        self.time_subgraphs = time_subgraphs or only_faster
        self.only_faster = only_faster  # a subgraph PyTorch runs faster stays in PyTorch
        self.target = target


def _log(config, line):
    if config.verbose:
        print(f"mugraph: {line}", file=sys.stderr, flush=True)


def _target(config):
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return "sm_90" if (major, minor) >= (9, 0) else "sm_80"
    return config.target


class CompiledGraph:
    """One aten graph: eager on its first call (which checks the variants), optimized after."""

    def __init__(self, gm, config, graph_report):
        self.gm = gm
        self.config = config
        self.report = graph_report
        self.optimized = None

    def __call__(self, *args):
        if self.optimized is None:
            try:
                self.optimized, outputs = substitute.check_and_substitute(
                    self.gm, list(args), self.report, self.config)
                report.print_report(self.report, self.config.verbose)
                return outputs
            except Exception as e:  # never wrong, never stuck: eager with a warning
                warnings.warn(f"mugraph: substitution failed, running eagerly: {e}")
                self.optimized = self.gm
        if self.optimized is self.gm:
            return self.gm(*args)
        try:
            return self.optimized(*args)
        except Exception as e:  # a substituted graph that cannot run falls back for good
            warnings.warn(f"mugraph: the optimized graph failed, running eagerly from now: {e}")
            self.optimized = self.gm
            return self.gm(*args)


def compile_graph(gm, example_inputs, config):
    """The aten-level GraphModule's compiled form (a callable on the same arguments)."""
    try:
        graph, writer = fx_graph.to_graph_json(gm)
        partition = _capi.partition(graph)
        graph_report = report.GraphReport(gm, writer, partition)
        REPORTS.append(graph_report)
        target = _target(config)
        subgraphs = partition["subgraphs"]
        for i, s in enumerate(subgraphs):
            label = f"[{i + 1}/{len(subgraphs)}] {s['name']}"
            _log(config, f"{label}: {len(s['nodes'])} nodes, program {s['canonical_hash']}")
            entry, result, cached = optimize.variants_for(
                s["canonical_program_text"], s["canonical_hash"], target, config.search)
            graph_report.searched(s, entry, result, cached)
            _log(config, f"{label}: " + report.search_line(result, cached))
        return CompiledGraph(gm, config, graph_report)
    except Exception as e:
        warnings.warn(f"mugraph: compile failed, running eagerly: {e}")
        return gm


def mugraph_backend(gm, example_inputs, **options):
    """The backend torch.compile finds by name (entry point torch_dynamo_backends)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    config = Config(**options)

    def forward_compiler(aten_gm, aten_inputs):
        compiled = compile_graph(aten_gm, aten_inputs, config)
        return make_boxed_func(compiled)

    return aot_autograd(fw_compiler=forward_compiler)(gm, example_inputs)


def compile(model, example_inputs=None, **options):
    """Ahead of time: the model compiled with the mugraph backend; with example inputs, it is
    run once on them, so the search, the checks and the substitution happen now."""
    backend = functools.partial(mugraph_backend, **options)
    compiled = torch.compile(model, backend=backend, dynamic=False)
    if example_inputs is not None:
        with torch.no_grad():
            compiled(*example_inputs)
    return compiled
