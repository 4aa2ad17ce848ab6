"""Checks each subgraph's variants against PyTorch on real values and puts the ones that match
into the graph as `mugraph::launch` calls.

The first call's inputs are real (weights and activations at the spreads the model produces);
every FX value is recorded while the graph runs eagerly, and a variant is used only when each
of its outputs matches the recorded one: finite where PyTorch's is, and within the dtype's
tolerance relative to the output's largest magnitude (TOLERANCE). Otherwise the next-ranked
variant is tried, and a subgraph none matches stays in PyTorch with the reason.
"""
import json
import operator
import os

import torch

from . import _capi, fx_values, kernels, optimize

# Largest |ours - PyTorch| over the output's largest |PyTorch| a variant may reach: a few units
# of the dtype's rounding after reassociated sums of hundreds of terms.
TOLERANCE = {torch.float16: 2e-2, torch.bfloat16: 6e-2, torch.float32: 2e-3}


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.values[n.name] = result
        return result


def max_relative_error(ours, theirs):
    """max|ours - theirs| / max|theirs|, inf where ours is not finite where theirs is."""
    ours, theirs = ours.float(), theirs.float()
    if not torch.equal(torch.isfinite(ours), torch.isfinite(theirs)):
        return float("inf")
    finite = torch.isfinite(theirs)
    scale = theirs[finite].abs().max().item() if finite.any() else 0.0
    diff = (ours[finite] - theirs[finite]).abs().max().item() if finite.any() else 0.0
    return diff / max(scale, 1e-30)


def _causal_mask(rows, cols, dtype, device):
    full = torch.full((rows, cols), float("-inf"), dtype=dtype, device=device)
    return torch.triu(full, 1)


def _tiled(x, tiled):
    """`times` copies of x stacked along one dim: what a subgraph with GQA's query rows folded
    reads of a mask broadcast over the heads (onnx_import/repeated_heads.h)."""
    if tiled is None:
        return x
    return torch.cat([x] * tiled["times"], dim=-tiled["dim_from_end"])


def _input_value(i, values, device):
    if isinstance(i, str):
        return values[i]
    if i[0] == "stored":  # a buffer laid out as the program reads it: its memory, dense
        return fx_values.storage_view(values[i[1]], i[2])
    if i[0] == "repeat":  # GQA's KV heads repeated for the query heads, as repeat_kv does
        return values[i[1]].repeat_interleave(i[2], dim=-3)
    if i[0] == "permute":  # SDPA's Kᵀ, read where no layout describes the view it is
        return values[i[1]].permute(i[2])
    return _causal_mask(i[1], i[2], i[3], device)


class Binding:
    """Where a subgraph's inputs come from and where its outputs go, in FX terms. A causal mask
    the program holds as causal_mask is no input: only one it reads (a non-square is_causal) is
    made here, as `triu` of -inf."""

    def __init__(self, subgraph, writer, fx_nodes):
        # FX node name, ("stored", FX node name, layout) for a buffer whose memory the program
        # reads as stored other than row-major (the partition's "buffer_layout", from the graph
        # JSON's, fx_values.stored_layout), ("causal", rows, cols, dtype), ("repeat", FX node
        # name, rep) or ("permute", FX node name, perm)
        self.inputs = []
        self.tiled = []  # per input: None, or {"dim_from_end", "times"}
        # per input: None, or the dtype the program reads a wider value at (its "cast_from":
        # OLMo 2's f32 cos times f16 q, which PyTorch computes in f32 and casts back)
        self.casts = []
        for i in subgraph["inputs"]:
            buffer = i.get("reads_buffer_of", i["onnx_value"])
            if buffer in writer.causal_masks:
                _, rows, cols, dtype = writer.causal_masks[buffer]
                self.inputs.append(("causal", rows, cols, dtype))
            elif buffer in writer.repeated_heads:
                source, rep = writer.repeated_heads[buffer]
                self.inputs.append(("repeat", source.name, rep))
            elif buffer in writer.permuted:
                source, perm = writer.permuted[buffer]
                self.inputs.append(("permute", source.name, perm))
            elif i.get("buffer_layout", "row_major") != "row_major":
                self.inputs.append(("stored", buffer, i["buffer_layout"]))
            elif buffer in fx_nodes:
                self.inputs.append(buffer)
            else:
                raise ValueError(f"reads '{buffer}', a value inside one translated aten node")
            self.tiled.append(i.get("tiled"))
            self.casts.append(fx_values.IR_DTYPES[_declared_dtype(subgraph, i["name"])]
                              if "cast_from" in i else None)
        self.outputs = []
        for o in subgraph["outputs"]:
            if o["onnx_value"] not in fx_nodes:
                raise ValueError(f"writes '{o['onnx_value']}', a value inside one aten node")
            self.outputs.append(o["onnx_value"])

    def input_values(self, values, device):
        return [_tiled(_cast(_input_value(i, values, device), c), t)
                for i, t, c in zip(self.inputs, self.tiled, self.casts)]


