"""Dynamic shapes through the FX front end, on the CPU: a decode loop over a transformers
DynamicCache, compiled as the backend compiles it (graph JSON, the C++ partition, the range
guards). The cache's length becomes a dynamic dim of each attention program, the same program
for every layer, and the graph is compiled once for every length up to max_length and once more
past it. Needs torch and transformers, and a build of libmugraph.so ($MUGRAPH_BUILD_DIR)."""
import re
import unittest

import torch

import model_graphs
from mugraph import _capi, fx_graph, kernels, report, rest, substitute, timing
from test_substitute_cpu import StandInVariant


class DynamicDecodeTest(unittest.TestCase):
    def test_a_growing_cache_compiles_once_per_range(self):
        from functorch.compile import make_boxed_func
        from transformers import DynamicCache

        from mugraph.backend import aot

        max_length = 20
        compiled_graphs = []  # (graph JSON, partition) per compile

        def capture(gm, example_inputs):
            graph, writer = fx_graph.to_graph_json(gm, max_length=max_length)
            partition = _capi.partition(graph)
            if graph.get("dims"):
                writer.dims.guard_ranges(fx_graph.program_dims(partition))
            compiled_graphs.append((graph, partition))
            return make_boxed_func(gm.forward)

        model = model_graphs.causal_lm("llama")
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot(capture))
        cache = DynamicCache()
        torch.manual_seed(1)
        with torch.no_grad():
            model(input_ids=torch.randint(0, 512, (1, 16)), past_key_values=cache, use_cache=True)
            lengths = []
            for _ in range(8):  # cache lengths 17 .. 24 after each step's append
                compiled(input_ids=torch.randint(0, 512, (1, 1)), past_key_values=cache,
                         use_cache=True)
                lengths.append(cache.get_seq_length())
        self.assertEqual(lengths, list(range(17, 25)))
        # 17: static (Dynamo's first compile); 18-20: one dynamic graph; 21 on: past
        # max_length, its guard fails once, and the graph for longer lengths has no dims.
        self.assertEqual(len(compiled_graphs), 3, [g.get("dims") for g, _ in compiled_graphs])
        static, dynamic, past = compiled_graphs
        self.assertNotIn("dims", static[0])
        self.assertFalse(fx_graph.program_dims(past[1]), "no program past max_length has a dim")
        attention = [s for s in dynamic[1]["subgraphs"]
                     if s["canonical_program_text"].count("matmul(") == 2]
        self.assertEqual(len(attention), 2, [s["name"] for s in dynamic[1]["subgraphs"]])
        # The key and value lengths (each layer's own symbols) are one dim; layers share one
        # canonical program, so one search serves both.
        self.assertEqual(attention[0]["canonical_hash"], attention[1]["canonical_hash"])
        program = attention[0]["canonical_program_text"]
        self.assertIn(f"dim n0 in [3, {max_length}]", program)
        self.assertEqual(program.count("n0]"), 1, program)  # V: [.., n0, d]
        self.assertIn("n0] layout=transposed", program.replace(", n0]", "n0]"), program)
        # The cache's append stays in PyTorch, with its reason.
        appends = [u for u in dynamic[1]["unsupported"] if u["node"].startswith("cat_")
                   and "cat" in u["op"]]
        self.assertTrue(appends)
        self.assertTrue(all(d["max"] == max_length for d in dynamic[0]["dims"]), dynamic[0])


def _static_and_dynamic(name):
    """(graph JSON, partition) of the model's prefill of 16 tokens, compiled static, then under
    dynamic=True (the length a dynamic dim up to 1024)."""
    from functorch.compile import make_boxed_func

    from mugraph.backend import aot

    partitions = []

    def capture(gm, example_inputs):
        graph, writer = fx_graph.to_graph_json(gm, max_length=1024)
        partitions.append((graph, _capi.partition(graph)))
        return make_boxed_func(gm.forward)

    model = model_graphs.causal_lm(name)
    for dynamic in (False, True):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot(capture), dynamic=dynamic)
        with torch.no_grad():
            compiled(input_ids=torch.randint(0, 512, (1, 16)), use_cache=False)
    return partitions


