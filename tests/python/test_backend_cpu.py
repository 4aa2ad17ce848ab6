"""The backend on the CPU: torch.compile(model, backend="mugraph", mode=..., options=...) found
through its entry point, options split between mugraph and Inductor, the search run per
subgraph, and the graph left to PyTorch compiled by Inductor (no GPU to run our kernels on),
giving eager's outputs. Needs torch (scripts/setup.sh installs it and the package) and a build
($MUGRAPH_BUILD_DIR)."""
import os
import statistics
import tempfile
import unittest

import torch

from mugraph import backend, timing


class RmsNormMlp(torch.nn.Module):
    def __init__(self, hidden=64, inner=128):
        super().__init__()
        self.norm = torch.nn.RMSNorm(hidden, eps=1e-6)
        self.gate = torch.nn.Linear(hidden, inner, bias=False)
        self.up = torch.nn.Linear(hidden, inner, bias=False)
        self.down = torch.nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class CacheStep(torch.nn.Module):
    """A decode step's shape of state: a cache buffer written at one position in place, then
    read whole."""

    def __init__(self, positions=16, width=32):
        super().__init__()
        self.register_buffer("cache", torch.randn(positions, width))
        self.proj = torch.nn.Linear(width, width, bias=False)

    def forward(self, x, position):
        self.cache.index_copy_(0, position, self.proj(x))
        return torch.softmax(x @ self.cache.t(), dim=-1)


class ConfigTest(unittest.TestCase):
    def test_torch_compile_options_split_between_mugraph_and_inductor(self):
        config = backend.Config.from_torch_compile(
            mode="max-autotune-no-cudagraphs",
            options={"time_limit": 7, "max_autotune_gemm_backends": "TRITON"})
        self.assertEqual(config.search.time_limit, 7)
        self.assertEqual(config.rest.runner, "inductor")
        self.assertTrue(config.rest.patches["max_autotune"])
        self.assertEqual(config.rest.patches["max_autotune_gemm_backends"], "TRITON")
        self.assertFalse(config.rest.patches["triton.cudagraphs"],
                         "Inductor's own CUDA graphs stay off inside the backend")

    def test_the_mode_may_come_in_the_options(self):
        config = backend.Config.from_torch_compile(options={"mode": "max-autotune"})
        self.assertTrue(config.rest.patches["max_autotune"])

    def test_bad_options_are_clear_errors(self):
        with self.assertRaisesRegex(TypeError, "unknown option"):
            backend.Config.from_torch_compile(time_limt=3)
        with self.assertRaisesRegex(ValueError, "rest='bogus'"):
            backend.Config(rest="bogus")
        with self.assertRaisesRegex(ValueError, "need rest='inductor'"):
            backend.Config.from_torch_compile(mode="max-autotune", options={"rest": "eager"})