def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


def _declared_dtype(subgraph, name):
    """The dtype (f16, bf16, f32) the subgraph's program declares input `name` at."""
    for line in subgraph["program_text"].splitlines():
        words = line.split()
        if len(words) > 2 and words[0] == "input" and words[1] == name:
            return words[2]
    raise ValueError(f"the program declares no input '{name}'")


def output_shapes(binding, fx_nodes, tensors):
    """The FX outputs' shapes for a variant's launch: sizes, and for a size that is a dynamic
    dim (a SymInt), the name of the variant's dim whose length it is, found through an input
    of the same size (`tensors`: the variant's manifest entries, inputs first)."""
    inputs = [t for t in tensors if t["role"] == "input"]
    sources = {}  # str(size expression) -> the variant's dim
    for i, (name, tiled) in enumerate(zip(binding.inputs, binding.tiled)):
        name = name if isinstance(name, str) else name[1] if name[0] in ("repeat", "stored") \
            else None
        if name is None or tiled is not None or i >= len(inputs):
            continue
        shape = _meta_shape(fx_nodes[name])
        for dim in filter(None, kernels.stored_dim_names(inputs[i])):
            size = shape[kernels.fx_axis(shape, inputs[i], dim)]
            if _symbolic(size):
                sources.setdefault(str(size.node.expr), dim)
    shapes = []
    for o in binding.outputs:
        shape = []
        for size in _meta_shape(fx_nodes[o]):
            if not _symbolic(size):
                shape.append(int(size))
            elif str(size.node.expr) in sources:
                shape.append(sources[str(size.node.expr)])
            else:
                raise ValueError(f"{o}'s length {size} is the length of none of its inputs")
        shapes.append(shape)
    return shapes


def _meta_shape(node):
    val = node.meta.get("val")
    return list(val.shape) if isinstance(val, torch.Tensor) else []


def _symbolic(size):
    return isinstance(size, torch.SymInt) and not size.node.expr.is_number


def _loaded_variant(directory, binding, fx_nodes, expected):
    """The variant at `directory`, bound to the FX outputs: their concrete shapes and strides,
    or for kernels that take the lengths of dynamic dims, shapes naming the dims."""
    variant = kernels.loaded(directory)
    if variant.dims:
        return kernels.LoadedVariant(directory, output_shapes(binding, fx_nodes, variant.tensors),
                                     [list(e.stride()) for e in expected])
    return kernels.LoadedVariant(directory, [list(e.shape) for e in expected],
                                 [list(e.stride()) for e in expected])


def _choose_variant(s, binding, values, graph_report, fx_nodes, measure=False):
    """The variant to run for subgraph s: (registry key, variant, its error), or (None, why).

    The first variant, in the search's order, that matches PyTorch on the recorded values;
    except where that order is the cost model's (a search that had no GPU to time on) and
    `measure` is set: then every variant that matches is timed here on this GPU, the way the
    subgraph itself is timed (timing.replay_us), and the fastest is used (each one's time is in
    the report's `variants_us`). A later compile of the same graph takes the variant this one
    chose, without timing the others again."""
    entry, result = graph_report.entries[s["name"]]
    expected = [values[o] for o in binding.outputs]
    if not all(isinstance(e, torch.Tensor) and e.is_cuda for e in expected):
        return None, "its values are not CUDA tensors"
    inputs = binding.input_values(values, expected[0].device)
    reasons = []
    dispatch = _dispatch(entry, result, binding, fx_nodes, expected, graph_report)
    if dispatch is not None:
        # every variant of the dispatch runs at this length, so each is checked here
        worst = 0.0
        for name, loaded in dispatch.variants.items():
            worst = max(worst, _matches(loaded, inputs, expected, name, reasons))
        if worst <= TOLERANCE.get(expected[0].dtype, 2e-2):
            key = f"{s['name']}:dispatch"
            kernels.register(key, dispatch)
            return (key, {"name": dispatch.name, "hash": dispatch.name}, worst), None
    variants = list(result.get("variants", []))
    before = graph_report.variant_before(s["name"])
    ranked_unmeasured = not str(result.get("ranked_by", "")).startswith("measured")
    if any(v["name"] == before for v in variants):
        variants.sort(key=lambda v: v["name"] != before)  # stable: the rest keep their order
        measure = False
    measure = measure and ranked_unmeasured and len(variants) > 1
    matching = []
    for v in variants:
        try:
            with graph_report.phase("check_and_substitute/load_variants"):
                loaded = _loaded_variant(optimize.variant_directory(entry, v["name"]), binding,
                                         fx_nodes, expected)
        except Exception as e:  # a variant that cannot run here is skipped, with the reason
            reasons.append(f"{v['name']}: {e}")
            continue
        worst = _matches(loaded, inputs, expected, v["name"], reasons)
        if worst <= TOLERANCE.get(expected[0].dtype, 2e-2):
            matching.append((v, worst, loaded))
            if not measure:
                break
    if matching:
        if len(matching) > 1:
            matching = _fastest_first(s, matching, inputs, graph_report)
        v, worst, loaded = matching[0]
        key = f"{s['name']}:{v['name']}"
        kernels.register(key, loaded)
        return (key, v, worst), None
    if not result.get("variants"):
        return None, f"no verified variant ({result.get('no_variants', 'none found')})"
    return None, "no variant matches PyTorch: " + "; ".join(reasons)


