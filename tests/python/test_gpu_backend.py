"""End to end on a GPU: torch.compile(model, backend="mugraph") on real transformers
architectures in f16 gives eager's logits, runs our kernels for some subgraphs, captures into a
CUDA graph, and compiles a second time from the cache. Skips without CUDA (label gpu)."""
import os
import tempfile
import time
import unittest

import torch

import model_graphs
from mugraph.substitute import max_relative_error

CUDA = torch.cuda.is_available()


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

    def compiled(self, model, **options):
        torch._dynamo.reset()
        options.setdefault("time_limit", int(os.environ.get("MUGRAPH_TEST_TIME_LIMIT", "30")))
        from mugraph.backend import mugraph_backend  # the GPU machine may lack the entry point

        return torch.compile(model, backend=mugraph_backend, options=options, dynamic=False)

    def reports_since(self, first):
        """The compile reports after the first `first`, at least one, each of a graph the
        backend compiled: a compile that fell back to eager (no library, a failed partition)
        leaves none, and must fail the test rather than pass on eager's logits."""
        import mugraph.backend

        reports = mugraph.backend.REPORTS[first:]
        self.assertTrue(reports, "the backend compiled nothing (it fell back to eager)")
        for r in reports:
            self.assertTrue(r.graph and r.graph["compiled"], r.graph and r.graph["why"])
        return reports

    def compiled_logits(self, name, batch=1):
        """Eager's logits and the second compiled call's, and the compile reports, of the model
        at hidden 256 on `batch` sequences of 64 tokens, every matching variant used."""
        model = model_graphs.causal_lm(name, device="cuda", hidden=256)
        ids = torch.randint(0, 512, (batch, 64), device="cuda")
        import mugraph.backend

        first_report = len(mugraph.backend.REPORTS)
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
            compiled = self.compiled(model, only_faster=False, end_to_end=False)
            compiled(input_ids=ids, use_cache=False)
            second = compiled(input_ids=ids, use_cache=False).logits
        return expected, second, self.reports_since(first_report)

    def test_logits_match_eager_and_our_kernels_run(self):
        """Every matching variant is used (not only the faster ones), in a graph whose rest
        Inductor compiles around the mugraph::launch calls."""
        import mugraph.backend

        for name in ("llama", "qwen3", "mistral"):
            with self.subTest(model=name):
                model = model_graphs.causal_lm(name, device="cuda", hidden=256)
                ids = torch.randint(0, 512, (1, 64), device="cuda")
                first_report = len(mugraph.backend.REPORTS)
                with torch.no_grad():
                    expected = model(input_ids=ids, use_cache=False).logits
                    compiled = self.compiled(model, only_faster=False, end_to_end=False)
                    first = compiled(input_ids=ids, use_cache=False).logits
                    second = compiled(input_ids=ids, use_cache=False).logits
                self.assertTrue(torch.isfinite(second).all())
                self.assertLess(max_relative_error(first, expected), 2e-2)
                self.assertLess(max_relative_error(second, expected), 2e-2)
                reports = mugraph.backend.REPORTS[first_report:]
                self.assertTrue(reports)
                for r in reports:
                    self.assertEqual(r.graph["runs"], "mugraph")
                    self.assertTrue(r.graph["compiled"], r.graph["why"])
                used = sum(row["status"] == "used" for r in reports
                           for row in r.subgraphs.values())
                self.assertGreater(used, 0, "no subgraph runs our kernels")

    def test_a_batch_runs_in_our_kernels_and_matches_eager(self):
        """Two sequences: our kernels read the batch's [2, s, h] values as [2·s, h] rows,
        eager attention's [2, heads, s, d] as [2·heads, s, d] matrices and GPT-2's position
        embeddings [1, s, h] stacked over the batch (onnx_import/row_merge.h), so each layer is
        as few launches as at batch 1; the logits are eager's."""
        for name in ("llama", "gemma2", "gpt2"):
            with self.subTest(model=name):
                expected, second, reports = self.compiled_logits(name, batch=2)
                self.assertTrue(torch.isfinite(second).all())
                self.assertLess(max_relative_error(second, expected), 2e-2)
                rows = [row for r in reports for row in r.subgraphs.values()]
                self.assertLessEqual(len(rows), 9, [row["name"] for row in rows])
                used = [row for row in rows if row["status"] == "used"]
                self.assertGreaterEqual(len(used), 4, rows)

    def test_layer_norm_and_gelu_run_in_our_kernels(self):
        """GPT-2 (tanh GELU written out) and GPT-NeoX (aten.gelu): the subgraphs holding a
        LayerNorm and a GELU pass the check against PyTorch and run our kernels."""
        for name, function in (("gpt2", "tanh("), ("gpt_neox", "erf(")):
            with self.subTest(model=name):
                expected, second, reports = self.compiled_logits(name)
                self.assertLess(max_relative_error(second, expected), 2e-2)
                used = [s["program_text"] for r in reports for s in r.partition["subgraphs"]
                        if r.subgraphs[s["name"]]["status"] == "used"]
                self.assertTrue(any(function in text for text in used), f"{name}: {used}")
                # GPT-2's K is a view of its split QKV: the binding makes Kᵀ (substitute.py)
                self.assertTrue(any("causal_mask(" in text for text in used), f"{name}: {used}")
                self.assertTrue(any("sub(" in t and "sqrt(" in t and "matmul(" in t
                                    for t in used), f"{name}: no LayerNorm with its projection")

    def test_by_default_the_faster_graph_runs_and_matches_eager(self):
        import mugraph.backend

        model = model_graphs.causal_lm("llama", device="cuda", hidden=256)
        ids = torch.randint(0, 512, (1, 64), device="cuda")
        first_report = len(mugraph.backend.REPORTS)
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
            compiled = self.compiled(model)
            compiled(input_ids=ids, use_cache=False)
            second = compiled(input_ids=ids, use_cache=False).logits
        self.assertLess(max_relative_error(second, expected), 2e-2)
        for r in self.reports_since(first_report):
            self.assertEqual(r.graph["runs"] == "mugraph", r.any_used())
            if r.graph["ours_us"] is not None:  # timed whole both ways: the faster one runs
                self.assertEqual(r.graph["runs"] == "mugraph",
                                 r.graph["ours_us"] < r.graph["pytorch_us"])

    def test_the_compiled_model_captures_into_a_cuda_graph(self):
        import mugraph.backend

        model = model_graphs.causal_lm("llama", device="cuda", hidden=256)
        ids = torch.randint(0, 512, (1, 64), device="cuda")
        first_report = len(mugraph.backend.REPORTS)
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
            compiled = self.compiled(model, only_faster=False, end_to_end=False)
            for _ in range(2):
                compiled(input_ids=ids, use_cache=False)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = compiled(input_ids=ids, use_cache=False).logits
            graph.replay()
            torch.cuda.synchronize()
        self.assertLess(max_relative_error(captured, expected), 2e-2)
        reports = self.reports_since(first_report)
        self.assertTrue(any(r.any_used() for r in reports), "no subgraph of the capture is ours")

    def test_variants_ranked_without_a_gpu_are_timed_here_and_the_fastest_runs(self):
        """A cache the search filled without a GPU (profile off: variants in the cost model's
        order): the backend times every variant that matches PyTorch on this GPU and runs the
        fastest; a second compile runs the same ones without timing them again."""
        import mugraph.backend

        model = model_graphs.causal_lm("llama", device="cuda", hidden=256)
        ids = torch.randint(0, 512, (1, 64), device="cuda")
        options = dict(profile=False, only_faster=False, end_to_end=False)
        saved = os.environ["MUGRAPH_CACHE_DIR"]
        with tempfile.TemporaryDirectory() as cache, torch.no_grad():
            os.environ["MUGRAPH_CACHE_DIR"] = cache
            try:
                expected = model(input_ids=ids, use_cache=False).logits
                first_report = len(mugraph.backend.REPORTS)
                compiled = self.compiled(model, **options)
                compiled(input_ids=ids, use_cache=False)
                logits = compiled(input_ids=ids, use_cache=False).logits
                first = [row for r in mugraph.backend.REPORTS[first_report:]
                         for row in r.subgraphs.values()]
                second_report = len(mugraph.backend.REPORTS)
                self.compiled(model, **options)(input_ids=ids, use_cache=False)
                second = [row for r in mugraph.backend.REPORTS[second_report:]
                          for row in r.subgraphs.values()]
            finally:
                os.environ["MUGRAPH_CACHE_DIR"] = saved
        self.assertLess(max_relative_error(logits, expected), 2e-2)
        timed = [row for row in first if len(row.get("variants_us", {})) > 1]
        self.assertTrue(timed, "no subgraph had two matching variants to time")
        for row in timed:
            times = {k: v for k, v in row["variants_us"].items() if isinstance(v, float)}
            self.assertEqual(row["status"], "used", row.get("reason"))
            self.assertEqual(row["variant"], min(times, key=times.get), row["variants_us"])
        chosen = {row["name"]: row.get("variant") for row in first}
        self.assertEqual(len(second), len(first))
        for row in second:
            self.assertNotIn("variants_us", row, "timed again on a cached compile")
            self.assertEqual(row.get("variant"), chosen[row["name"]])

    def test_a_second_compile_reads_the_cache(self):
        import mugraph.backend

        model = model_graphs.causal_lm("qwen3", device="cuda", hidden=256)
        ids = torch.randint(0, 512, (1, 64), device="cuda")
        with torch.no_grad():
            first_report = len(mugraph.backend.REPORTS)
            self.compiled(model)(input_ids=ids, use_cache=False)
            first = self.reports_since(first_report)
            second_report = len(mugraph.backend.REPORTS)
            start = time.monotonic()
            self.compiled(model)(input_ids=ids, use_cache=False)
            seconds = time.monotonic() - start
            second = self.reports_since(second_report)
        self.assertLess(seconds, 10.0)
        self.assertEqual(len(second), len(first))
        rows = [row for r in second for row in r.subgraphs.values()]
        self.assertTrue(rows, "no subgraph to read from the cache")
        for row in rows:
            self.assertTrue(row["cached"], f"{row['name']} searched again")


if __name__ == "__main__":
    unittest.main()