class DynamicPrefillTest(unittest.TestCase):
    def test_a_prompt_of_any_length_partitions_as_a_static_one(self):
        """A prefill under dynamic=True: the prompt's length is a dynamic dim, and the views
        between [1, n, h] and [n, h] or [1, n, heads, d] (a symbolic reshape, written with -1
        for the length), RoPE's halves (slices of the static last dim of a [.., n, d] value)
        and the casts of its tables (cos times a scaling the dynamic graph holds as a 0-d
        tensor, left to PyTorch) map as they do at a static length: the same subgraphs, each
        program's length one dim."""
        (static_graph, static), (dynamic_graph, dynamic) = _static_and_dynamic("llama")
        self.assertNotIn("dims", static_graph)
        self.assertTrue(dynamic_graph.get("dims"))
        names = [s["name"] for s in dynamic["subgraphs"]]
        self.assertEqual(len(names), len(static["subgraphs"]), names)
        texts = [s["program_text"] for s in dynamic["subgraphs"]]
        self.assertTrue(all("dim n" in t for t in texts), texts)
        # RoPE in the IR, each layer's attention one program, the projections reading the
        # prompt's rows [n, h]
        self.assertEqual(sum(t.count("rotate_half(") for t in texts), 4, names)
        self.assertEqual(sum(t.count("matmul(") == 2 and "reduce_max(" in t for t in texts), 2)
        self.assertTrue(any(re.search(r"^input \w+ f16 \[n\d+, 128\]$", t, re.M)
                            and t.count("matmul(") == 3 for t in texts), texts)
        reasons = {u["node"]: u["reason"] for u in dynamic["unsupported"]}
        self.assertFalse([n for n, r in reasons.items() if "dtype mismatch" in r], reasons)

    def test_other_architectures_partition_as_static_ones(self):
        """Gemma 2 (eager attention with a soft cap: its scores viewed [h, n, n] and back, a
        Squeeze and an Unsqueeze of symbolic shapes; scalings by 0-d tensors), GPT-2
        (LayerNorm, GELU, absolute positions; matmul's Expand to its own symbolic shape, a
        relabel), BLOOM (ALiBi through baddbmm) and OLMo 2 (f16 q and k times f32 cos and sin,
        whose scaling by a 0-d tensor PyTorch computes): as many subgraphs as static."""
        for name in ("gemma2", "gpt2", "bloom", "olmo2"):
            with self.subTest(model=name):
                (_, static), (graph, dynamic) = _static_and_dynamic(name)
                self.assertTrue(graph.get("dims"))
                self.assertEqual(len(dynamic["subgraphs"]), len(static["subgraphs"]),
                                 [s["name"] for s in dynamic["subgraphs"]])


def _declared_inputs(program):
    """Manifest-like entries of a program's inputs: dtype, layout, and per dim its size (the
    dim's max where dynamic) and the dim's name (shape_dims)."""
    maxima = {m[0]: int(m[2]) for m in re.findall(r"^dim (\w+) in \[(\d+), (\d+)\]", program, re.M)}
    entries = []
    for name, dtype, dims, layout in re.findall(
            r"^input (\w+) (\w+) \[([^\]]*)\](?: layout=(\w+))?", program, re.M):
        sizes = [d.strip() for d in dims.split(",")]
        entries.append({"name": name, "role": "input", "dtype": dtype,
                        "layout": layout or "row_major",
                        "shape": [maxima[d] if d in maxima else int(d) for d in sizes]})
        entries[-1]["bytes"] = (4 if dtype == "f32" else 2) * \
            int(torch.tensor(entries[-1]["shape"]).prod())
        if any(d in maxima for d in sizes):  # as the manifest: static tensors have none
            entries[-1]["shape_dims"] = [d if d in maxima else "" for d in sizes]
    dims = [{"name": m[0], "min": int(m[1]), "max": int(m[2])}
            for m in re.findall(r"^dim (\w+) in \[(\d+), (\d+)\]", program, re.M)]
    return entries, dims


