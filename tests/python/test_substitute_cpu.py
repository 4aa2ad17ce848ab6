"""The graph surgery on the CPU: every subgraph of real transformers graphs replaced by a
`mugraph::launch` whose variant is a stand-in (the subgraph's own aten nodes, writing its
outputs densely, as our kernels do), and the substituted graph run: it gives the original's
outputs, whatever strides the aten nodes downstream of a launch depend on."""
import operator
import unittest

import torch

import model_graphs
from mugraph import _capi, fx_graph, fx_values, kernels, report, rest, substitute, timing


class StandInVariant(kernels.BoundVariant):
    """The subgraph's aten nodes as a variant: outputs written into the launch's in the layout
    the subgraph stores them in (dense, or heads_transposed), as our kernels do."""

    def __init__(self, module, order, outputs, layouts):
        tensors = [{"name": f"x{i}", "role": "input", "dtype": _dtype_name(t),
                    "layout": "row_major", "bytes": t.numel() * t.element_size()}
                   for i, t in enumerate(order)]
        tensors += [{"name": f"y{i}", "role": "output", "dtype": _dtype_name(t),
                     "layout": layout, "bytes": t.numel() * t.element_size()}
                    for i, (t, layout) in enumerate(zip(outputs, layouts))]
        self.layouts = layouts
        super().__init__("stand-in", tensors, [list(t.shape) for t in outputs],
                         [list(t.stride()) for t in outputs])
        self.module = module
        self.launches = 0

    def bind(self, binding, names, values):
        """Which launch input gives each of the aten nodes' inputs, undoing the tiling and the
        repeats the binding makes for the folded GQA form; a value no input gives (a causal
        mask the program holds as causal_mask) is the recorded one, constant."""
        self.sources = []
        for name in names:
            j = next((j for j, i in enumerate(binding.inputs)
                      if i == name or (isinstance(i, tuple) and i[0] in ("repeat", "stored")
                                       and i[1] == name)), None)
            if j is None:
                self.sources.append((None, values[name], None))
            else:
                self.sources.append((j, binding.inputs[j], binding.tiled[j]))

    def _launch(self, inputs, outputs, device, lengths):
        self.launches += 1
        values = []
        for j, source, tiled in self.sources:
            if j is None:
                values.append(source)
                continue
            x = inputs[j]
            if tiled is not None:
                dim = x.dim() - tiled["dim_from_end"]
                x = x.narrow(dim, 0, x.shape[dim] // tiled["times"])
            if isinstance(source, tuple) and source[0] == "repeat":  # every rep-th head
                x = x[..., ::source[2], :, :]
            if isinstance(source, tuple) and source[0] == "stored":  # its memory, as stored
                x = fx_values.storage_view(x, source[2])
            values.append(x)
        for out, value, layout in zip(outputs, self.module(*values), self.layouts):
            out.copy_(fx_values.storage_view(value, layout))


def _dtype_name(t):
    return {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}[t.dtype]


def _is_rope(program_text):
    """RoPE's subgraph: a rotation (Llama's rotate_half, GPT-J's and Cohere's interleaved
    rotate_pairs) with no matmul."""
    rotates = "rotate_half(" in program_text or "rotate_pairs(" in program_text
    return rotates and "matmul(" not in program_text


def traced_with_inputs(model, **kwargs):
    """(aten GraphModule, its real arguments) of model(**kwargs) under torch.compile."""
    from functorch.compile import make_boxed_func

    from mugraph.backend import aot

    got = []

    def capture(gm, example_inputs):
        def run(*args):
            got.append((gm, list(args)))
            return gm(*args)
        return make_boxed_func(run)

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot(capture), dynamic=False)
    with torch.no_grad():
        compiled(**kwargs)
    return got[0]


