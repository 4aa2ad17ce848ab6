"""End to end on a GPU: a decode loop over a transformers DynamicCache under
torch.compile(backend="mugraph"). After Dynamo's first (static) compile, the growing length is a
dynamic dim: one more compile serves every step up to max_length, our attention kernels take
the length at each launch, the logits match eager's at every step, and a length past
max_length compiles once more and stays correct. A prefill under dynamic=True serves prompts of
several lengths from one compile. Skips without CUDA (label gpu)."""
import os
import tempfile
import unittest

import torch

import model_graphs
from mugraph import fx_graph
from mugraph.substitute import max_relative_error

CUDA = torch.cuda.is_available()


def _compiled(model, max_length, dynamic=None):
    """The model under the mugraph backend, every matching variant used."""
    import mugraph.backend

    torch._dynamo.reset()
    return torch.compile(
        model, backend=mugraph.backend.mugraph_backend, dynamic=dynamic,
        options={"time_limit": int(os.environ.get("MUGRAPH_TEST_TIME_LIMIT", "30")),
                 "only_faster": False, "end_to_end": False, "max_length": max_length})


@unittest.skipUnless(CUDA, "no CUDA device")
class GpuDynamicDecodeTest(unittest.TestCase):
    def test_one_compile_serves_every_step_of_a_growing_cache(self):
        import mugraph.backend
        from transformers import DynamicCache

        max_length = 48
        with tempfile.TemporaryDirectory() as cache_dir:
            os.environ["MUGRAPH_CACHE_DIR"] = cache_dir
            try:
                model = model_graphs.causal_lm("llama", device="cuda", hidden=256)
                compiled = _compiled(model, max_length)
                torch.manual_seed(3)
                prompt = torch.randint(0, 512, (1, 32), device="cuda")
                ours_cache, eager_cache = DynamicCache(), DynamicCache()
                first_report = len(mugraph.backend.REPORTS)
                errors = []
                with torch.no_grad():
                    for cache in (ours_cache, eager_cache):
                        model(input_ids=prompt, past_key_values=cache, use_cache=True)
                    for step in range(20):  # cache lengths 33 .. 52
                        ids = torch.randint(0, 512, (1, 1), device="cuda")
                        ours = compiled(input_ids=ids, past_key_values=ours_cache,
                                        use_cache=True).logits
                        expected = model(input_ids=ids, past_key_values=eager_cache,
                                         use_cache=True).logits
                        self.assertTrue(torch.isfinite(ours).all(), step)
                        errors.append(max_relative_error(ours, expected))
            finally:
                del os.environ["MUGRAPH_CACHE_DIR"]
        self.assertLess(max(errors), 2e-2, errors)
        reports = mugraph.backend.REPORTS[first_report:]
        # 33: static; 34 .. max_length: one dynamic graph; past it: one more
        self.assertEqual(len(reports), 3, [r.graph for r in reports])
        dynamic = reports[1]
        self.assertTrue(fx_graph.program_dims(dynamic.partition), "the second graph is dynamic")
        # each layer's attention is dynamic, and runs our kernels at every length (the search's
        # dispatch over lengths where it wrote one)
        attention = [row for row in dynamic.subgraphs.values() if row.get("dynamic")]
        self.assertEqual(len(attention), 2, dynamic.subgraphs)
        for row in attention:
            self.assertEqual(row["status"], "used", row)
        self.assertEqual(dynamic.graph["runs"], "mugraph")
        self.assertFalse(fx_graph.program_dims(reports[2].partition),
                         "past max_length no program is dynamic")


@unittest.skipUnless(CUDA, "no CUDA device")
class GpuDynamicPrefillTest(unittest.TestCase):
    def test_one_compile_serves_prompts_of_every_length(self):
        """A prefill under dynamic=True: one compile, whose programs take the prompt's length
        as a dynamic dim, serves prompts of 40, 64 and 97 tokens with eager's logits."""
        import mugraph.backend

        with tempfile.TemporaryDirectory() as cache_dir:
            os.environ["MUGRAPH_CACHE_DIR"] = cache_dir
            try:
                model = model_graphs.causal_lm("llama", device="cuda", hidden=256)
                compiled = _compiled(model, 128, dynamic=True)
                torch.manual_seed(4)
                first_report = len(mugraph.backend.REPORTS)
                errors = []
                with torch.no_grad():
                    for length in (64, 40, 97):
                        ids = torch.randint(0, 512, (1, length), device="cuda")
                        ours = compiled(input_ids=ids, use_cache=False).logits
                        expected = model(input_ids=ids, use_cache=False).logits
                        self.assertTrue(torch.isfinite(ours).all(), length)
                        errors.append(max_relative_error(ours, expected))
            finally:
                del os.environ["MUGRAPH_CACHE_DIR"]
        self.assertLess(max(errors), 2e-2, errors)
        reports = mugraph.backend.REPORTS[first_report:]
        self.assertEqual(len(reports), 1, [r.graph for r in reports])
        self.assertTrue(fx_graph.program_dims(reports[0].partition), "the graph is dynamic")
        used = [row for row in reports[0].subgraphs.values()
                if row.get("dynamic") and row["status"] == "used"]
        self.assertGreaterEqual(len(used), 4, reports[0].subgraphs)


if __name__ == "__main__":
    unittest.main()