class DynamicStandIn(StandInVariant):
    """A stand-in (the subgraph's own aten nodes) with the manifest of kernels that take the
    length: its launches read the length from the inputs, as our kernels' do."""

    def __init__(self, module, program, binding, fx_nodes, outputs):
        entries, dims = _declared_inputs(program)
        shapes = substitute.output_shapes(binding, fx_nodes, entries)
        maxima = {d["name"]: d["max"] for d in dims}
        entries += [{"name": f"y{i}", "role": "output", "dtype": "f32", "layout": "row_major",
                     "bytes": t.numel() * t.element_size(),
                     "shape": [maxima.get(d, d) for d in shape],
                     "shape_dims": [d if isinstance(d, str) else "" for d in shape]}
                    for i, (t, shape) in enumerate(zip(outputs, shapes))]
        kernels.BoundVariant.__init__(self, "stand-in", entries, shapes,
                                      [list(t.stride()) for t in outputs], dims)
        self.module = module
        self.layouts = ["row_major"] * len(outputs)  # a dynamic output stays row-major
        self.launches = 0
        self.lengths_seen = []

    def _launch(self, inputs, outputs, device, lengths):
        self.lengths_seen.append(int(lengths[0]))
        super()._launch(inputs, outputs, device, lengths)


def _recording_backend():
    """An AOT compiler that runs each graph as traced and records it: (the compiler, the
    (GraphModule, its real arguments) of every call, each GraphModule's example inputs: fake
    tensors with symbolic sizes)."""
    from functorch.compile import make_boxed_func

    calls, fakes = [], {}

    def capture(gm, example_inputs):
        fakes[gm] = list(example_inputs)

        def run(*args):
            calls.append((gm, list(args)))
            return gm(*args)
        return make_boxed_func(run)
    return capture, calls, fakes


def _with_dynamic_stand_ins(gm, args, max_length, tag):
    """`gm` with every dynamic subgraph replaced by a DynamicStandIn launch (registered under
    tag:name), the values recorded at `args`: (the substituted graph, the chosen subgraphs, the
    stand-ins)."""
    graph, writer = fx_graph.to_graph_json(gm, max_length=max_length)
    graph_report = report.GraphReport(gm, writer, _capi.partition(graph))
    recorder = substitute._Recorder(gm)
    with torch.no_grad():
        recorder.run(*args)
    fx_nodes = {n.name: n for n in gm.graph.nodes}
    chosen, stand_ins = [], []
    for s in graph_report.partition["subgraphs"]:
        graph_report.searched(s, None, {"variants": []}, False)
        if "dim " not in s["canonical_program_text"]:
            continue
        binding = substitute.Binding(s, writer, fx_nodes)
        module, names = timing.pytorch_subgraph(gm, s, binding, writer)
        variant = DynamicStandIn(module, s["canonical_program_text"], binding, fx_nodes,
                                 [recorder.values[o] for o in binding.outputs])
        variant.bind(binding, names, recorder.values)
        kernels.register(f"{tag}:{s['name']}", variant)
        stand_ins.append(variant)
        chosen.append((s, binding, (f"{tag}:{s['name']}", {"name": "stand-in"}, 0.0)))
    return substitute.substituted(gm, chosen, graph_report), chosen, stand_ins


class DynamicSubstitutionTest(unittest.TestCase):
    def test_one_launch_serves_every_length(self):
        """The attention subgraphs of the dynamic graph replaced by launches of variants that
        take the length: eager and under Inductor (which traces the launch with symbolic
        sizes through register_fake), the graph gives the original's outputs at each length."""
        from transformers import DynamicCache

        from mugraph.backend import aot

        capture, calls, fakes = _recording_backend()
        model = model_graphs.causal_lm("llama", dtype=torch.float32)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot(capture))
        cache = DynamicCache()
        with torch.no_grad():
            model(input_ids=torch.randint(0, 512, (1, 16)), past_key_values=cache, use_cache=True)
            for _ in range(4):  # 17 static; 18, 19, 20 one dynamic graph
                compiled(input_ids=torch.randint(0, 512, (1, 1)), past_key_values=cache,
                         use_cache=True)
        gm = calls[1][0]
        runs = [args for g, args in calls if g is gm]
        self.assertEqual(len(runs), 3)
        optimized, chosen, stand_ins = _with_dynamic_stand_ins(gm, runs[0], 64, "dynamic")
        self.assertEqual(len(stand_ins), 2)  # each layer's attention
        inductor = rest.Rest("inductor").compile(optimized, fakes[gm])
        for runner in (optimized, inductor):
            for variant in stand_ins:
                variant.lengths_seen = []
            for args in runs:
                with torch.no_grad():
                    expected, got = gm(*args), runner(*args)
                for a, b in zip(got, expected):
                    if isinstance(b, torch.Tensor):
                        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
            for variant in stand_ins:
                self.assertEqual(variant.lengths_seen, [18, 19, 20])
        # What the backend times a dynamic graph at (timing.shorter_sets): the recorded
        # arguments at shorter lengths, every symbolic size and symbol lowered together.
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        shorter = timing.shorter_sets(runs[0], placeholders)
        self.assertEqual(len(shorter), timing.NEW_LENGTHS)
        for variant in stand_ins:
            variant.lengths_seen = []
        for make in shorter:
            args = make()
            with torch.no_grad():
                expected, got = gm(*args), inductor(*args)
            for a, b in zip(got, expected):
                if isinstance(b, torch.Tensor):
                    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
        seen = stand_ins[0].lengths_seen
        self.assertEqual(len(set(seen)), timing.NEW_LENGTHS, seen)
        self.assertTrue(all(n < 18 for n in seen), seen)
        for variant in stand_ins:
            self.assertEqual(variant.lengths_seen, seen)
        # a later measurement meets none of these lengths (argument 3 is a layer's past keys,
        # one shorter than the attention's after the append)
        again = timing.shorter_sets(runs[0], placeholders)
        self.assertFalse({int(make()[3].shape[2]) + 1 for make in again} & set(seen))