class SubstituteTest(unittest.TestCase):
    def test_every_subgraph_substituted_gives_the_original_outputs(self):
        """Every subgraph replaced, or every one but RoPE's (which then stays in PyTorch and
        hands the attention launch a head-transposed value): the original outputs either way.
        GPT-J's and Cohere's RoPE is interleaved (rotate_pairs, its stack's Unsqueezes and
        Concat bound to the FX stack node)."""
        for name in ("llama", "qwen3", "mistral", "gptj", "cohere", "olmo2"):
            for rope_in_pytorch in (False, True):
                with self.subTest(model=name, rope_in_pytorch=rope_in_pytorch):
                    self.check_substituted(name, rope_in_pytorch)

    def test_a_batch_substituted_gives_the_original_outputs(self):
        """Two sequences: subgraphs read [2, 16, h] values as [32, h] rows and eager attention's
        [2, heads, s, d] as [2·heads, s, d] (onnx_import/row_merge.h), and GPT-2's position
        embeddings [1, 16, h] stacked over the batch as [32, h]; the launches take the same
        memory, and the outputs are the original's."""
        for name in ("llama", "gemma2", "bloom", "gpt2"):
            with self.subTest(model=name):
                self.check_substituted(name, False, batch=2, rotates=name in ("llama", "gemma2"))

    def test_a_table_read_at_a_narrower_dtype_is_converted_in_the_graph(self):
        """OLMo 2 in f16: RoPE reads its f32 cos and sin at f16 (PyTorch computes q·cos in f32
        and casts back), so the substituted graph converts them before the launch; the outputs
        stay within f16 rounding of the original's."""
        self.check_substituted("olmo2", False, dtype=torch.float16, tolerance=2e-2)

    def check_substituted(self, name, rope_in_pytorch, dtype=torch.float32, tolerance=1e-5,
                          batch=1, rotates=True):
        """`rotates`: whether the model rotates q and k (BLOOM adds ALiBi's biases instead)."""
        model = model_graphs.causal_lm(name, dtype=dtype)
        ids = torch.randint(0, 512, (batch, 16))
        gm, args = traced_with_inputs(model, input_ids=ids, use_cache=False)
        graph, writer = fx_graph.to_graph_json(gm)
        graph_report = report.GraphReport(gm, writer, _capi.partition(graph))
        recorder = substitute._Recorder(gm)
        with torch.no_grad():
            expected = recorder.run(*args)
        fx_nodes = {n.name for n in gm.graph.nodes}
        chosen = []
        for s in graph_report.partition["subgraphs"]:
            graph_report.searched(s, None, {"variants": []}, False)
            if rope_in_pytorch and _is_rope(s["program_text"]):
                continue
            binding = substitute.Binding(s, writer, fx_nodes)
            module, names = timing.pytorch_subgraph(gm, s, binding, writer)
            inputs = binding.input_values(recorder.values, torch.device("cpu"))
            outputs = [recorder.values[o] for o in binding.outputs]
            variant = StandInVariant(module, inputs, outputs,
                                     [o.get("layout", "row_major") for o in s["outputs"]])
            variant.bind(binding, names, recorder.values)
            key = f"{name}:{s['name']}:{rope_in_pytorch}"
            kernels.register(key, variant)
            chosen.append((s, binding, (key, {"name": "stand-in"}, 0.0)))
        # Timed as it will run: RoPE's outputs, which only the attention launch reads, are
        # handed over as the kernel stores them (no copy to other strides).
        timed = {s["name"]: timing._as_substituted(gm, s, binding, key, chosen, graph_report)
                 for s, binding, (key, _, _) in chosen}
        rope = [s["name"] for s, _, _ in chosen if _is_rope(s["program_text"])]
        self.assertEqual(bool(rope), rotates and not rope_in_pytorch)
        for s, binding, (key, _, _) in chosen:
            variant = kernels.registered(timed[s["name"]])
            for j in range(len(binding.outputs)):
                if s["name"] in rope:
                    self.assertEqual(variant.output_strides[j],
                                     kernels.stored_strides(variant, j))
        optimized = substitute.substituted(gm, chosen, graph_report)
        launches = [n for n in optimized.graph.nodes
                    if n.target is torch.ops.mugraph.launch.default]
        self.assertEqual(len(launches), len(chosen), graph_report.as_dict())
        # Every launch reads dense values.
        args_in = [a for n in launches for a in n.args[1]]
        for a in args_in:
            val = a.meta.get("val")
            if isinstance(val, torch.Tensor):
                self.assertTrue(val.is_contiguous(), a.name)
        clones = [a for a in args_in if a.target is torch.ops.aten.clone.default]
        if rope_in_pytorch:
            # A strided value from PyTorch (RoPE on a head-transposed view) that the folded
            # GQA attention reads in its logical order: through a clone in the graph, which
            # Inductor fuses into its producer.
            self.assertTrue(clones)
        else:
            # One that only launches read (RoPE's Q and K, read by attention) is passed on
            # as the kernel stored it: no copy to the FX strides and back.
            self.assertEqual([a for a in clones if a.args[0].target is operator.getitem
                              and substitute._is_launch(a.args[0].args[0])], [])
            for n in launches:
                variant = kernels.registered(n.args[0])
                if any(r in n.args[0] for r in rope):
                    self.assertEqual(variant.output_strides,
                                     [kernels.stored_strides(variant, j)
                                      for j in range(len(variant.outputs))])
        launched = [kernels.registered(n.args[0]) for n in launches]  # copies for ":stored"
        if dtype != torch.float32:
            casts = [n for n in optimized.graph.nodes if n.target is torch.ops.aten._to_copy.default
                     and any(u.target is torch.ops.mugraph.launch.default for u in n.users)]
            self.assertTrue(casts, "a launch reads a converted table")
        runners = [(optimized, tolerance)]
        if name == "llama":  # Inductor around the launches, as the backend runs it
            runners.append((rest.Rest("inductor").compile(optimized, args), 1e-4))
        for calls, (runner, tolerance) in enumerate(runners, start=1):
            with torch.no_grad():
                got = runner(*args)
            self.assertTrue(all(v.launches == calls for v in launched))
            for a, b in zip(got, expected):
                if isinstance(b, torch.Tensor):
                    torch.testing.assert_close(a, b, rtol=tolerance, atol=tolerance)
        with torch.no_grad():
            self.assertIsNone(substitute.outputs_mismatch(optimized, args, expected))
            wrong = [x * 1.5 if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                     for x in expected]
            self.assertIn("max relative error", substitute.outputs_mismatch(optimized, args, wrong))


