"""Reader tests of `mugraph dataset export`, one per format (dataset/README.md gives the
schemas): a small dataset (two of mugraph's GEMM variants and the committed Triton member of
tests/dataset/external_fixture, with latencies planted in the rows as `dataset check --run
--record` writes them) is exported in each format and read back; every record has its
format's fields, the PyTorch program of a kernelbook record runs (on the CPU) and gives the
class's output shape, and the jsonl pairs are exactly the timed members' slower -> faster
orderings. Needs a build ($MUGRAPH_BUILD_DIR) and torch."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(os.environ.get("MUGRAPH_BUILD_DIR", os.path.join(ROOT, "build")), "bin",
                      "mugraph")


def mugraph(*args):
    return subprocess.run([BINARY] + list(args), capture_output=True, text=True, check=True).stdout


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp(prefix="mugraph_export_test_")
        schedules = os.path.join(cls.scratch, "schedules")
        os.makedirs(schedules)
        for name in ("gemm_1024.tiled.json", "gemm_1024.warpgroups.json"):
            shutil.copy(os.path.join(ROOT, "schedules", name), schedules)
        cls.dataset = os.path.join(cls.scratch, "ds")
        mugraph("dataset", "--from-schedules", schedules, "--out", cls.dataset)
        mugraph("dataset", "add", cls.dataset,
                os.path.join(ROOT, "tests/dataset/external_fixture/triton_member"))
        manifest = os.path.join(cls.dataset, "manifest.jsonl")
        rows = read_jsonl(manifest)
        cls.timed = {}
        for i, row in enumerate(r for r in rows if "member" not in r):
            row["gpu"] = {"timing": {"median_us": 10.0 + 5 * i}}
            cls.timed[row["variant"]] = row["gpu"]["timing"]["median_us"]
        with open(manifest, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        cls.exports = {}
        for fmt in ("jsonl", "popcorn", "kernelbook"):
            out = os.path.join(cls.scratch, f"{fmt}.jsonl")
            mugraph("dataset", "export", cls.dataset, "--format", fmt, "--out", out)
            cls.exports[fmt] = read_jsonl(out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch)

    def test_jsonl_members_carry_program_code_ptx_and_evidence(self):
        members = [r for r in self.exports["jsonl"] if r["record"] == "member"]
        self.assertEqual(len(members), 3)
        for r in members:
            for key in ("class", "variant", "source", "program_text", "pytorch", "language",
                        "source_text", "ptx", "latency_us", "evidence", "launch"):
                self.assertIn(key, r)
            self.assertIn("sm_90", r["ptx"])
            self.assertIn(".entry", r["ptx"]["sm_90"])
        by_source = {r["source"]: r for r in members}
        self.assertEqual(by_source["triton"]["evidence"]["level"], "gpu-random-test")
        self.assertIsNone(by_source["triton"]["schedule"])
        self.assertIsNone(by_source["triton"]["cuda"])
        self.assertEqual(by_source["mugraph"]["evidence"]["level"], "finite-field")
        self.assertEqual(by_source["mugraph"]["schedule"]["format"], "mugraph.schedule")

    def test_jsonl_pairs_order_timed_members_of_a_class_slower_to_faster(self):
        pairs = [r for r in self.exports["jsonl"] if r["record"] == "pair"]
        self.assertEqual(len(pairs), 1)
        slow = max(self.timed, key=self.timed.get)
        fast = min(self.timed, key=self.timed.get)
        self.assertEqual((pairs[0]["slower"], pairs[0]["faster"]), (slow, fast))
        self.assertAlmostEqual(pairs[0]["speedup"], self.timed[slow] / self.timed[fast])

    def test_popcorn_records_are_input_output_pairs(self):
        records = self.exports["popcorn"]
        self.assertEqual(len(records), 3)
        for r in records:
            self.assertIsInstance(r["input"], str)
            self.assertIn("class Model(torch.nn.Module)", r["input"])
            self.assertIsInstance(r["output"], str)
            self.assertIn(r["language"], ("cuda", "triton"))
        triton = [r for r in records if r["language"] == "triton"]
        self.assertIn("@triton.jit", triton[0]["output"])

    def test_kernelbook_python_code_runs_and_pairs_with_its_kernel(self):
        records = self.exports["kernelbook"]
        self.assertEqual(len(records), 3)
        for r in records:
            self.assertEqual(r["entry_point"], "Model")
            self.assertTrue((r["triton_code"] is None) != (r["cuda_code"] is None))
            scope = {}
            exec(r["python_code"].replace('device="cuda"', 'device="cpu"'), scope)
            inputs = scope["get_inputs"]()
            output = scope["Model"]()(*inputs)
            expected = [inputs[0].shape[0], inputs[1].shape[1]]
            self.assertEqual(list(output.shape), expected)
            self.assertEqual(output.dtype, torch.float16)
            want = (inputs[0].float() @ inputs[1].float()).half()
            torch.testing.assert_close(output, want, rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    unittest.main()
