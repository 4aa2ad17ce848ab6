"""The FX front end and the C++ partitioner behind the C API, on the CPU: real transformers
architectures traced to aten graphs, written as graph JSON and partitioned; one subgraph
searched through the cache. Needs torch and transformers (scripts/setup.sh installs them) and
a build of libmugraph.so ($MUGRAPH_BUILD_DIR)."""
import os
import tempfile
import time
import unittest

import torch

import model_graphs
from mugraph import _capi, fx_graph, optimize, report


def partitioned(name):
    model = model_graphs.causal_lm(name)
    ids = torch.randint(0, 512, (1, 16))
    (gm,) = model_graphs.aten_graphs(model, input_ids=ids, use_cache=False)
    graph, writer = fx_graph.to_graph_json(gm)
    return gm, writer, _capi.partition(graph)


class FxPartitionTest(unittest.TestCase):
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
            sdpa = [n.name for n in gm.graph.nodes if "scaled_dot_product" in str(n.target)]
            self.assertEqual(len(sdpa), 2, name)
            for attention in sdpa:
                holders = [s["name"] for s in partition["subgraphs"]
                           if writer.attentions[attention] + ".qk" in s["nodes"]
                           or writer.attentions[attention] + ".out" in s["nodes"]]
                self.assertEqual(len(holders), 1, f"{name}: {attention} is in {holders}")
                program = next(s["program_text"] for s in partition["subgraphs"]
                               if s["name"] == holders[0])
                for op in ("matmul", "reduce_max", "exp", "reduce_sum", "div"):
                    self.assertIn(op, program, f"{name}: {attention}")

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


class CacheTest(unittest.TestCase):
    def test_a_searched_program_is_read_back_from_the_cache(self):
        gm, writer, partition = partitioned("llama")
        smallest = min(partition["subgraphs"], key=lambda s: len(s["nodes"]))
        options = optimize.Options(time_limit=30, max_variants=1, profile=False)
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
