"""End to end on a GPU: torch.compile(model, backend="mugraph") on real transformers
architectures in f16 gives eager's logits, runs our kernels for some subgraphs, captures into a
CUDA graph, and compiles a second time from the cache. Skips without CUDA (label gpu)."""
import os
import tempfile
import time
import unittest

import torch

import model_graphs

CUDA = torch.cuda.is_available()


def max_relative_error(a, b):
    a, b = a.float(), b.float()
    return ((a - b).abs().max() / b.abs().max()).item()


@unittest.skipUnless(CUDA, "no CUDA device")
class GpuBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.TemporaryDirectory()
        os.environ["MUGRAPH_CACHE_DIR"] = cls.cache.name

    @classmethod
    def tearDownClass(cls):
        del os.environ["MUGRAPH_CACHE_DIR"]
        cls.cache.cleanup()

    def compiled(self, model):
        import mugraph.backend

        torch._dynamo.reset()
        backend = lambda gm, ex: mugraph.backend.mugraph_backend(  # noqa: E731
            gm, ex, time_limit=int(os.environ.get("MUGRAPH_TEST_TIME_LIMIT", "30")))
        return torch.compile(model, backend=backend, dynamic=False)

    def test_logits_match_eager_and_our_kernels_run(self):
        from mugraph import kernels

        for name in ("llama", "qwen3", "mistral"):
            with self.subTest(model=name):
                model = model_graphs.causal_lm(name, device="cuda", hidden=256)
                ids = torch.randint(0, 512, (1, 64), device="cuda")
                with torch.no_grad():
                    expected = model(input_ids=ids, use_cache=False).logits
                    compiled = self.compiled(model)
                    first = compiled(input_ids=ids, use_cache=False).logits
                    registered = len(kernels._REGISTRY)
                    second = compiled(input_ids=ids, use_cache=False).logits
                self.assertTrue(torch.isfinite(second).all())
                self.assertLess(max_relative_error(first, expected), 2e-2)
                self.assertLess(max_relative_error(second, expected), 2e-2)
                self.assertGreater(registered, 0, "no subgraph runs our kernels")

    def test_the_compiled_model_captures_into_a_cuda_graph(self):
        model = model_graphs.causal_lm("llama", device="cuda", hidden=256)
        ids = torch.randint(0, 512, (1, 64), device="cuda")
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
            compiled = self.compiled(model)
            for _ in range(2):
                compiled(input_ids=ids, use_cache=False)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = compiled(input_ids=ids, use_cache=False).logits
            graph.replay()
            torch.cuda.synchronize()
        self.assertLess(max_relative_error(captured, expected), 2e-2)

    def test_a_second_compile_reads_the_cache(self):
        model = model_graphs.causal_lm("qwen3", device="cuda", hidden=256)
        ids = torch.randint(0, 512, (1, 64), device="cuda")
        with torch.no_grad():
            self.compiled(model)(input_ids=ids, use_cache=False)
            start = time.monotonic()
            self.compiled(model)(input_ids=ids, use_cache=False)
            seconds = time.monotonic() - start
        self.assertLess(seconds, 10.0)


if __name__ == "__main__":
    unittest.main()