class CpuBackendTest(unittest.TestCase):
    def compiled_output(self, rest):
        torch.manual_seed(0)
        model = RmsNormMlp().eval()
        x = torch.randn(4, 16, 64)
        backend.REPORTS.clear()
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="mugraph", dynamic=False,
                                 options={"time_limit": 3, "max_variants": 1, "rest": rest,
                                          "verbose": False})
        with torch.no_grad():
            first, second, eager = compiled(x), compiled(x), model(x)
        return first, second, eager, backend.REPORTS

    def test_the_rest_runs_in_inductor_and_matches_eager(self):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MUGRAPH_CACHE_DIR"] = cache
            try:
                for rest in ("inductor", "eager"):
                    first, second, eager, reports = self.compiled_output(rest)
                    self.assertEqual(len(reports), 1)
                    graph_report = reports[0]
                    self.assertTrue(graph_report.subgraphs, "the MLP was partitioned")
                    for row in graph_report.subgraphs.values():
                        self.assertEqual(row["status"], "pytorch")  # no GPU to run ours on
                        self.assertIn("not CUDA tensors", row["reason"])
                    self.assertEqual(graph_report.graph["runs"], "pytorch")
                    self.assertIsNone(graph_report.graph["why"],
                                      "Inductor compiled the graph (no fallback to eager)")
                    self.assertTrue(graph_report.graph["compiled"])
                    phases = set(graph_report.phases)
                    self.assertLessEqual({"partition", "search_or_cache", "check_and_substitute",
                                          "check_and_substitute/record",
                                          "check_and_substitute/check_variants",
                                          "check_and_substitute/substitute"}, phases)
                    parts = sum(s for name, s in graph_report.phases.items()
                                if name.startswith("check_and_substitute/")
                                and name != "check_and_substitute/load_variants")
                    self.assertLessEqual(parts, graph_report.phases["check_and_substitute"])
                    self.assertEqual("rest_compile" in phases, rest == "inductor")
                    self.assertEqual(graph_report.graph["rest"].split()[0],
                                     "TorchInductor" if rest == "inductor" else "eager")
                    for out in (first, second):
                        torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-4)
            finally:
                del os.environ["MUGRAPH_CACHE_DIR"]

    def test_a_cache_written_in_place_stays_in_place(self):
        """The mutation stays in the aten graph (a copy_ into the input, which Inductor does in
        place), not a new cache returned and copied back outside it; the compiled step leaves
        the cache as eager leaves it."""
        import copy

        torch.manual_seed(0)
        eager_model = CacheStep().eval()
        model = copy.deepcopy(eager_model)
        x, position = torch.randn(1, 32), torch.tensor([5])
        with tempfile.TemporaryDirectory() as cache:
            os.environ["MUGRAPH_CACHE_DIR"] = cache
            try:
                for rest in ("inductor", "eager"):
                    backend.REPORTS.clear()
                    torch._dynamo.reset()
                    compiled = torch.compile(model, backend="mugraph", dynamic=False,
                                             options={"time_limit": 3, "max_variants": 1,
                                                      "rest": rest, "verbose": False})
                    for step in range(2):
                        x = torch.randn(1, 32)
                        position = torch.tensor([3 + 4 * step])
                        with torch.no_grad():
                            got, expected = compiled(x, position), eager_model(x, position)
                        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
                        torch.testing.assert_close(model.cache, eager_model.cache)
                    (graph_report,) = backend.REPORTS
                    fx = graph_report.gm.graph
                    copies = [n for n in fx.nodes if n.target == torch.ops.aten.copy_.default]
                    self.assertEqual(len(copies), 1, "the cache's update stays in the graph")
                    self.assertIn("in place", graph_report.writer.untranslated[copies[0].name])
                    # The graph our kernels are substituted into keeps the write too.
                    from mugraph import substitute

                    kept = substitute.substituted(graph_report.gm, [], graph_report)
                    self.assertTrue(any(n.target == torch.ops.aten.copy_.default
                                        for n in kept.graph.nodes))
                    (out,) = [n for n in fx.nodes if n.op == "output"]
                    shapes = [tuple(a.meta["val"].shape) for a in out.args[0]]
                    self.assertNotIn((16, 32), shapes, "the graph does not return the cache")
            finally:
                del os.environ["MUGRAPH_CACHE_DIR"]


class _FakeVariant:
    """Stands in for _capi.Variant (which needs a GPU): one f32 input and output of 4
    elements; records every load and launch."""
    loads = 0

    def __init__(self, directory):
        type(self).loads += 1
        self.tensors = [{"name": "x", "role": "input", "dtype": "f32", "layout": "row_major",
                         "bytes": 16},
                        {"name": "y", "role": "output", "dtype": "f32", "layout": "row_major",
                         "bytes": 16}]
        self.workspace_bytes = 0
        self.dims = []  # its kernels take no lengths
        self.launched = []

    def launch(self, addresses, workspace, stream, lengths=()):
        self.launched.append(addresses)


class LoadedVariantTest(unittest.TestCase):
    def test_a_folder_loads_once_per_process_and_launches_through_its_variant(self):
        from unittest import mock

        from mugraph import kernels

        with tempfile.TemporaryDirectory() as folder, \
                mock.patch.object(kernels._capi, "Variant", _FakeVariant), \
                mock.patch.object(kernels.torch.cuda, "current_stream",
                                  lambda device=None: mock.Mock(cuda_stream=0)):
            manifest = os.path.join(folder, "manifest.json")
            with open(manifest, "w") as f:
                f.write("{}")
            _FakeVariant.loads = 0
            first = kernels.LoadedVariant(folder, [[4]])
            second = kernels.LoadedVariant(folder, [[4]])
            self.assertEqual(_FakeVariant.loads, 1, "a recompile reuses the loaded module")
            self.assertIs(first.variant, second.variant)
            x = torch.randn(4)
            (y,) = first.run([x])
            self.assertEqual(tuple(y.shape), (4,))
            self.assertEqual(first.variant.launched, [[x.data_ptr(), y.data_ptr()]])
            stamp = os.stat(manifest).st_mtime_ns
            os.utime(manifest, ns=(stamp + 10**9, stamp + 10**9))  # the cache rewrote it
            kernels.LoadedVariant(folder, [[4]])
            self.assertEqual(_FakeVariant.loads, 2, "a rewritten folder is loaded again")


