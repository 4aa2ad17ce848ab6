"""Each substituted subgraph timed both ways on the recorded values: PyTorch running the
subgraph's own aten nodes the way the rest of the graph runs (rest.py: compiled by Inductor,
or eagerly), and our variant. Both are captured into a CUDA graph and timed over replays with
CUDA events (median), so neither pays Python's launch overhead. The whole graph is timed the
same way, with and without our kernels (`replay_us`)."""
import statistics

import torch

from . import kernels


def replay_us(fn, repetitions=20):
    """Median µs of fn over CUDA-graph replays (fn runs once before the capture)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repetitions):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def pytorch_subgraph(gm, s, binding, writer):
    """A GraphModule of the subgraph's aten nodes, reading its inputs as placeholders."""
    nodes = {n.name: n for n in gm.graph.nodes}
    members = {writer.origin.get(name) for name in s["nodes"]}
    graph = torch.fx.Graph()
    mapping = {}
    inputs = []
    for n in gm.graph.nodes:
        if n.name not in members or n.op != "call_function":
            continue
        for m in n.all_input_nodes:
            if m not in mapping and m.name not in members:
                mapping[m] = graph.placeholder(m.name)
                inputs.append(m.name)
        mapping[n] = graph.node_copy(n, lambda m: mapping[m])
    graph.output([mapping[nodes[o]] for o in binding.outputs])
    return torch.fx.GraphModule(gm, graph), inputs


def time_subgraphs(gm, values, chosen, graph_report, rest):
    for s, binding, (key, variant, error) in chosen:
        before = graph_report.measured_before(s["name"], variant["name"])
        if before:  # the same variant of the same graph, on this device, on an earlier compile
            graph_report.timed(s["name"], before["pytorch_us"], before["ours_us"], earlier=True)
            continue
        try:
            module, names = pytorch_subgraph(gm, s, binding, graph_report.writer)
            theirs = [values[name] for name in names]
            # Dense, as the graph hands them to the launch (substitute._dense: the copy is a
            # graph node Inductor fuses into the value's producer; the whole-graph timing
            # below counts it where it cannot).
            ours = [x.contiguous() for x in binding.input_values(values, theirs[0].device)]
            pytorch = rest.compile(module, theirs)
            pytorch_us = replay_us(lambda: pytorch(*theirs))
            ours_us = replay_us(lambda: torch.ops.mugraph.launch(key, ours))
            graph_report.timed(s["name"], pytorch_us, ours_us)
        except Exception as e:  # timing is a report, never a reason to fail
            graph_report.subgraphs[s["name"]]["timing_error"] = str(e)