def _fastest_first(s, matching, inputs, graph_report):
    """The matching (variant, error, loaded) sorted by their time on this GPU, each recorded in
    the report; a variant that fails to run under a CUDA graph is dropped, with the reason."""
    from . import timing

    dense = [x.contiguous() for x in inputs]
    timed = []
    with graph_report.phase("check_and_substitute/time_variants"):
        for v, worst, loaded in matching:
            try:
                us = timing.replay_us(lambda: loaded.run(dense))
            except Exception as e:  # noqa: BLE001: reported, and the variant is not used
                graph_report.variant_timed(s["name"], v["name"], None, str(e))
                continue
            graph_report.variant_timed(s["name"], v["name"], us)
            timed.append((us, v, worst, loaded))
    timed.sort(key=lambda t: t[0])
    return [t[1:] for t in timed] or matching[:1]


def _matches(loaded, inputs, expected, name, reasons):
    """The variant's largest relative error against PyTorch's outputs on the recorded inputs
    (inf, with the reason in `reasons`, where it fails or is past the tolerance)."""
    try:
        ours = loaded.run(inputs)
        torch.cuda.synchronize()
    except Exception as e:  # a variant that cannot run here is skipped, with the reason
        reasons.append(f"{name}: {e}")
        return float("inf")
    worst = max(max_relative_error(a, b) for a, b in zip(ours, expected))
    if worst > TOLERANCE.get(expected[0].dtype, 2e-2):
        reasons.append(f"{name}: max relative error {worst:.3g}")
    return worst


