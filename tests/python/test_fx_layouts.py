"""How the FX front end describes a value's storage (graph JSON "layout"), on the CPU: a value
of logical [.., h, s, d] laid out [.., s, h, d] is "heads_transposed", and so is attention's
dense result that every reader reads with its heads swapped back. The partition then stores
an MHA attention's result so and lets the output projection read that memory as its row-major
input ("buffer_layout"); a GQA attention folded into its rows stays row-major. Needs torch and
transformers (scripts/setup.sh installs them) and a build of libmugraph.so
($MUGRAPH_BUILD_DIR)."""
import unittest

import torch

import model_graphs
from mugraph import _capi, fx_graph, fx_values


def partitioned(name, hidden):
    model = model_graphs.causal_lm(name, hidden=hidden, layers=1)
    ids = torch.randint(0, 512, (1, 32))
    (gm,) = model_graphs.aten_graphs(model, input_ids=ids, use_cache=False)
    graph, writer = fx_graph.to_graph_json(gm)
    return writer, _capi.partition(graph)


def attention_and_projection(partition):
    """The attention subgraph and the one that reads its result (the output projection)."""
    attention = next(s for s in partition["subgraphs"] if s["name"].startswith("attention"))
    result = attention["outputs"][0]["onnx_value"]
    reader = next(s for s in partition["subgraphs"]
                  if any(i.get("reads_buffer_of", i["onnx_value"]) == result
                         for i in s["inputs"]))
    entry = next(i for i in reader["inputs"] if i.get("reads_buffer_of", i["onnx_value"]) == result)
    return attention, entry


class StoredLayoutTest(unittest.TestCase):
    def test_the_layout_of_a_tensor_follows_its_strides(self):
        dense = torch.empty(1, 4, 16, 8)
        self.assertIsNone(fx_values.stored_layout(dense))
        swapped = torch.empty(1, 16, 4, 8).transpose(1, 2)  # [b, h, s, d] stored [b, s, h, d]
        self.assertEqual(fx_values.stored_layout(swapped), "heads_transposed")
        self.assertTrue(fx_values.storage_view(swapped, "heads_transposed").is_contiguous())
        # A slice of a wider buffer (a fused projection's third) has rows further apart.
        fused = torch.empty(1, 16, 3 * 32)[..., :32].reshape(1, 16, 4, 8).transpose(1, 2)
        self.assertIsNone(fx_values.stored_layout(fused))
        self.assertIsNone(fx_values.stored_layout(torch.empty(16, 8).t()))  # rank 2

    def test_only_a_result_read_with_its_heads_swapped_back_asks_for_the_layout(self):
        from torch.fx.experimental.proxy_tensor import make_fx

        def merged(q, k, v):  # the heads swapped back and merged, for the output projection
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            return o.transpose(1, 2).reshape(1, 16, 64)

        def scaled(q, k, v):  # read as it is
            return torch.nn.functional.scaled_dot_product_attention(q, k, v) * 2

        q, k, v = (torch.randn(1, 4, 16, 16) for _ in range(3))
        for function, wanted in ((merged, True), (scaled, False)):
            gm = make_fx(function)(q, k, v)
            results = [n for n in gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)
                       and fx_graph._attention_result(n)]
            self.assertTrue(results, function.__name__)
            for n in results:
                self.assertEqual(fx_graph._readers_swap_heads(n, n.meta["val"]), wanted,
                                 f"{function.__name__}: {n.name}")

    def test_an_mha_result_is_stored_for_the_output_projection(self):
        """Phi-3 (16 heads of 96 at hidden 1536; two here): SDPA's result is read only
        with its heads swapped back, so the attention stores it [s, h, d] and the output
        projection reads that memory as [s, h·d]."""
        writer, partition = partitioned("phi3", 192)
        attention, entry = attention_and_projection(partition)
        self.assertEqual(attention["outputs"][0].get("layout"), "heads_transposed")
        self.assertIn("layout=heads_transposed", attention["program_text"])
        self.assertEqual(entry.get("buffer_layout"), "heads_transposed", entry)
        self.assertNotIn("layout", entry)  # row-major through the swap back and the merge
        self.assertIn(attention["outputs"][0]["onnx_value"], writer.stored_layouts)

    def test_a_slice_of_a_fused_projection_is_read_as_the_value_itself(self):
        """Phi-3's Q, K and V are column slices of one fused projection (rows 3·h·d apart):
        the graph JSON says they have gaps ("dense": false), and the attention reads V itself,
        row-major, where through the views it would read the slice's memory [s, h, d]
        (heads_transposed). The binding copies it either way; read so, the copy is written in
        the order RoPE's q and k are, by the framework kernel that writes them."""
        self.assertTrue(fx_values.has_gaps(torch.empty(1, 16, 96)[..., :32]))
        self.assertFalse(fx_values.has_gaps(torch.empty(1, 16, 4, 8).transpose(1, 2)))
        writer, partition = partitioned("phi3", 192)
        attention = next(s for s in partition["subgraphs"] if s["name"].startswith("attention"))
        gaps = {v["name"] for v in writer.graph["values"] if v.get("dense") is False}
        self.assertTrue(gaps)
        for i in attention["inputs"]:
            self.assertNotIn("buffer_layout", i, i)
            self.assertNotEqual(i.get("layout"), "heads_transposed", i)
        read = [i.get("reads_buffer_of", i["onnx_value"]) for i in attention["inputs"]]
        self.assertTrue(any(r in gaps for r in read), read)  # V itself: a view with gaps
        self.assertNotIn("layout=heads_transposed", attention["program_text"].split("\noutput")[0])

    def test_a_folded_gqa_result_stays_row_major(self):
        """Llama's query heads fold onto its KV heads: the folded rows mix heads and
        positions, so the result is written row-major and read in its logical order."""
        _, partition = partitioned("llama", 128)
        attention, entry = attention_and_projection(partition)
        self.assertIn("KV groups", attention.get("repeated_kv_heads", ""))
        self.assertNotIn("layout", attention["outputs"][0])
        self.assertNotIn("layout=heads_transposed", attention["program_text"].split("\noutput")[-1])
        for i in attention["inputs"]:
            self.assertNotIn("buffer_layout", i, i)


if __name__ == "__main__":
    unittest.main()