class DynamicPrefillSubstitutionTest(unittest.TestCase):
    def test_a_length_is_found_in_any_view_of_the_stored_tensor(self):
        """kernels.fx_axis: the FX value's axis holding a dim of the stored tensor, through
        leading 1s, a split last dim and a transposed layout; a static tensor (no shape_dims
        in the manifest, a transposed weight among them) names no dim."""
        k = {"name": "k", "shape": [2, 32, 128], "layout": "transposed",
             "shape_dims": ["", "", "n0"]}  # stored [2, n0, 32]
        self.assertEqual(kernels.stored_dim_names(k), ["", "n0", ""])
        self.assertEqual(kernels.fx_axis((1, 2, 40, 32), k, "n0"), 2)
        q = {"name": "q", "shape": [128, 2, 32], "layout": "row_major",
             "shape_dims": ["n0", "", ""]}
        self.assertEqual(kernels.fx_axis((1, 40, 64), q, "n0"), 1)
        self.assertEqual(kernels.stored_dim_names({"name": "w", "shape": [64, 64],
                                                   "layout": "transposed"}), [])

    def test_every_dynamic_subgraph_of_a_prefill_launches_at_every_length(self):
        """Llama's prefill under dynamic=True with every dynamic subgraph replaced by a launch
        that takes the prompt's length: the FX values have leading 1s the programs drop
        ([1, n, h] read as [n, h], Q as [1, heads, n, d] read as [heads, n, d]), so a dim's
        length is found on the axis whose inner dims hold the stored dims after it
        (kernels.fx_axis), in the inputs a launch reads and in the shapes of
        what it returns, whose dims keep the FX values' order (attention's output, transposed
        back and viewed [1, n, h]). The outputs are the original's (at 40 tokens: the stand-ins
        run the recorded aten nodes)."""
        from mugraph.backend import aot

        capture, calls, _ = _recording_backend()
        model = model_graphs.causal_lm("llama", dtype=torch.float32)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot(capture), dynamic=True)
        with torch.no_grad():
            for length in (40, 64):
                compiled(input_ids=torch.randint(0, 512, (1, length)), use_cache=False)
        gm = calls[0][0]
        runs = [args for g, args in calls if g is gm]
        self.assertEqual(len(runs), 2)
        optimized, chosen, stand_ins = _with_dynamic_stand_ins(gm, runs[0], 128,
                                                               "dynamic_prefill")
        # every subgraph is dynamic, both attentions among them
        self.assertEqual(len(chosen), len(_capi.partition(
            fx_graph.to_graph_json(gm, max_length=128)[0])["subgraphs"]))
        self.assertEqual(sum("reduce_max(" in s["canonical_program_text"]
                             for s, _, _ in chosen), 2)
        # The stand-ins run the recorded aten nodes, whose views hold the first length.
        with torch.no_grad():
            expected, got = gm(*runs[0]), optimized(*runs[0])
        for a, b in zip(got, expected):
            if isinstance(b, torch.Tensor):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
        for variant in stand_ins:
            self.assertEqual(variant.lengths_seen, [40], variant)


if __name__ == "__main__":
    unittest.main()
