"""Each substituted subgraph timed both ways on the recorded values: PyTorch running the
subgraph's own aten nodes the way the rest of the graph runs (rest.py: compiled by Inductor,
or eagerly), and our variant. Both are captured into a CUDA graph and timed over replays with
CUDA events (median), each replay queued behind a spinning kernel, so neither side pays
Python's launch overhead nor the graph's submission. The whole graph is timed the
same way, with and without our kernels; both sides of a comparison are timed in turn over a few
rounds (`interleaved_us`).

A graph with dynamic sizes runs at a new length at every step of a growing cache, and a
replay at one length hides what a new length costs (cuDNN's attention builds a plan per
shape: about 20 ms a step on an H200, where its replay takes 18 us). So where a subgraph or
graph has symbolic sizes, each side is also run once at each of a few shorter lengths
(`new_lengths_us`: synchronized wall time, the median), and its time is the larger of the two
measures."""
import itertools
import statistics
import time

import torch

from . import kernels


# GPU clock cycles a kernel spins before each timed replay (about 1 ms at H100/H200 clocks):
# longer than the host takes to record the start event and submit the graph, so the GPU runs
# the replay as soon as the start event is passed. Without it an idle GPU passes the start
# event, then waits for the submission (10-15 us), and a subgraph of a few microseconds
# measures mostly that wait, on both sides alike.
BACKLOG_CYCLES = 2_000_000


def _captured(fn):
    """fn run once, then captured into a CUDA graph and replayed once."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def _replays_us(graph, repetitions):
    """µs of each of `repetitions` replays, each queued behind a spinning kernel."""
    times = []
    for _ in range(repetitions):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(BACKLOG_CYCLES)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return times


def replay_us(fn, repetitions=20):
    """Median µs of fn over CUDA-graph replays (fn runs once before the capture), each
    replay queued behind a spinning kernel so that the events time the GPU's work alone."""
    return statistics.median(_replays_us(_captured(fn), repetitions))


def interleaved_us(fns, rounds=4, repetitions=20):
    """([median µs of each fn], [[each round's median] of each fn]): every fn captured as in
    replay_us, then timed in `rounds` rounds that take the functions in turn, the order
    reversed every other round (A B, B A, A B, B A): a drift of the GPU's clocks or of a
    neighbour's load during the measurement falls on every side alike (a steady drift exactly,
    with an even number of rounds) instead of on whichever was timed second."""
    graphs = [_captured(fn) for fn in fns]
    rounds_us = [[] for _ in fns]
    for r in range(rounds):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            rounds_us[i].append(statistics.median(_replays_us(graphs[i], repetitions)))
    return [statistics.median(times) for times in rounds_us], rounds_us


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


def _as_substituted(gm, s, binding, key, chosen, graph_report):
    """The registry key of s's variant as the substituted graph will run it: an output that
    only other chosen subgraphs read keeps the layout our kernel stores it in there
    (substitute._outputs_only_launches_read), so it is timed without the copy to the FX
    strides too. Where such a reader is not used in the end, the whole graph's timing has
    the last word."""
    origin = graph_report.writer.origin
    members = {}  # FX name -> subgraph name, of every chosen subgraph
    reads = {}  # subgraph name -> the FX values its launch takes as they are
    for other, other_binding, _ in chosen:
        for name in other["nodes"]:
            if origin.get(name):
                members[origin[name]] = other["name"]
        reads[other["name"]] = {i if isinstance(i, str) else i[1]
                                for i, tiled in zip(other_binding.inputs, other_binding.tiled)
                                if (isinstance(i, str) or i[0] == "stored") and tiled is None}
    loaded = kernels.registered(key)
    if getattr(loaded, "output_strides", None) is None:
        return key
    nodes = {n.name: n for n in gm.graph.nodes}
    strides = [list(x) for x in loaded.output_strides]
    for j, o in enumerate(binding.outputs):
        readers = [members.get(u.name) for u in nodes[o].users]
        if readers and all(r not in (None, s["name"]) and o in reads[r] for r in readers):
            strides[j] = kernels.stored_strides(loaded, j)
    if strides == loaded.output_strides:
        return key
    return kernels.with_output_strides(key, strides, "timed")