def _dispatch(entry, result, binding, fx_nodes, expected, graph_report):
    """The search's dispatch over a dynamic dim's lengths (dispatch.json beside the variants:
    each bucket of lengths runs one variant), where every variant it names was kept; None
    for a static program, or where it cannot be loaded."""
    path = os.path.join(entry, "variants", "dispatch.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            spec = json.load(f)
        kept = {v["name"] for v in result.get("variants", [])}
        names = list(dict.fromkeys(b["variant"] for b in spec["buckets"]))
        if not set(names) <= kept:
            return None
        with graph_report.phase("check_and_substitute/load_variants"):
            variants = {n: _loaded_variant(optimize.variant_directory(entry, n), binding,
                                           fx_nodes, expected) for n in names}
        if not all(v.dims for v in variants.values()):
            return None
        return kernels.DispatchedVariant(spec, variants)
    except (OSError, ValueError, KeyError, _capi.MugraphError):
        return None  # the variants one by one, below


def _dense(graph, node):
    """`node`, or a contiguous clone of it placed in the graph where its value is strided
    (RoPE computed on a head-transposed view keeps the [s, h, d] order): our kernels read dense
    storage, and a copy that is a node of the graph is one Inductor fuses into the kernel that
    produces the value, where a copy inside the launch would be a kernel of its own."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.is_contiguous():
        return node
    clone = graph.call_function(torch.ops.aten.clone.default, (node,),
                                {"memory_format": torch.contiguous_format})
    clone.meta["val"] = val.contiguous()
    return clone


def _substitute(gm, s, binding, key, graph_report, replaced):
    """Replaces the subgraph by a launch; `replaced` maps the FX names of values earlier
    substitutions replaced to the nodes that now give them."""
    graph = gm.graph
    nodes = {n.name: n for n in graph.nodes}
    nodes.update(replaced)
    order = {n: i for i, n in enumerate(graph.nodes)}
    covered = [nodes[graph_report.writer.origin[name]] for name in s["nodes"]
               if graph_report.writer.origin.get(name) in nodes]
    _check_convex(covered)
    last = max(covered, key=lambda n: order[n])
    with graph.inserting_after(last):
        args = []
        for i, tiled, cast in zip(binding.inputs, binding.tiled, binding.casts):
            if isinstance(i, str):
                arg = _dense(graph, nodes[i])
            elif i[0] == "repeat":
                arg = graph.call_function(torch.ops.aten.repeat_interleave.self_int,
                                          (nodes[i[1]], i[2], -3))
            elif i[0] == "stored":
                # The memory the kernel reads, as a dense view (no copy).
                arg = graph.call_function(torch.ops.aten.transpose.int, (nodes[i[1]], -3, -2))
                arg.meta["val"] = fx_values.storage_view(nodes[i[1]].meta["val"], i[2])
                arg.meta["mugraph_storage"] = i[2]
                arg = _dense(graph, arg)
            elif i[0] == "permute":
                arg = graph.call_function(torch.ops.aten.permute.default, (nodes[i[1]], i[2]))
                arg.meta["val"] = nodes[i[1]].meta["val"].permute(i[2])
                arg = _dense(graph, arg)
            else:
                full = graph.call_function(torch.ops.aten.full.default,
                                           ([i[1], i[2]], float("-inf")),
                                           {"dtype": i[3], "device": _device_of(nodes, binding)})
                arg = graph.call_function(torch.ops.aten.triu.default, (full, 1))
            if cast is not None:  # converted as the program reads it (input_values alike)
                converted = graph.call_function(torch.ops.aten._to_copy.default, (arg,),
                                                {"dtype": cast})
                if isinstance(arg.meta.get("val"), torch.Tensor):
                    converted.meta["val"] = arg.meta["val"].to(cast)
                arg = converted
            if tiled is not None:
                arg = graph.call_function(torch.ops.aten.cat.default,
                                          ([arg] * tiled["times"], -tiled["dim_from_end"]))
            args.append(arg)
        call = graph.call_function(torch.ops.mugraph.launch.default, (key, args))
        outputs = []
        with graph.inserting_after(call):
            for j in range(len(binding.outputs)):
                outputs.append(graph.call_function(operator.getitem, (call, j)))
    for name, new in zip(binding.outputs, outputs):
        old = nodes[name]
        new.meta["val"] = old.meta.get("val")
        old.replace_all_uses_with(new)
        replaced[name] = new
    _topological_order(graph)


def _check_convex(covered):
    """A subgraph leaving to PyTorch and coming back (a path out of it and into it again)
    cannot run as one launch: ValueError, before the graph is touched."""
    members = set(covered)
    frontier = [u for n in covered for u in n.users if u not in members]
    seen = set(frontier)
    while frontier:
        n = frontier.pop()
        for u in n.users:
            if u in members:
                raise ValueError(f"{n.name}, left to PyTorch, reads a result of the subgraph "
                                 f"and feeds {u.name} in it")
            if u not in seen:
                seen.add(u)
                frontier.append(u)


def _device_of(nodes, binding):
    for i in binding.inputs:
        i = i[1] if isinstance(i, tuple) and i[0] == "stored" else i
        if isinstance(i, str) and isinstance(nodes[i].meta.get("val"), torch.Tensor):
            return nodes[i].meta["val"].device
    return torch.device("cuda")


def _topological_order(graph):
    """Reorders the nodes stably so every node follows what it reads (a substitution placed
    at a subgraph's last node may have users that came earlier)."""
    import heapq

    nodes = list(graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    waiting = {n: len(set(n.all_input_nodes)) for n in nodes}
    ready = [order[n] for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        n = nodes[heapq.heappop(ready)]
        result.append(n)
        for user in n.users:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, order[user])
    if len(result) != len(nodes):
        raise ValueError("the substitution would make a cycle")
    previous = None
    for n in result:
        if previous is not None and n.prev is not previous:
            previous.append(n)
        previous = n


def check_and_substitute(gm, args, graph_report, config):
    """(the GraphModule with matching subgraphs replaced, this call's outputs)."""
    # Its parts are phases of their own ("check_and_substitute/record", ...), so a slow
    # compile says which part it spent its time in.
    with graph_report.phase("check_and_substitute/record"):
        written = [args[i] for i in mutated_inputs(gm) if isinstance(args[i], torch.Tensor)]
        graph_report.inputs_before = [(t, t.clone()) for t in written]
        recorder = _Recorder(gm)
        outputs = recorder.run(*args)
        values = recorder.values
    fx_nodes = {n.name: n for n in gm.graph.nodes}
    chosen = []
    with graph_report.phase("check_and_substitute/check_variants"):
        for s in graph_report.partition["subgraphs"]:
            try:
                binding = Binding(s, graph_report.writer, fx_nodes)
            except ValueError as e:
                graph_report.fallback(s, str(e))
                continue
            pick, why = _choose_variant(s, binding, values, graph_report, fx_nodes,
                                        measure=config.time_subgraphs)
            if pick is None:
                graph_report.fallback(s, why)
                continue
            chosen.append((s, binding, pick))
    if config.time_subgraphs:
        from . import timing

        with graph_report.phase("check_and_substitute/time_subgraphs"):
            timing.time_subgraphs(gm, values, chosen, graph_report, config.rest)
        if config.only_faster:
            chosen = [c for c in chosen if _faster(c[0], graph_report)]
    with graph_report.phase("check_and_substitute/substitute"):
        return substituted(gm, chosen, graph_report), outputs


def substituted(gm, chosen, graph_report):
    """A copy of gm with each chosen (subgraph, Binding, (key, variant, error)) replaced by a
    `mugraph::launch` of the variant registered under key; one that cannot be is reported."""
    optimized = torch.fx.GraphModule(gm, _copy_graph(gm))
    replaced = {}
    for s, binding, (key, variant, error) in chosen:
        try:
            _substitute(optimized, s, binding, key, graph_report, replaced)
        except ValueError as e:
            graph_report.fallback(s, str(e))
            continue
        graph_report.used(s, variant, error)
    _eliminate_dead_code(optimized.graph)  # the replaced nodes, which read launch outputs too
    _outputs_only_launches_read(optimized.graph)
    _eliminate_dead_code(optimized.graph)
    optimized.recompile()
    return optimized


def mutated_inputs(gm):
    """Indices of the graph's arguments it writes in place: a KV cache, and a cache's step
    counter, which makes a second run of the graph on the same arguments a different step."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    index = {n: i for i, n in enumerate(placeholders)}
    written = set()
    for n in gm.graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if n.op != "call_function" or schema is None:
            continue
        given = dict(zip((a.name for a in schema.arguments), n.args))
        given.update(n.kwargs)
        for a in schema.arguments:
            if a.alias_info is not None and a.alias_info.is_write and a.name in given:
                base = _base_of(given[a.name])
                if base in index:
                    written.add(index[base])
    return sorted(written)


def _base_of(node):
    """The node whose storage a chain of views of `node` reads."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function":
        schema = getattr(node.target, "_schema", None)
        if schema is None or not schema.arguments or schema.arguments[0].alias_info is None:
            return node
        node = node.args[0]
    return node


def outputs_mismatch(run, args, expected, inputs_before=()):
    """Why `run(*args)` does not give the `expected` outputs within the tolerance of their
    dtype (the first output that differs), or None where it does or nothing is expected.
    `inputs_before`: (argument, its value before the expected outputs were computed) of the
    arguments the graph writes, put back first so that run takes the same step."""
    if expected is None:
        return None
    for t, before in inputs_before:
        t.copy_(before)
    got = run(*args)
    flat_got, flat_expected = _flat(got), _flat(expected)
    if len(flat_got) != len(flat_expected):
        return f"{len(flat_got)} outputs for {len(flat_expected)}"
    for i, (a, b) in enumerate(zip(flat_got, flat_expected)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            continue
        if a.shape != b.shape:
            return f"output {i} is {tuple(a.shape)}, PyTorch's {tuple(b.shape)}"
        if not b.is_floating_point():
            if not torch.equal(a, b):
                return f"output {i} differs"
            continue
        error = max_relative_error(a, b)
        if error > TOLERANCE.get(b.dtype, 2e-2):
            return f"output {i}: max relative error {error:.3g}"
    return None


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flat(item)]
    return [x]


def _eliminate_dead_code(graph):
    """The graph without the nodes whose results nothing reads, a replaced attention included:
    SDPA's aten ops carry the seeded-random tag (for their dropout), which FX's default counts
    as a side effect, so the attention a launch replaced would stay and read its inputs."""
    try:
        graph.eliminate_dead_code(is_impure_node=lambda n: n.is_impure(impure_random=False))
    except TypeError:  # an older torch, whose purity test takes no impure_random
        graph.eliminate_dead_code()


def _is_launch(node):
    return node.op == "call_function" and node.target is torch.ops.mugraph.launch.default


def _is_dense_copy(node):
    return (node.op == "call_function" and node.target is torch.ops.aten.clone.default
            and node.kwargs.get("memory_format") == torch.contiguous_format)


def _is_storage_view(node):
    """The view of a buffer `_substitute` placed for a launch that reads its memory as stored
    (a "stored" binding input)."""
    return node.op == "call_function" and "mugraph_storage" in node.meta


def _read_by_launches(node):
    """Whether only launches read `node`: directly, through the dense copy `_dense` placed for
    them, or through a storage view (and its dense copy)."""
    def fed(r):
        return _is_launch(r) or (_is_dense_copy(r) and r.users and all(
            _is_launch(w) for w in r.users))
    return node.users and all(
        fed(r) or (_is_storage_view(r) and r.users and all(fed(w) for w in r.users))
        for r in node.users)


def _drop_dense_copies(node):
    """The dense copies reading `node` replaced by `node` where its value is dense now."""
    if not node.meta["val"].is_contiguous():
        return
    for r in list(node.users):
        if _is_dense_copy(r):
            r.replace_all_uses_with(node)
            node.graph.erase_node(r)


def _outputs_only_launches_read(graph):
    """An output of a launch that only other launches read (directly, through the dense
    copy `_dense` placed for them, or as stored through a storage view) keeps the layout our
    kernel stores it in. The FX value's strides are what aten nodes downstream were traced
    with, and no aten node reads it: the copy to those strides inside the launch and the copy
    back to dense for the next launch would both be work for nothing (RoPE computed on a
    head-transposed view, read by the attention kernel, paid both; attention's result stored
    heads_transposed for the output projection, which reads that memory, would pay them too).
    The variant is registered again under a key of its own with those outputs' strides; the
    launch's fake outputs and the storage views follow."""
    for call in list(graph.nodes):
        if not _is_launch(call):
            continue
        variant = kernels.registered(call.args[0])
        if getattr(variant, "output_strides", None) is None:
            continue  # a dispatch, or a dynamic variant: outputs already as stored
        strides = [list(s) for s in variant.output_strides]
        freed = []
        for item in [u for u in call.users if u.target is operator.getitem]:
            j = item.args[1]
            if not _read_by_launches(item):
                continue
            stored = kernels.stored_strides(variant, j)
            val = item.meta.get("val")
            if stored == strides[j] or not isinstance(val, torch.Tensor):
                continue
            try:
                as_stored = val.new_empty_strided(val.shape, stored)
            except Exception:  # noqa: BLE001: no value to describe it by: left as traced
                continue
            # A reader of its memory as the framework stores it (a storage view) needs that
            # layout: where the kernel stores it otherwise (a folded GQA result, row-major),
            # the launch writes it with the FX strides once, as traced.
            if any(_is_storage_view(r) and not fx_values.storage_view(
                    as_stored, r.meta["mugraph_storage"]).is_contiguous() for r in item.users):
                continue
            item.meta["val"] = as_stored
            strides[j] = stored
            freed.append(j)
            for r in list(item.users):
                if _is_storage_view(r):
                    r.meta["val"] = fx_values.storage_view(item.meta["val"],
                                                           r.meta["mugraph_storage"])
                    _drop_dense_copies(r)
            _drop_dense_copies(item)
        if freed:
            key = kernels.with_output_strides(
                call.args[0], strides, "stored" + "".join(f"-{j}" for j in freed))
            call.args = (key,) + tuple(call.args[1:])


def _faster(s, graph_report):
    row = graph_report.subgraphs[s["name"]]
    if row.get("ours_us") and row.get("pytorch_us") and row["ours_us"] > row["pytorch_us"]:
        graph_report.fallback(s, f"PyTorch runs it faster ({row['pytorch_us']:.1f} us, ours "
                                 f"{row['ours_us']:.1f} us)")
        return False
    return True


def _copy_graph(gm):
    graph = torch.fx.Graph()
    mapping = {}
    output = graph.graph_copy(gm.graph, mapping)
    graph.output(output)
    return graph
