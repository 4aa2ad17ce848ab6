"""Causal masks a model computes in the graph from no input (python/mugraph/constant_mask.py),
on the CPU: a mask built from arange and comparisons as transformers builds it is evaluated at
translate time and read as is_causal, so the attention program holds causal_mask and reads no
mask; a mask that depends on a graph input, or whose values are not the causal pattern, stays
a tensor the program reads. Needs torch (and transformers for the Llama) and a build of
libmugraph.so ($MUGRAPH_BUILD_DIR)."""
import unittest

import torch
import torch.nn.functional as F

import model_graphs
from mugraph import _capi, constant_mask, fx_graph, substitute

ROWS = 16


def _arange_mask(dtype, window=None):
    """transformers' way: positions from arange, a comparison, where(keep, 0, finfo.min),
    expanded over batch and heads; `window` also masks keys that far behind (sliding)."""
    i = torch.arange(ROWS)
    keep = i[None, :] <= i[:, None]
    if window is not None:
        keep = keep & (i[None, :] > i[:, None] - window)
    mask = torch.where(keep, torch.tensor(0.0, dtype=dtype),
                       torch.tensor(torch.finfo(dtype).min, dtype=dtype))
    return mask[None, None].expand(1, 1, ROWS, ROWS)


class ArangeMask(torch.nn.Module):
    def __init__(self, window=None):
        super().__init__()
        self.window = window

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=_arange_mask(q.dtype, self.window))


class InputMask(torch.nn.Module):
    """The causal pattern plus a padding mask given at run time: not a constant."""

    def forward(self, q, k, v, padding):
        return F.scaled_dot_product_attention(q, k, v,
                                              attn_mask=_arange_mask(q.dtype) + padding)


class EagerAttention(torch.nn.Module):
    """Attention written out as transformers' eager implementations write it (Gemma 2's
    soft-capped scores): scores + mask, a softmax in float, P·V. `leak` also returns the masked
    scores, which a reader other than the softmax then sees."""

    def __init__(self, cap=None, leak=False):
        super().__init__()
        self.cap, self.leak = cap, leak

    def forward(self, q, k, v):
        scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        if self.cap is not None:
            scores = torch.tanh(scores / self.cap) * self.cap
        masked = scores + _arange_mask(q.dtype)
        probs = torch.softmax(masked, dim=-1, dtype=torch.float32).to(q.dtype)
        return (probs @ v, masked) if self.leak else probs @ v


def _attention(module, *args):
    (gm,) = model_graphs.aten_graphs(module, *args)
    graph, writer = fx_graph.to_graph_json(gm)
    partition = _capi.partition(graph)
    (s,) = [s for s in partition["subgraphs"] if s["program_text"].count("matmul(") == 2]
    return gm, writer, s


def _qkv(heads=4, kv_heads=4):
    torch.manual_seed(0)
    return (torch.randn(1, heads, ROWS, 32), torch.randn(1, kv_heads, ROWS, 32),
            torch.randn(1, kv_heads, ROWS, 32))


