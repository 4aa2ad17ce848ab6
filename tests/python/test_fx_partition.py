"""The FX front end and the C++ partitioner behind the C API, on the CPU: real transformers
architectures traced to aten graphs, written as graph JSON and partitioned; one subgraph
searched through the cache. Needs torch and transformers (scripts/setup.sh installs them) and
a build of libmugraph.so ($MUGRAPH_BUILD_DIR)."""
import math
import os
import re
import subprocess
import tempfile
import time
import unittest

import torch

import model_graphs
from mugraph import _capi, fx_graph, optimize, report, substitute


def partitioned(name, seq=16, batch=1, **sizes):
    """(GraphModule, writer, partition) of the model's prefill of `batch` sequences;
    `use_cache` (default False) is passed on: with a cache, transformers concatenates empty past
    keys before attention."""
    use_cache = sizes.pop("use_cache", False)
    model = model_graphs.causal_lm(name, **sizes)
    ids = torch.randint(0, 512, (batch, seq))
    (gm,) = model_graphs.aten_graphs(model, input_ids=ids, use_cache=use_cache)
    graph, writer = fx_graph.to_graph_json(gm)
    return gm, writer, _capi.partition(graph)


MUGRAPH = os.path.join(os.environ.get("MUGRAPH_BUILD_DIR", "build"), "bin", "mugraph")


def attention_subgraphs(gm, writer, partition):
    """Per SDPA node of the graph, in order, the subgraphs holding its Q·Kᵀ or its P·V."""
    sdpa = [n.name for n in gm.graph.nodes if "scaled_dot_product" in str(n.target)]
    return [[s for s in partition["subgraphs"]
             if writer.attentions[a] + ".qk" in s["nodes"]
             or writer.attentions[a] + ".out" in s["nodes"]] for a in sdpa]


def declarations(program):
    return [line for line in program.splitlines() if line.startswith("input ")]


def equivalent(reference, candidate):
    """`mugraph verify` (float tests and finite-field fingerprints): (equal, its output)."""
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "reference.mg"), os.path.join(d, "candidate.mg")
        for path, text in ((a, reference), (b, candidate)):
            with open(path, "w") as f:
                f.write(text)
        run = subprocess.run([MUGRAPH, "verify", a, b], capture_output=True, text=True)
        return run.returncode == 0, run.stdout + run.stderr


def reference_attention(subgraph, scale):
    """softmax(Q·Kᵀ·scale + mask)·V written out over the subgraph's own input declarations
    (which input is which from its binding), the causal mask as causal_mask where the subgraph
    reads it so: what the canonical program must compute."""
    program = subgraph["canonical_program_text"]
    names = {}
    for index, i in enumerate(subgraph["inputs"]):
        role = ("k" if i["onnx_value"].endswith(".kt") else
                "mask" if "tiled" in i or "mask" in i["onnx_value"] or "where" in i["onnx_value"]
                else None)
        names[role or f"other{index}"] = f"x{index}"
    q, v = sorted(n for r, n in names.items() if r.startswith("other"))
    dim = len(re.search(r"\[(.*)\]", declarations(program)[0]).group(1).split(",")) - 1
    logits = f"scale(matmul({q}, {names['k']}), c={scale:.16g})"  # as programs print it
    if "mask" in names:
        logits = f"add({logits}, {names['mask']})"
    for causal in subgraph.get("causal_masks", []):  # the mask read as structure
        logits = f"causal_mask({logits}, queries={causal['queries']})"
    return "\n".join(["program reference"] + declarations(program) + [
        f"L = {logits}",
        f"E = exp(sub(L, reduce_max(L, dim={dim})))",
        f"y0 = matmul(div(E, reduce_sum(E, dim={dim})), {v})",
        "output y0", ""])