def time_subgraphs(gm, values, chosen, graph_report, rest):
    for s, binding, (key, variant, error) in chosen:
        before = graph_report.measured_before(s["name"], variant["name"])
        if before:  # the same variant of the same graph, on this device, on an earlier compile
            graph_report.timed(s["name"], variant["name"], before["pytorch_us"], before["ours_us"],
                               earlier=True)
            continue
        try:
            module, names = pytorch_subgraph(gm, s, binding, graph_report.writer)
            theirs = [values[name] for name in names]
            # Dense, as the graph hands them to the launch (substitute._dense: the copy is a
            # graph node Inductor fuses into the value's producer; the whole-graph timing
            # below counts it where it cannot).
            ours = [x.contiguous() for x in binding.input_values(values, theirs[0].device)]
            pytorch = rest.compile(module, theirs)
            as_run = _as_substituted(gm, s, binding, key, chosen, graph_report)
            (pytorch_us, ours_us), _ = interleaved_us(
                [lambda: pytorch(*theirs), lambda: torch.ops.mugraph.launch(as_run, ours)])
            nodes = {n.name: n for n in gm.graph.nodes}
            theirs_at = shorter_sets(theirs, [nodes[name] for name in names])
            sources = [_fx_name(i) for i in binding.inputs]
            ours_at = None
            if None not in sources and all(t is None for t in binding.tiled):
                ours_at = shorter_sets(ours, [nodes[name] for name in sources])
            if theirs_at and ours_at:
                # PyTorch's side eagerly: Inductor compiled it for the recorded sizes only
                pytorch_us = max(pytorch_us, new_lengths_us(module, theirs_at))
                ours_us = max(ours_us, new_lengths_us(
                    lambda *x: torch.ops.mugraph.launch(key, list(x)), ours_at))
            graph_report.timed(s["name"], variant["name"], pytorch_us, ours_us)
        except Exception as e:  # timing is a report, never a reason to fail
            graph_report.subgraphs[s["name"]]["timing_error"] = str(e)


# How many calls at new lengths each side is timed over.
NEW_LENGTHS = 5
# How much shorter than the recorded length the next timed call runs: counted up over the
# process, so no measurement meets a length an earlier one ran (whose plans a library such as
# cuDNN would have kept: a subgraph timed after another would look cheaper than it is).
_SHORTER_BY = itertools.count(1)


def new_lengths_us(fn, argument_sets):
    """Median µs of fn called once on each argument set (each at a length of its own, made
    just before its call), synchronized wall time: what a step at a new length costs, host
    work included."""
    fn(*argument_sets[0]())  # whatever a first call loads
    times = []
    for make in argument_sets[1:]:
        arguments = make()
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn(*arguments)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def shorter_sets(values, nodes, count=NEW_LENGTHS):
    """`count` functions, each giving the values at a length shorter than the recorded one
    along every symbolic size (their FX nodes' metadata says which), each length one no
    earlier call of this function gave: dense copies of the tensors (compiled code asserts
    dense strides), symbolic ints lowered. None where no size is symbolic, where one is not a
    symbol plus a constant, or where a size would reach 0."""
    if nodes is None:
        return None
    plans = [_symbolic_axes(n) for n in nodes]
    if any(p is None for p in plans) or not any(plans):
        return None
    by = [next(_SHORTER_BY) for _ in range(count)]
    for value, axes in zip(values, plans):
        if isinstance(value, torch.Tensor) and any(value.shape[a] - max(by) < 1 for a in axes):
            return None

    def shorter(delta):
        result = []
        for value, axes in zip(values, plans):
            if isinstance(value, torch.Tensor) and axes:
                for axis in axes:
                    value = value.narrow(axis, 0, value.shape[axis] - delta)
                value = value.contiguous()
            elif axes:  # a symbolic int: the symbol's value
                value = value - delta
            result.append(value)
        return result

    return [lambda delta=delta: shorter(delta) for delta in by]


def _symbolic_axes(node):
    """The axes of node's value whose size is a symbol plus a constant ([0] for a symbolic
    int); None where a size is any other expression."""
    val = node.meta.get("val")
    sizes = list(val.shape) if isinstance(val, torch.Tensor) else [val]
    axes = []
    for axis, size in enumerate(sizes):
        if not isinstance(size, torch.SymInt) or size.node.expr.is_number:
            continue
        expr = size.node.expr
        if len(expr.free_symbols) != 1 or not (expr - next(iter(expr.free_symbols))).is_number:
            return None
        axes.append(axis)
    return axes


def _fx_name(binding_input):
    """The FX value a launch input is made from (a name, or a repeat of one)."""
    if isinstance(binding_input, str):
        return binding_input
    return binding_input[1] if binding_input[0] == "repeat" else None