class StatefulGraphTest(unittest.TestCase):
    def test_a_graph_that_steps_a_counter_is_checked_on_the_same_step(self):
        """A cache's step counter written in place: the check of the graph with our kernels
        puts the written arguments back as they were before the expected outputs were made."""
        from torch.fx.experimental.proxy_tensor import make_fx

        def step(cache, counter, x):
            cache.index_copy_(0, counter.long(), x)
            counter.add_(1)
            return (cache * counter).sum(0)

        cache, counter, x = torch.randn(4, 3), torch.zeros(1), torch.randn(1, 3)
        gm = make_fx(step)(cache.clone(), counter.clone(), x)
        self.assertEqual(substitute.mutated_inputs(gm), [0, 1])
        args = [cache, counter, x]
        before = [(args[i], args[i].clone()) for i in substitute.mutated_inputs(gm)]
        expected = gm(*args)
        self.assertIn("max relative error", substitute.outputs_mismatch(gm, args, expected))
        self.assertIsNone(substitute.outputs_mismatch(gm, args, expected, before))


class OutputStridesTest(unittest.TestCase):
    def test_a_stored_layout_with_the_fx_strides_is_returned_without_a_copy(self):
        stored = torch.randn(64, 4, 32)  # heads_transposed storage of a [4, 64, 32] value
        logical = kernels._logical(stored, "heads_transposed")
        sdpa_like = stored.transpose(0, 1)
        kernels.COPIES.clear()
        out = kernels._with_strides(logical, sdpa_like.stride(), "v output o")
        self.assertEqual(out.data_ptr(), stored.data_ptr())
        self.assertEqual(kernels.COPIES, set())
        dense = kernels._with_strides(logical, torch.empty(4, 64, 32).stride(), "v output o")
        self.assertTrue(dense.is_contiguous())
        torch.testing.assert_close(dense, sdpa_like)
        self.assertEqual(len(kernels.COPIES), 1)  # the copy is recorded, for profile_step.py
        self.assertTrue(next(iter(kernels.COPIES)).startswith("v output o:"))


if __name__ == "__main__":
    unittest.main()
