"""LayerNorm and GELU in real transformers architectures, on the CPU: GPT-2 (LayerNorm, the
tanh GELU written out with pow and tanh) and GPT-NeoX (LayerNorm, aten.gelu, parallel
residual) traced to aten graphs and partitioned. Each LayerNorm joins the projection that reads
it, each GELU the MLP's projections, and every aten node is in a subgraph or left with its
reason. Needs torch and transformers (scripts/setup.sh installs them) and a build of
libmugraph.so ($MUGRAPH_BUILD_DIR)."""
import unittest

import torch

import model_graphs
from mugraph import _capi, fx_graph, report, substitute


MODELS = ("gpt2", "gpt_neox")


def partitioned(name):
    model = model_graphs.causal_lm(name, hidden=128)
    ids = torch.randint(0, 512, (1, 32))
    (gm,) = model_graphs.aten_graphs(model, input_ids=ids, use_cache=False)
    graph, writer = fx_graph.to_graph_json(gm)
    return gm, writer, _capi.partition(graph)


class FunctionOpsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.models = {name: partitioned(name) for name in MODELS}

    def holder(self, partition, writer, fx_name):
        found = [s for s in partition["subgraphs"]
                 if fx_name in {writer.origin.get(n) for n in s["nodes"]}]
        return found[0] if len(found) == 1 else None

    def test_each_layer_norm_joins_the_projection_that_reads_it(self):
        for name, (gm, writer, partition) in self.models.items():
            norms = [n.name for n in gm.graph.nodes if "native_layer_norm" in str(n.target)]
            self.assertEqual(len(norms), 2 * 2 + 1, name)  # two per layer and the final one
            for norm in norms:
                s = self.holder(partition, writer, norm)
                self.assertIsNotNone(s, f"{name}: {norm} is in no subgraph")
                text = s["program_text"]
                for op in ("reduce_sum(", "sub(", "sqrt(", "square("):
                    self.assertIn(op, text, f"{name}: {norm}")
                self.assertIn("matmul(", text, f"{name}: {norm} without its projection")

    def test_each_gelu_is_in_the_mlp_subgraph(self):
        for name, (gm, writer, partition) in self.models.items():
            marks = [n.name for n in gm.graph.nodes
                     if str(n.target) in ("aten.gelu.default", "aten.tanh.default")]
            self.assertEqual(len(marks), 2, name)
            for mark in marks:
                s = self.holder(partition, writer, mark)
                self.assertIsNotNone(s, f"{name}: {mark} is in no subgraph")
                text = s["program_text"]
                self.assertIn("erf(" if name == "gpt_neox" else "tanh(", text, name)
                self.assertGreaterEqual(text.count("matmul("), 1, f"{name}: {mark}")

    def test_attention_reads_k_transposed_where_no_layout_describes_it(self):
        """GPT-2 splits a fused QKV projection: K is a head-transposed view of a split, so
        SDPA's Kᵀ is no view the IR has. The partitioner leaves that transpose out and the
        binding makes it, as a permute of K, with the shape the program declares."""
        gm, writer, partition = self.models["gpt2"]
        fx_nodes = {n.name: n for n in gm.graph.nodes}
        attentions = [s for s in partition["subgraphs"] if "causal_mask(" in s["program_text"]]
        self.assertEqual(len(attentions), 2)
        for s in attentions:
            binding = substitute.Binding(s, writer, fx_nodes)
            permutes = [(i, d) for i, d in zip(binding.inputs, s["inputs"])
                        if isinstance(i, tuple) and i[0] == "permute"]
            self.assertEqual(len(permutes), 1, s["inputs"])
            (_, source, perm), declared = permutes[0]
            shape = list(fx_nodes[source].meta["val"].permute(perm).shape)
            line = next(line for line in s["program_text"].splitlines()
                        if line.startswith(f"input {declared['name']} "))
            self.assertIn(str([d for d in shape if d != 1])[1:-1], line)

    def test_every_node_is_placed_or_left_with_a_reason(self):
        for name, (gm, writer, partition) in self.models.items():
            left = dict(report.GraphReport(gm, writer, partition).left_to_pytorch)
            covered = {writer.origin.get(n) for s in partition["subgraphs"] for n in s["nodes"]}
            for node in gm.graph.nodes:
                if node.op == "call_function":
                    self.assertTrue(node.name in covered or left.get(node.name),
                                    f"{name}: {node.name}")
            for node, why in left.items():
                self.assertNotIn("layer_norm", node, f"{name}: {why}")
                self.assertNotIn("gelu", node, f"{name}: {why}")


if __name__ == "__main__":
    unittest.main()