class PartitionChecks:
    """What every decoder layer's partition must be (mixed into the test cases)."""

    def check_attention(self, name, gm, writer, partition, layers):
        """Each attention one subgraph: Q·Kᵀ, scale, mask, safe softmax and P·V (two matmuls),
        GQA's KV heads read from the KV buffers with the query rows folded, equal to softmax
        written out (`mugraph verify`)."""
        holders = attention_subgraphs(gm, writer, partition)
        self.assertEqual(len(holders), layers, name)
        for index, found in enumerate(holders):
            self.assertEqual(len(found), 1, f"{name}: attention {index} is in "
                                            f"{[s['name'] for s in found]}")
            s = found[0]
            program = s["canonical_program_text"]
            self.assertEqual(program.count("matmul("), 2, f"{name}: {program}")
            for op in ("reduce_max", "exp", "reduce_sum", "div"):
                self.assertIn(op + "(", program, f"{name}: attention {index}")
            self.assertIn("KV groups", s.get("repeated_kv_heads", ""), f"{name}: {program}")
            for i in s["inputs"]:  # K and V from their buffers, not from repeats PyTorch makes
                self.assertNotIn("repeated", i.get("reads_buffer_of", i["onnx_value"]), name)
            depth = int(re.search(r"\[(.*)\]", declarations(program)[0]).group(1)
                        .split(",")[-1])
            reference = reference_attention(s, 1.0 / math.sqrt(depth))
            same, report_text = equivalent(reference, program)
            self.assertTrue(same, f"{name}: attention {index}\n{program}\n{report_text}")

    def check_layers(self, name, gm, writer, partition, layers):
        subgraphs = partition["subgraphs"]
        self.assertLessEqual(len(subgraphs), 3 * layers + 1,
                             f"{name}: {[s['name'] for s in subgraphs]}")
        rope = [s for s in subgraphs if "rotate_half(" in s["program_text"]]
        self.assertEqual(len(rope), layers, f"{name}: {[s['name'] for s in rope]}")
        fx = {n.name: n for n in gm.graph.nodes}
        for s in rope:  # q and k rotated in one subgraph, x·cos + rotate_half(x)·sin each
            self.assertEqual(s["program_text"].count("rotate_half("), 2, f"{name}: {s['name']}")
            self.assertGreaterEqual(s["program_text"].count(" = add("), 2, name)
            for i in s["inputs"]:  # cos and sin as f16 (after PyTorch's cast), like q and k
                value = fx[i.get("reads_buffer_of", i["onnx_value"])].meta["val"]
                self.assertEqual(value.dtype, torch.float16, f"{name}: {i}")
        left = {u["node"]: u["reason"] for u in partition["unsupported"]}
        covered = {writer.origin.get(n, n) for s in subgraphs for n in s["nodes"]}
        for node in gm.graph.nodes:  # nothing left without a reason
            if node.op == "call_function" and node.name not in covered:
                self.assertTrue(left.get(node.name) or writer.untranslated.get(node.name),
                                f"{name}: {node.name}")