class ConstantCausalMaskTest(unittest.TestCase):
    def test_an_arange_mask_is_read_as_is_causal(self):
        gm, writer, s = _attention(ArangeMask(), *_qkv())
        self.assertIn("causal_mask(", s["program_text"])
        self.assertEqual(s["causal_masks"][0]["queries"], ROWS)
        self.assertEqual(len(s["inputs"]), 3, s["program_text"])  # Q, K and V: no mask
        self.assertEqual(list(writer.constant_causal_masks.values()), [True])
        binding = substitute.Binding(s, writer, {n.name for n in gm.graph.nodes})
        self.assertTrue(all(isinstance(i, str) for i in binding.inputs), binding.inputs)

    def test_a_mask_from_an_input_stays_a_tensor(self):
        q, k, v = _qkv()
        gm, writer, s = _attention(InputMask(), q, k, v, torch.zeros(1, 4, ROWS, ROWS))
        self.assertNotIn("causal_mask(", s["program_text"])
        self.assertNotIn("causal_masks", s)
        # the constant part and the padding are read, and added to the logits
        self.assertEqual(len(s["inputs"]), 5, s["program_text"])
        self.assertIn("_masked = add(", s["program_text"])

    def test_a_constant_mask_that_is_not_causal_stays_a_tensor(self):
        gm, writer, s = _attention(ArangeMask(window=4), *_qkv())
        self.assertNotIn("causal_mask(", s["program_text"])
        self.assertEqual(len(s["inputs"]), 4, s["program_text"])
        self.assertEqual(list(writer.constant_causal_masks.values()), [False])

    def test_eager_attentions_added_mask_is_read_as_causal_mask(self):
        gm, writer, s = _attention(EagerAttention(cap=50.0), *_qkv())
        self.assertIn("causal_mask(", s["program_text"])
        self.assertIn("tanh(", s["program_text"])
        self.assertEqual(s["causal_masks"][0]["queries"], ROWS)
        self.assertEqual(len(s["inputs"]), 3, s["program_text"])  # Q, K and V: no mask
        binding = substitute.Binding(s, writer, {n.name for n in gm.graph.nodes})
        self.assertTrue(all(isinstance(i, str) for i in binding.inputs), binding.inputs)

    def test_masked_scores_something_else_reads_keep_the_mask(self):
        # -inf and the dtype's lowest are alike only to a softmax: returned, the sum is exact
        gm, writer, s = _attention(EagerAttention(leak=True), *_qkv())
        self.assertNotIn("causal_mask(", s["program_text"])
        self.assertEqual(writer.causal_masks, {})

    def test_the_pattern_is_decided_by_the_values(self):
        keep = torch.ones(ROWS, ROWS, dtype=torch.bool).tril()
        causal = torch.zeros(ROWS, ROWS).masked_fill(~keep, float("-inf"))
        self.assertTrue(constant_mask.is_causal_pattern(causal, ROWS, ROWS))
        self.assertTrue(constant_mask.is_causal_pattern(keep[None, None].expand(2, 3, -1, -1),
                                                        ROWS, ROWS))
        self.assertFalse(constant_mask.is_causal_pattern(causal.T, ROWS, ROWS))
        self.assertFalse(constant_mask.is_causal_pattern(causal.masked_fill(~keep, -1e4),
                                                         ROWS, ROWS))  # above float's lowest
        self.assertFalse(constant_mask.is_causal_pattern(causal[:8], 8, ROWS))  # not square
        two = torch.stack([causal, torch.zeros(ROWS, ROWS)])
        self.assertFalse(constant_mask.is_causal_pattern(two, ROWS, ROWS))


def _model_attentions(name, marker):
    """(writer, the attention subgraphs of the model's prefill: two matmuls and `marker`)."""
    model = model_graphs.causal_lm(name)
    ids = torch.randint(0, 512, (1, ROWS))
    (gm,) = model_graphs.aten_graphs(model, input_ids=ids, use_cache=False)
    graph, writer = fx_graph.to_graph_json(gm)
    partition = _capi.partition(graph)
    return writer, [s for s in partition["subgraphs"] if marker in s["program_text"]
                    and s["program_text"].count("matmul(") == 2]


class ModelCausalMaskTest(unittest.TestCase):
    def test_llama_attention_holds_causal_mask_and_reads_no_mask(self):
        writer, attention = _model_attentions("llama", "reduce_max(")
        self.assertEqual(len(attention), 2)  # one per layer
        for s in attention:
            self.assertIn("causal_mask(", s["program_text"])
            self.assertEqual(len(s["inputs"]), 3, s["program_text"])
            for i in s["inputs"]:
                self.assertNotIn("mask", i["onnx_value"])
                self.assertNotIn(i.get("reads_buffer_of", i["onnx_value"]), writer.causal_masks)
        print("\n" + attention[0]["program_text"])

    def test_gemma2_soft_capped_attention_holds_causal_mask(self):
        """Gemma 2 writes attention out (its scores soft-capped by tanh) and adds the mask."""
        _, attention = _model_attentions("gemma2", "tanh(")
        self.assertEqual(len(attention), 2)  # one per layer
        for s in attention:
            self.assertIn("causal_mask(", s["program_text"])
            self.assertEqual(len(s["inputs"]), 3, s["program_text"])


if __name__ == "__main__":
    unittest.main()