if __name__ == "__main__":
    unittest.main()


class DecisionsTest(unittest.TestCase):
    """The measured decisions a compile stores for the next compile of the same graph: every
    subgraph it timed, also one PyTorch ran faster and a graph in which no subgraph was used,
    so a cached compile times nothing again."""

    def test_subgraphs_pytorch_ran_faster_are_remembered_with_the_variant_timed(self):
        import model_graphs

        from mugraph import _capi, fx_graph, report

        torch.manual_seed(0)
        (gm,) = model_graphs.traced_graphs(RmsNormMlp(), lambda m: m(torch.randn(8, 64)))
        graph, writer = fx_graph.to_graph_json(gm)
        partition = _capi.partition(graph)
        self.assertTrue(partition["subgraphs"])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decisions.json")
            first = report.GraphReport(gm, writer, partition, path)
            for s in partition["subgraphs"]:
                first.searched(s, None, {"variants": []}, True)
                first.timed(s["name"], "v1", 10.0, 20.0)
                first.fallback(s, "PyTorch runs it faster")
            first.finished("pytorch", "eager", compiled=True)
            first.remember()
            second = report.GraphReport(gm, writer, partition, path)
            for s in partition["subgraphs"]:
                before = second.measured_before(s["name"], "v1")
                self.assertEqual((before["pytorch_us"], before["ours_us"]), (10.0, 20.0))
                self.assertIsNone(second.measured_before(s["name"], "v2"))
                self.assertEqual(second.variant_before(s["name"]), "v1")
            self.assertEqual(second.decided_before()["runs"], "pytorch")

    def test_a_graph_run_with_our_kernels_untimed_keeps_its_subgraphs_variants(self):
        """end_to_end off: no whole-graph decision to keep, but each subgraph's times and the
        variant chosen for it are kept, so a cached compile times no variant again."""
        import model_graphs

        from mugraph import _capi, fx_graph, report

        (gm,) = model_graphs.traced_graphs(RmsNormMlp(), lambda m: m(torch.randn(8, 64)))
        graph, writer = fx_graph.to_graph_json(gm)
        partition = _capi.partition(graph)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decisions.json")
            first = report.GraphReport(gm, writer, partition, path)
            for s in partition["subgraphs"]:
                first.searched(s, None, {"variants": []}, True)
                first.variant_timed(s["name"], "v2", 3.0)
                first.variant_timed(s["name"], "v1", 4.0)
                first.timed(s["name"], "v2", 5.0, 3.0)
                first.used(s, {"name": "v2"}, 0.0)
            first.finished("mugraph", "eager", compiled=True)
            first.remember()
            second = report.GraphReport(gm, writer, partition, path)
            self.assertIsNone(second.decided_before())
            for s in partition["subgraphs"]:
                self.assertEqual(second.variant_before(s["name"]), "v2")
                self.assertIsNotNone(second.measured_before(s["name"], "v2"))


class InterleavedTimingTest(unittest.TestCase):
    """timing.interleaved_us on a stand-in clock (no GPU): the sides are timed in turn, so a
    steady drift during the measurement (the GPU's clocks, a neighbour's load) gives two
    equal sides equal times, where timing one side after the other did not."""

    def setUp(self):
        from unittest import mock

        self.now = 0.0

        def replays(fn, repetitions):  # each replay takes fn's cost, plus the drift so far
            times = []
            for _ in range(repetitions):
                times.append(fn() + self.now)
                self.now += 0.5
            return times

        self.patches = [mock.patch.object(timing, "_captured", lambda fn: fn),
                        mock.patch.object(timing, "_replays_us", replays)]
        for p in self.patches:
            p.start()

    def tearDown(self):
        for p in self.patches:
            p.stop()

    def test_a_steady_drift_falls_on_both_sides_alike(self):
        (a, b), rounds = timing.interleaved_us([lambda: 100.0, lambda: 100.0])
        self.assertEqual(a, b)
        self.assertEqual([len(r) for r in rounds], [4, 4])
        self.now = 0.0  # one side timed after the other, as before: the second pays the drift
        first = statistics.median(timing._replays_us(lambda: 100.0, 20))
        second = statistics.median(timing._replays_us(lambda: 100.0, 20))
        self.assertGreater(second - first, 5.0)

    def test_a_real_difference_is_kept(self):
        (a, b), _ = timing.interleaved_us([lambda: 100.0, lambda: 80.0])
        self.assertAlmostEqual(a - b, 20.0)