class FxPartitionTest(PartitionChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.models = {name: partitioned(name) for name in ("llama", "qwen3", "mistral")}

    def test_every_aten_node_is_in_a_subgraph_or_left_with_a_reason(self):
        for name, (gm, writer, partition) in self.models.items():
            graph_report = report.GraphReport(gm, writer, partition)
            covered = {writer.origin[n] for s in partition["subgraphs"] for n in s["nodes"]}
            left = dict(graph_report.left_to_pytorch)
            for node in gm.graph.nodes:
                if node.op != "call_function":
                    continue
                with self.subTest(model=name, node=node.name):
                    self.assertTrue(node.name in covered or left.get(node.name),
                                    f"{node.name} is neither optimized nor explained")
            self.assertIn("no mapping", left["embedding"])

    def test_attention_is_one_subgraph_per_layer(self):
        for name, (gm, writer, partition) in self.models.items():
            self.check_attention(name, gm, writer, partition, layers=2)

    def test_prefill_attention_reads_the_causal_mask_as_structure(self):
        """transformers' own mask (arange, comparisons, where; python/mugraph/constant_mask.py)
        is causal_mask in the program, not an input."""
        for name, (gm, writer, partition) in self.models.items():
            for (s,) in attention_subgraphs(gm, writer, partition):
                self.assertIn("causal_mask(", s["program_text"], name)
                self.assertEqual(len(s["inputs"]), 3, f"{name}: {s['program_text']}")

    def test_at_most_three_subgraphs_per_layer_and_rope_whole(self):
        """Per layer: norm and Q/K/V projections (with the previous o_proj and MLP), RoPE of q
        and k, attention; plus the last o_proj and MLP with lm_head."""
        for name, (gm, writer, partition) in self.models.items():
            self.check_layers(name, gm, writer, partition, layers=2)

    def test_with_a_cache_and_at_real_width(self):
        """transformers with a DynamicCache (empty past keys concatenated) and hidden 2048 (32
        query heads in 8 KV groups): the same partition."""
        for name in ("llama", "qwen3", "mistral"):
            with self.subTest(model=name):
                gm, writer, partition = partitioned(name, seq=64, hidden=2048, layers=1,
                                                    vocab=512, use_cache=True)
                self.check_attention(name, gm, writer, partition, layers=1)
                self.check_layers(name, gm, writer, partition, layers=1)

    def test_gemma_norms_scale_by_one_plus_the_weight_inside_a_subgraph(self):
        """Gemma's RMSNorm multiplies by 1 + weight, computed in f32 from the weight alone: a
        rank-1 value the norm's [s, d] broadcasts. It is built at the norm's rank (inputs take
        leading 1s), and stays with the norm even where the subgraph around it splits at
        attention's result (no launch of its own, no PyTorch multiply between): as many
        subgraphs per layer as Llama's."""
        gm, writer, partition = partitioned("gemma")
        subgraphs = partition["subgraphs"]
        self.assertLessEqual(len(subgraphs), 3 * 2 + 1, [s["name"] for s in subgraphs])
        covered = {writer.origin.get(n, n) for s in subgraphs for n in s["nodes"]}
        one_plus = [n for n in gm.graph.nodes if n.target is torch.ops.aten.add.Tensor
                    and len(n.args) > 1 and n.args[1] == 1.0
                    and n.meta["val"].dim() == 1]
        self.assertEqual(len(one_plus), 5, [n.name for n in one_plus])  # 2 per layer + final
        for n in one_plus:
            self.assertIn(n.name, covered, n.name)
            (reader,) = n.users
            self.assertIn(reader.name, covered, f"{reader.name} multiplies by {n.name}")
            holder = [s for s in subgraphs if writer.origin.get(n.name, n.name) in
                      {writer.origin.get(m, m) for m in s["nodes"]}]
            self.assertEqual(len(holder), 1, n.name)
            self.assertGreaterEqual(holder[0]["program_text"].count("matmul"), 1, n.name)

    def test_opts_relu_lies_between_its_two_projections_in_one_subgraph(self):
        """OPT's MLP, fc1 -> ReLU -> fc2: the ReLU maps to `relu` and joins both projections
        (before, it was left to PyTorch and cut the MLP in two)."""
        gm, writer, partition = partitioned("opt")
        relus = [n.name for n in gm.graph.nodes if n.target is torch.ops.aten.relu.default]
        self.assertEqual(len(relus), 2, relus)  # one per layer
        for r in relus:
            holders = [s for s in partition["subgraphs"]
                       if r in {writer.origin.get(m, m) for m in s["nodes"]}]
            self.assertEqual(len(holders), 1, r)
            self.assertIn("relu(", holders[0]["program_text"])
            self.assertGreaterEqual(holders[0]["program_text"].count("matmul("), 2, r)

    def test_multi_query_attention_folds_onto_its_one_kv_head(self):
        """Gemma at hidden 1024: 4 query heads of 256 over one KV head. Its repeats' merge
        [1, 1, 4, s, d] -> [1, 4, s, d] only drops a leading 1 (an alias, not a view), and the
        attention still folds its query heads onto the KV head: K and V read from their buffers,
        no repeat PyTorch makes, equal to softmax written out (`mugraph verify`)."""
        gm, writer, partition = partitioned("gemma", hidden=1024)
        self.check_attention("gemma", gm, writer, partition, layers=2)
        self.assertFalse([u for u in partition["unsupported"] if "repeats data" in u["reason"]],
                         "the repeats are read as views of the KV buffers")

    def test_other_architectures_partition_with_every_node_explained(self):
        """Architectures the backend has no case for (model_graphs.more_configs): each
        partitions, every aten node is in a subgraph or left to PyTorch with a reason, and
        each keeps a subgraph with a matmul per layer."""
        names = sorted(model_graphs.more_configs())
        self.assertGreaterEqual(len(names), 10, names)
        for name in names:
            with self.subTest(model=name):
                gm, writer, partition = partitioned(name)
                graph_report = report.GraphReport(gm, writer, partition)
                covered = {writer.origin[n] for s in partition["subgraphs"] for n in s["nodes"]}
                left = dict(graph_report.left_to_pytorch)
                for node in gm.graph.nodes:
                    if node.op == "call_function":
                        self.assertTrue(node.name in covered or left.get(node.name),
                                        f"{name}: {node.name} is neither optimized nor explained")
                matmuls = sum(s["program_text"].count("matmul(") for s in partition["subgraphs"])
                self.assertGreaterEqual(matmuls, 2 * 4, f"{name}: {matmuls} matmuls")

    def test_the_mlp_is_one_subgraph(self):
        for name, (gm, writer, partition) in self.models.items():
            silu = [n.name for n in gm.graph.nodes if "silu" in str(n.target)]
            for s in silu:
                holders = [g for g in partition["subgraphs"] if s in g["nodes"]]
                self.assertEqual(len(holders), 1, f"{name}: {s}")
                self.assertGreaterEqual(holders[0]["program_text"].count("matmul"), 3,
                                        f"{name}: gate, up and down projections with {s}")

    def test_inputs_and_outputs_bind_to_fx_values(self):
        for name, (gm, writer, partition) in self.models.items():
            fx_names = {n.name for n in gm.graph.nodes}
            for s in partition["subgraphs"]:
                for o in s["outputs"]:
                    self.assertIn(o["onnx_value"], fx_names, f"{name}: {s['name']}")
                for i in s["inputs"]:
                    buffer = i.get("reads_buffer_of", i["onnx_value"])
                    self.assertTrue(buffer in fx_names or buffer in writer.causal_masks,
                                    f"{name}: {s['name']} reads {buffer}")

    def test_bad_graph_json_is_a_clear_error(self):
        with self.assertRaisesRegex(_capi.MugraphError, r"\$\.nodes\[0\]\.inputs\[0\].*nothing"):
            _capi.partition({"format": "mugraph.graph", "version": 1,
                             "values": [{"name": "y", "type": "float", "shape": [2]}],
                             "inputs": [], "outputs": [],
                             "nodes": [{"name": "n", "op": "Exp", "inputs": ["nothing"],
                                        "outputs": ["y"]}]})


class InterleavedRopeTest(unittest.TestCase):
    """GPT-J and Cohere write RoPE interleaved, torch.stack((-x[..., 1::2], x[..., ::2]),
    -1).flatten(-2): the FX front end writes the stack as Unsqueezes and a Concat, and the
    partitioner maps the whole group to rotate_pairs inside RoPE's subgraphs, with its muls
    and adds, where it used to leave each Neg in a subgraph of its own."""

    def test_interleaved_rope_is_rotate_pairs_beside_its_muls_and_adds(self):
        for name in ("gptj", "gptj_full_rotary", "cohere"):
            with self.subTest(model=name):
                gm, writer, partition = partitioned(name)
                subgraphs = partition["subgraphs"]
                rope = [s for s in subgraphs if "rotate_pairs(" in s["program_text"]]
                rotations = sum(s["program_text"].count("rotate_pairs(") for s in rope)
                self.assertEqual(rotations, 2 * 2, f"{name}: q and k in each of 2 layers")
                for s in rope:  # x·cos + rotate_pairs(x)·sin each
                    text = s["program_text"]
                    self.assertGreaterEqual(text.count(" = mul("), 2 * text.count("rotate_pairs("))
                    self.assertGreaterEqual(text.count(" = add("), text.count("rotate_pairs("))
                negs = {n.name for n in gm.graph.nodes if n.target == torch.ops.aten.neg.default}
                self.assertEqual(len(negs), 2 * 2, name)
                for s in subgraphs:
                    origins = {writer.origin.get(n, n) for n in s["nodes"]}
                    self.assertFalse(origins <= negs, f"{name}: {s['name']} holds a Neg alone")
                    if origins & negs:
                        self.assertIn("rotate_pairs(", s["program_text"], f"{name}: {s['name']}")
                placed = {writer.origin.get(n, n) for s in rope for n in s["nodes"]}
                self.assertEqual(negs - placed, set(), f"{name}: Negs outside RoPE's subgraphs")
                if name == "gptj_full_rotary":  # RoPE before the head transpose, which joins
                    fx = {n.name: n for n in gm.graph.nodes}
                    for s in rope:
                        moved = [m for m in (writer.origin.get(n, n) for n in s["nodes"])
                                 if m in fx and fx[m].target == torch.ops.aten.transpose.int]
                        self.assertTrue(moved, f"{name}: {s['name']}")


def decode_step(name, past=8, batch=1):
    """(GraphModule, writer, partition) of one decode step of `batch` sequences after a prefill
    of `past` tokens."""
    model = model_graphs.causal_lm(name)
    with torch.no_grad():
        cache = model(input_ids=torch.randint(0, 512, (batch, past)),
                      use_cache=True).past_key_values
    (gm,) = model_graphs.aten_graphs(model, input_ids=torch.randint(0, 512, (batch, 1)),
                                     past_key_values=cache, use_cache=True)
    graph, writer = fx_graph.to_graph_json(gm)
    return gm, writer, _capi.partition(graph)


class BatchTest(PartitionChecks, unittest.TestCase):
    """Several sequences at once: PyTorch's linear layers view [b, s, h] as [b·s, h] and eager
    attention views [b, heads, s, d] as [b·heads, s, d]; those reshapes are aliases inside a
    subgraph (onnx_import/row_merge.h), so a batch partitions as one sequence does."""

    def test_a_batch_partitions_as_one_sequence_does(self):
        # SDPA (Llama, Qwen3), eager attention with bmm and a soft cap (Gemma 2), ALiBi through
        # baddbmm (BLOOM), a fused gate/up projection chunked (Phi-3), LayerNorm (Falcon),
        # position embeddings broadcast over the batch, read stacked (GPT-2)
        for name in ("llama", "qwen3", "gemma2", "bloom", "phi3", "falcon", "gpt2"):
            with self.subTest(model=name):
                one = partitioned(name)[2]["subgraphs"]
                gm, writer, partition = partitioned(name, batch=2)
                two = partition["subgraphs"]
                self.assertEqual(len(two), len(one), [s["name"] for s in two])
                self.assertEqual(sorted(s["program_text"].count("matmul(") for s in two),
                                 sorted(s["program_text"].count("matmul(") for s in one))
                if name in ("llama", "qwen3"):
                    self.check_attention(name, gm, writer, partition, layers=2)
                    self.check_layers(name, gm, writer, partition, layers=2)

    def test_a_batched_decode_step_partitions_as_one_sequences_does(self):
        """Qwen3's per-head q/k norms join RoPE through the head transpose of one row
        (heads_pushdown.h) at batch 2 as at batch 1: the values it reads keep their dims."""
        for name in ("llama", "qwen3"):
            with self.subTest(model=name):
                one = decode_step(name)[2]["subgraphs"]
                gm, writer, partition = decode_step(name, batch=2)
                self.assertEqual(len(partition["subgraphs"]), len(one),
                                 [s["name"] for s in partition["subgraphs"]])
                self.check_attention(name, gm, writer, partition, layers=2)

    def test_the_batch_is_read_as_rows_by_the_projections(self):
        """Llama at batch 2: the subgraph of the norm and the Q/K/V projections reads the
        embeddings [2, 16, h] as [32, h] rows, and the MLP's writes [32, h] rows back."""
        gm, writer, partition = partitioned("llama", batch=2)
        projections = [s for s in partition["subgraphs"]
                       if s["program_text"].count("matmul(") == 3]
        self.assertTrue(projections, [s["name"] for s in partition["subgraphs"]])
        rows = [line for line in declarations(projections[0]["program_text"])
                if re.search(r"\[32, 128\]", line)]
        self.assertTrue(rows, projections[0]["program_text"])


class _ScaledBatchProduct(torch.nn.Module):
    def forward(self, bias, a, b):
        return torch.baddbmm(bias, a, b, beta=0.5, alpha=2.0)


class BiasedScoresTest(unittest.TestCase):
    """baddbmm: beta·input + alpha·(batch1·batch2), which BLOOM computes its ALiBi scores with."""

    def test_baddbmm_is_the_scaled_product_plus_the_scaled_input(self):
        args = (torch.randn(4, 1, 16), torch.randn(4, 16, 8), torch.randn(4, 8, 16))
        (gm,) = model_graphs.aten_graphs(_ScaledBatchProduct(), *args)
        graph, writer = fx_graph.to_graph_json(gm)
        (s,) = _capi.partition(graph)["subgraphs"]
        named = {re.search(r"\[(.*)\]", line).group(1): re.match(r"input (\S+)", line).group(1)
                 for line in declarations(s["program_text"])}
        bias, a, b = named["4, 1, 16"], named["4, 16, 8"], named["4, 8, 16"]
        reference = "\n".join(["program reference"] + declarations(s["program_text"]) + [
            f"Y = add(scale(matmul({a}, {b}), c=2), scale({bias}, c=0.5))", "output Y", ""])
        out = re.search(r"^output (\S+)", s["program_text"], re.M).group(1)
        reference = reference.replace("Y", out)
        ok, log = equivalent(reference, s["program_text"])
        self.assertTrue(ok, s["program_text"] + log)

    def test_bloom_attention_is_one_subgraph_with_its_alibi_bias_and_causal_mask(self):
        gm, writer, partition = partitioned("bloom")
        attention = [s for s in partition["subgraphs"] if "exp(" in s["program_text"]]
        self.assertEqual(len(attention), 2)  # one per layer
        for s in attention:
            text = s["program_text"]
            self.assertEqual(text.count("matmul("), 2, text)
            self.assertIn("causal_mask(", text)
            self.assertEqual(len(s["inputs"]), 4, text)  # Q, Kᵀ, V and ALiBi's [heads, 1, keys]
            self.assertTrue(any(re.search(r"\[\d+, 1, \d+\]", line)
                                for line in declarations(text)), text)


class PromotedRopeTest(unittest.TestCase):
    """OLMo 2 multiplies f16 q and k by f32 cos and sin (PyTorch promotes to f32 and casts the
    result back): RoPE reads the tables at f16, converted by the binding, and stays one
    subgraph beside an attention that holds both matmuls."""

    def test_olmo2_rope_reads_its_f32_tables_at_f16(self):
        gm, writer, partition = partitioned("olmo2")
        fx_nodes = {n.name for n in gm.graph.nodes}
        rope = [s for s in partition["subgraphs"]
                if "rotate_half(" in s["program_text"] and "matmul(" not in s["program_text"]]
        self.assertEqual(len(rope), 2)  # one per layer, q and k together
        for s in rope:
            cast = [i for i in s["inputs"] if i.get("cast_from") == "f32"]
            self.assertEqual(len(cast), 2, s["inputs"])  # cos and sin
            binding = substitute.Binding(s, writer, fx_nodes)
            self.assertEqual(binding.casts.count(torch.float16), 2, binding.casts)
            for i in cast:
                self.assertIn(f"input {i['name']} f16 ", s["program_text"])
        attention = [s for s in partition["subgraphs"] if "exp(" in s["program_text"]]
        self.assertEqual([s["program_text"].count("matmul(") for s in attention], [2, 2])


class DecodeStepTest(PartitionChecks, unittest.TestCase):
    def test_a_decode_step_partitions_like_a_prefill(self):
        """One query row: the head transposes move no data (Qwen3's q/k norms still join RoPE),
        K and V come from the cache's concatenation; attention folded, no mask."""
        for name in ("llama", "qwen3", "mistral"):
            with self.subTest(model=name):
                gm, writer, partition = decode_step(name)
                self.check_attention(name, gm, writer, partition, layers=2)
                self.check_layers(name, gm, writer, partition, layers=2)


class _QueryThroughAHeadTranspose(torch.nn.Module):
    """SDPA with enable_gqa where Q comes through a head transpose: GQA's folded rows would not
    be a view of Q's buffer, so the partitioner keeps the repeats."""

    def forward(self, x, k, v):
        q = x.view(1, 16, 4, 32).transpose(1, 2)
        return torch.nn.functional.scaled_dot_product_attention(q.exp(), k, v, is_causal=True,
                                                                enable_gqa=True)


class RepeatedHeadsBindingTest(unittest.TestCase):
    def test_an_unfolded_attention_reads_the_repeats_the_backend_makes(self):
        x, k, v = torch.randn(1, 16, 128), torch.randn(1, 2, 16, 32), torch.randn(1, 2, 16, 32)
        (gm,) = model_graphs.aten_graphs(_QueryThroughAHeadTranspose(), x, k, v)
        graph, writer = fx_graph.to_graph_json(gm)
        partition = _capi.partition(graph)
        (s,) = [s for s in partition["subgraphs"] if s["program_text"].count("matmul(") == 2]
        self.assertNotIn("repeated_kv_heads", s)
        binding = substitute.Binding(s, writer, {n.name for n in gm.graph.nodes})
        repeats = [i for i in binding.inputs if isinstance(i, tuple) and i[0] == "repeat"]
        self.assertEqual(len(repeats), 2, binding.inputs)  # K and V
        recorder = substitute._Recorder(gm)
        recorder.run(x, k, v)
        values = binding.input_values(recorder.values, torch.device("cpu"))
        declared = declarations(s["program_text"])
        for i, value, line in zip(binding.inputs, values, declared):
            shape = [int(d) for d in re.search(r"\[(.*)\]", line).group(1).split(",")]
            self.assertEqual(value.numel(), math.prod(shape), line)  # the bytes it reads
            if isinstance(i, tuple) and i[0] == "repeat":
                source = recorder.values[i[1]]
                self.assertIn(source.data_ptr(), (k.data_ptr(), v.data_ptr()))
                # query head h reads KV head h // 2
                self.assertTrue(torch.equal(value, source[:, [0, 0, 1, 1]]), line)


class CacheTest(unittest.TestCase):
    def test_a_searched_program_is_read_back_from_the_cache(self):
        gm, writer, partition = partitioned("llama")
        smallest = min(partition["subgraphs"], key=lambda s: len(s["nodes"]))
        options = optimize.Options(time_limit=5, max_variants=1, profile=False)
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MUGRAPH_CACHE_DIR"] = cache
            try:
                entry, result, cached = optimize.variants_for(
                    smallest["program_text"], smallest["program_hash"], "sm_90", options)
                self.assertFalse(cached)
                self.assertTrue(result["variants"], result)
                best = optimize.variant_directory(entry, result["variants"][0]["name"])
                self.assertTrue(os.path.exists(os.path.join(best, "manifest.json")))
                start = time.monotonic()
                entry2, result2, cached2 = optimize.variants_for(
                    smallest["program_text"], smallest["program_hash"], "sm_90", options)
                self.assertTrue(cached2)
                self.assertEqual(result2, result)
                self.assertLess(time.monotonic() - start, 1.0)
                self.assertFalse([f for f in os.listdir(os.path.dirname(entry))
                                  if f.startswith(".tmp-")], "no temporary entry is left")
            finally:
                del os.environ["MUGRAPH_CACHE_DIR"]


if __name__ == "__main__":
    unittest.main()
