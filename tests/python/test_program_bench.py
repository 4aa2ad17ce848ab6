"""`tools/python/program_bench.py` runs any program as the PyTorch module `mugraph show
--pytorch` prints (dataset/pytorch_program.h, the one PyTorch form of each op) for its baseline
and its float64 reference. Each op's form is checked here against the op's meaning as
schedules/README.md states it, computed independently (loops, torch.softmax), on the CPU in
float64; a schedule written by `mugraph replay` (the file the bench reads) gives the module of
its program. Needs a build ($MUGRAPH_BUILD_DIR)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
import program_bench  # noqa: E402

BINARY = program_bench.mugraph_binary()


def program(inputs, ops, outputs):
    return {"name": "p", "inputs": [{"name": n, "dtype": "f16", "shape": s} for n, s in inputs],
            "ops": ops, "outputs": outputs}


def op(kind, inputs, output, **attrs):
    return dict({"op": kind, "inputs": inputs, "output": output}, **attrs)


def run_text(text, *inputs):
    """The outputs of the program `text` (.mg) on float64 `inputs`, through its module."""
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "p.mg")
        with open(path, "w") as f:
            f.write("program p\n" + text)
        return program_bench.outputs_of(program_bench.pytorch_module(path), inputs)


class OpFormsTest(unittest.TestCase):
    def setUp(self):
        self.generator = torch.Generator().manual_seed(7)

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.generator, dtype=torch.float64)

    def test_a_safe_softmax_program_is_torch_softmax(self):
        x = self.randn(6, 10) * 4
        (y,) = run_text("input X f16 [6, 10]\nM = reduce_max(X, dim=1)\nE = exp(sub(X, M))\n"
                        "Y = div(E, reduce_sum(E, dim=1))\noutput Y\n", x)
        self.assertEqual(y.dtype, torch.float64)  # computed in the dtype the inputs arrive in
        torch.testing.assert_close(y, torch.softmax(x, dim=1))

    def test_reduce_sum_to_k_sums_the_n_over_k_factor(self):
        x = self.randn(3, 12)
        (y,) = run_text("input X f16 [3, 12]\nY = reduce_sum(X, dim=1, to=4)\noutput Y\n", x)
        self.assertEqual(list(y.shape), [3, 4])
        for r in range(3):
            for j in range(4):
                want = sum(x[r, i * 4 + j].item() for i in range(3))
                self.assertAlmostEqual(y[r, j].item(), want, places=12)

    def test_rms_norm_and_relu(self):
        x = self.randn(4, 8)
        norm, relu = run_text("input X f16 [4, 8]\nN = rms_norm(X, dim=1)\nR = relu(X)\n"
                              "output N\noutput R\n", x)
        for r in range(4):
            rms = (sum(v * v for v in x[r].tolist()) / 8) ** 0.5
            torch.testing.assert_close(norm[r], x[r] / rms)
            for j in range(8):
                self.assertEqual(relu[r, j].item(), max(x[r, j].item(), 0.0))

    def test_rotations_are_the_signed_lane_permutations(self):
        x = self.randn(2, 8)
        half, pairs = run_text("input X f16 [2, 8]\nH = rotate_half(X, dim=1)\n"
                               "P = rotate_pairs(X, dim=1)\noutput H\noutput P\n", x)
        for r in range(2):
            for j in range(8):
                want = -x[r, j + 4] if j < 4 else x[r, j - 4]
                self.assertEqual(half[r, j].item(), want.item())
                want = -x[r, j + 1] if j % 2 == 0 else x[r, j - 1]
                self.assertEqual(pairs[r, j].item(), want.item())

    def test_the_causal_mask_keeps_columns_up_to_each_rows_position_from_the_end(self):
        # Two sequences of 3 queries folded into 6 rows, over 5 keys (bottom-right aligned).
        x = self.randn(1, 6, 5)
        (y,) = run_text("input X f16 [1, 6, 5]\nY = causal_mask(X, queries=3)\noutput Y\n", x)
        for r in range(6):
            for c in range(5):
                kept = c <= r % 3 + (5 - 3)
                self.assertEqual(y[0, r, c].item(), x[0, r, c].item() if kept else -float("inf"))

    def test_a_transposed_input_is_taken_in_storage_layout(self):
        a, b = self.randn(4, 6), self.randn(6, 5)
        (y,) = run_text("input A f16 [4, 6]\ninput B f16 [6, 5] layout=transposed\n"
                        "Y = matmul(A, B)\noutput Y\n", a, b.t().contiguous())
        torch.testing.assert_close(y, a @ b)

    def test_layouts_store_the_swapped_dims_and_read_back(self):
        x = self.randn(2, 3, 4)
        stored = program_bench.to_storage(x, "transposed")
        self.assertEqual(list(stored.shape), [2, 4, 3])
        self.assertTrue(stored.is_contiguous())
        self.assertTrue(torch.equal(program_bench.from_storage(stored, "transposed"), x))
        heads = program_bench.to_storage(x, "heads_transposed")
        self.assertEqual(list(heads.shape), [3, 2, 4])
        self.assertTrue(torch.equal(program_bench.from_storage(heads, "heads_transposed"), x))
        self.assertTrue(torch.equal(program_bench.to_storage(x, "row_major"), x))

    def test_projection_weights_are_drawn_at_one_over_root_fan_in(self):
        p = program([("X", [64, 1024]), ("W", [1024, 512])], [op("matmul", ["X", "W"], "Y")],
                    ["Y"])
        inputs = program_bench.draw_inputs(p, "cpu", self.generator)
        self.assertEqual(inputs["W"].dtype, torch.float16)
        self.assertAlmostEqual(inputs["X"].float().std().item(), 1.0, delta=0.05)
        self.assertAlmostEqual(inputs["W"].float().std().item(), 1024 ** -0.5, delta=0.003)

    def test_a_file_mugraph_cannot_read_is_named(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "bad.mg")
            with open(path, "w") as f:
                f.write("program p\ninput X f16 [2, 2]\nY = frobnicate(X)\noutput Y\n")
            with self.assertRaisesRegex(ValueError, "bad.mg"):
                program_bench.pytorch_module(path)


class ReplayedProgramTest(unittest.TestCase):
    def test_a_replayed_schedule_gives_the_module_of_its_program(self):
        generator = torch.Generator().manual_seed(3)
        a = torch.randn(128, 128, generator=generator, dtype=torch.float64)
        b = torch.randn(128, 64, generator=generator, dtype=torch.float64)
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([BINARY, "replay",
                            os.path.join(ROOT, "tools", "bench", "dataset_programs",
                                         "gemm_silu_128.mg"), "--out", out],
                           check=True, capture_output=True)
            module = program_bench.pytorch_module(os.path.join(out, "schedule.json"))
        (d,) = program_bench.outputs_of(module, [a, b])
        torch.testing.assert_close(d, torch.nn.functional.silu(a @ b))


    def test_attention_is_recognized_and_its_sdpa_form_computes_the_program(self):
        # Phi-2-shaped causal prefill and a GQA decode (7 query heads folded into the rows).
        for name, causal in (("mha_causal_32x512_d80", 0), ("gqa_decode_14q2kv_777_d64", None)):
            with tempfile.TemporaryDirectory() as out:
                subprocess.run([BINARY, "replay",
                                os.path.join(ROOT, "tools", "bench", "user_programs",
                                             name + ".mg"), "--out", out],
                               check=True, capture_output=True)
                with open(os.path.join(out, "schedule.json")) as f:
                    p = json.load(f)["program"]
                module = program_bench.pytorch_module(os.path.join(out, "schedule.json"))
            form = program_bench.attention_form(p)
            self.assertEqual(form[:3], ("Q", "K", "V"), name)
            self.assertEqual(form[4], causal, name)
            inputs = {n: t.double() for n, t in program_bench.draw_inputs(p, "cpu").items()}
            q, k, v = (inputs[n] for n in form[:3])
            # The module takes K as stored (transposed), Q and V as they are.
            (want,) = program_bench.outputs_of(module, [q, k.transpose(-1, -2).contiguous(), v])
            got = torch.nn.functional.scaled_dot_product_attention(
                q, k.transpose(-1, -2), v, scale=form[3], is_causal=causal is not None)
            torch.testing.assert_close(got, want)

    def test_a_softmax_alone_or_an_unscaled_product_is_no_attention(self):
        softmax = program([("X", [6, 10])],
                          [op("reduce_max", ["X"], "M", dim=1), op("sub", ["X", "M"], "D"),
                           op("exp", ["D"], "E"), op("reduce_sum", ["E"], "S", dim=1, to=1),
                           op("div", ["E", "S"], "Y")], ["Y"])
        self.assertIsNone(program_bench.attention_form(softmax))
        # The softmax over the queries (dim 1), not the keys: no SDPA computes it.
        wrong = program([("Q", [2, 8, 4]), ("K", [2, 4, 8]), ("V", [2, 8, 4])],
                        [op("matmul", ["Q", "K"], "A0"), op("scale", ["A0"], "A", c=0.5),
                         op("reduce_max", ["A"], "M", dim=1), op("sub", ["A", "M"], "D"),
                         op("exp", ["D"], "E"), op("reduce_sum", ["E"], "S", dim=1, to=1),
                         op("div", ["E", "S"], "P"), op("matmul", ["P", "V"], "O")], ["O"])
        self.assertIsNone(program_bench.attention_form(wrong))
        right = json.loads(json.dumps(wrong))
        for o in right["ops"]:
            if "dim" in o:
                o["dim"] = 2
        self.assertIsNotNone(program_bench.attention_form(right))


class RunWiringTest(unittest.TestCase):
    """`run_program` on the CPU, with the GPU parts stood in for: each variant "launches" by
    evaluating its own schedule's program in float32 from the tensors it is handed in storage
    layout, writing its outputs in theirs. What is checked is the bench's wiring: every output
    of a two-output program reaches the check, stored layouts are undone, a row per variant in
    rank order, the ratio to PyTorch's best. A variant that computed the wrong thing (one
    output negated) shows a large error."""

    def search(self, text, out):
        path = os.path.join(out, "p.mg")
        with open(path, "w") as f:
            f.write(text)
        subprocess.run([BINARY, "superoptimize", path, "--arch", "sm_90", "--max-variants", "2",
                        "--time-limit", "20", "--out", os.path.join(out, "run")],
                       check=True, capture_output=True)
        return os.path.join(out, "run")

    def run_with_stand_ins(self, run, negate=None):
        import types
        from unittest import mock

        gpu_bench = types.ModuleType("gpu_bench")
        gpu_bench.median_us = lambda fn: 10.0 if fn.__name__ == "<lambda>" else 5.0
        gpu_bench.error_row = lambda label, e: {"impl": label, "us": None, "error": str(e)}
        gpu_bench.COMPILE_MODE = "default"

        def relative_error(got, want):
            got, want = got.double(), want.double()
            return ((got - want).abs().max() / want.abs().max()).item()

        class Variant:
            def __init__(self, directory):
                path = os.path.join(directory, "schedule.json")
                with open(path) as f:
                    self.program = json.load(f)["program"]
                self.module = program_bench.pytorch_module(path)

            def empty(self, name):
                for t in self.program["outputs"]:
                    if (t if isinstance(t, str) else t["name"]) == name:
                        layout = "row_major" if isinstance(t, str) else t["layout"]
                zeros = [program_bench.to_storage(torch.zeros(t["shape"]),
                                                  t.get("layout", "row_major"))
                         for t in self.program["inputs"]]
                shape = program_bench.outputs_of(self.module, zeros)
                shape = shape[program_bench.output_names(self.program).index(name)].shape
                return program_bench.to_storage(torch.empty(shape, dtype=torch.float16), layout)

            def launch(self, tensors):
                results = program_bench.outputs_of(
                    self.module, [tensors[t["name"]].float() for t in self.program["inputs"]])
                for t, value in zip(self.program["outputs"], results):
                    name = t if isinstance(t, str) else t["name"]
                    layout = "row_major" if isinstance(t, str) else t["layout"]
                    if name == negate:
                        value = -value
                    tensors[name].copy_(program_bench.to_storage(value, layout))

        launch = types.ModuleType("mugraph_launch")
        launch.Variant = Variant
        launch.relative_error = relative_error
        with mock.patch.dict(sys.modules, {"gpu_bench": gpu_bench, "mugraph_launch": launch}), \
                mock.patch.object(torch.cuda, "synchronize", lambda: None):
            return program_bench.run_program(run, compile_torch=False, device="cpu")

    def test_two_outputs_and_a_transposed_input_reach_the_check(self):
        text = ("program two\ninput X f16 [64, 256]\ninput R f16 [64, 256]\n"
                "input W f16 [256, 128] layout=transposed\n"
                "H = add(X, R)\nY = matmul(rms_norm(H, dim=1), W)\noutput H\noutput Y\n")
        with tempfile.TemporaryDirectory() as out:
            run = self.search(text, out)
            result = self.run_with_stand_ins(run)
            wrong = self.run_with_stand_ins(run, negate="Y")
        self.assertEqual(result["outputs"], 2)
        rows = {r["impl"]: r for r in result["rows"]}
        self.assertIn("torch.eager", rows)
        ours = [r for r in result["rows"] if r["impl"].startswith("mugraph.")]
        self.assertEqual([r["rank"] for r in ours], [1, 2])
        self.assertEqual(result["first_choice"], ours[0]["impl"])
        for r in result["rows"]:
            self.assertLess(r["rel_error"], 2e-3, r)
        for r in ours:
            self.assertAlmostEqual(r["ratio_to_best_torch"], 2.0)  # 10 us eager, 5 us ours
        for r in wrong["rows"]:
            if r["impl"].startswith("mugraph."):
                self.assertGreater(r["rel_error"], 1.0, r)


if __name__ == "__main__":
    unittest.main()
