"""tools/python/add_external_members.py on this machine, no GPU: Triton members of the test
GEMM (tests/dataset/external_fixture/gemm_128.mg) are compiled for sm_90 and taken by `mugraph
dataset add`, whose ABI check compares the manifest with the program and with the parameters
the PTX declares; a planted wrong member is added too (its fault only shows on a GPU); CUTLASS
and TVM members likewise where the nvidia-cutlass or apache-tvm package and nvcc are
installed. Each skips cleanly without its package. Needs a build ($MUGRAPH_BUILD_DIR)."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(os.environ.get("MUGRAPH_BUILD_DIR", os.path.join(ROOT, "build")), "bin",
                      "mugraph")
PROGRAM = os.path.join(ROOT, "tests/dataset/external_fixture/gemm_128.mg")
NVCC = os.path.join(os.environ.get("MUGRAPH_CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")


def generate(out, *extra):
    env = dict(os.environ, MUGRAPH_BINARY=BINARY, TRITON_DEFAULT_FP_FUSION="1")
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools/python/add_external_members.py"),
                           "--program", PROGRAM, "--family", "matmul", "--out", out] + list(extra),
                          capture_output=True, text=True, env=env, cwd=ROOT)


class ExternalMembersTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.mkdtemp(prefix="mugraph_external_members_")

    def tearDown(self):
        shutil.rmtree(self.scratch)

    def rows(self, dataset):
        with open(os.path.join(dataset, "manifest.jsonl")) as f:
            return [json.loads(line) for line in f]

    @unittest.skipUnless(importlib.util.find_spec("triton"), "triton is not installed")
    def test_triton_members_are_added_with_a_complete_abi(self):
        dataset = os.path.join(self.scratch, "ds")
        done = generate(os.path.join(self.scratch, "members"), "--dataset", dataset)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        rows = self.rows(dataset)
        self.assertGreaterEqual(len(rows), 2)
        for row in rows:
            self.assertEqual(row["source"]["compiler"], "triton")
            self.assertEqual(row["verification"], {"level": "gpu-random-test",
                                                   "status": "unchecked"})
            names = [p["tensor"] for p in row["kernels"][0]["params"]]
            self.assertEqual(names, ["C", "A", "B", "triton_global_scratch",
                                     "triton_profile_scratch"])
        check = subprocess.run([BINARY, "dataset", "check", dataset], capture_output=True,
                               text=True)
        self.assertEqual(check.returncode, 0, check.stdout)

    @unittest.skipUnless(importlib.util.find_spec("triton"), "triton is not installed")
    def test_a_planted_wrong_member_has_a_valid_abi(self):
        dataset = os.path.join(self.scratch, "ds")
        done = generate(os.path.join(self.scratch, "members"), "--plant-wrong", "--dataset",
                        dataset)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertEqual(len(self.rows(dataset)), 1)

    @unittest.skipUnless(importlib.util.find_spec("cutlass_library") and os.path.exists(NVCC),
                         "the nvidia-cutlass package or nvcc is not installed")
    def test_cutlass_members_are_added_with_a_complete_abi(self):
        dataset = os.path.join(self.scratch, "ds")
        done = generate(os.path.join(self.scratch, "members"), "--sources", "cutlass",
                        "--dataset", dataset)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        for row in self.rows(dataset):
            self.assertEqual(row["source"]["compiler"], "cutlass")
            self.assertEqual([p["tensor"] for p in row["kernels"][0]["params"]], ["C", "A", "B"])

    @unittest.skipUnless(importlib.util.find_spec("tvm") and os.path.exists(NVCC),
                         "the apache-tvm package or nvcc is not installed")
    def test_tvm_members_are_added_with_a_complete_abi(self):
        dataset = os.path.join(self.scratch, "ds")
        done = generate(os.path.join(self.scratch, "members"), "--sources", "tvm", "--dataset",
                        dataset)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        for row in self.rows(dataset):
            self.assertEqual(row["source"]["compiler"], "tvm")
            self.assertEqual(sorted(p["tensor"] for p in row["kernels"][0]["params"]),
                             ["A", "B", "C"])


if __name__ == "__main__":
    unittest.main()
