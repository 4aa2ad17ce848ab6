"""tools/python/mugraph_launch.py reads a manifest of kernels that take the lengths of dynamic
dims (codegen/README.md, "Dynamic dims") as the C++ runtime does: the GEMM with dynamic rows
(schedules/dynamic/gemm_dynamic_m.grid128.json) is replayed, and at several lengths its
tensors' stored shapes and bytes, its grid, its tensor map's dims and the checks of the
lengths come out as graph/dynamic_extents.h defines them; a dynamic program's dispatch over
its lengths maps each length to one written variant. Runs on the CPU: CuPy is replaced by
a stand-in (nothing is launched). Needs a build ($MUGRAPH_BUILD_DIR)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(os.environ.get("MUGRAPH_BUILD_DIR", os.path.join(ROOT, "build")), "bin",
                      "mugraph")

# mugraph_launch imports CuPy at the top; the functions under test never call it.
sys.modules.setdefault("cupy", types.ModuleType("cupy"))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
import mugraph_launch  # noqa: E402


class LaunchDimsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp(prefix="mugraph_launch_dims_test_")
        schedule = os.path.join(ROOT, "schedules", "dynamic", "gemm_dynamic_m.grid128.json")
        subprocess.run([BINARY, "replay", schedule, "--out", cls.scratch], check=True,
                       capture_output=True)
        with open(os.path.join(cls.scratch, "manifest.json")) as f:
            cls.manifest = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch)

    def test_sizes_grids_and_maps_follow_the_length(self):
        tensors = {t["name"]: t for t in self.manifest["tensors"]}
        kernel = self.manifest["kernels"][0]
        maps = [p for p in kernel["params"] if p.get("kind") == "tensor_map"]
        for m in (1, 127, 128, 129, 1000, 4096):
            lengths = mugraph_launch.dim_lengths(self.manifest, {"m": m})
            evaluate = mugraph_launch.evaluate_product
            shape = [evaluate(e, lengths) for e in tensors["A"]["stored_shape"]]
            self.assertEqual(shape, [m, 128])
            self.assertEqual(evaluate(tensors["C"]["bytes"], lengths), m * 64 * 2)
            grid = [mugraph_launch.evaluate_count(c, lengths) for c in kernel["grid"]]
            self.assertEqual(grid, [-(-m // 128), 1, 1])
            for p in maps:
                dims = [evaluate(d, lengths) for d in p["dims"]]
                self.assertEqual(dims, [128, m] if p["tensor"] == "A" else [64, 128])
        self.assertEqual(kernel["params"][-1], {"kind": "dim", "dim": "m", "dtype": "i32"})

    def test_lengths_outside_the_range_or_missing_are_refused(self):
        with self.assertRaisesRegex(ValueError, r"m=4097 is outside \[1, 4096\]"):
            mugraph_launch.dim_lengths(self.manifest, {"m": 4097})
        with self.assertRaisesRegex(ValueError, "take the length of 'm'"):
            mugraph_launch.dim_lengths(self.manifest, {})
        with self.assertRaisesRegex(ValueError, "no dynamic dim 's'"):
            mugraph_launch.dim_lengths(self.manifest, {"m": 5, "s": 3})


class DispatchTest(unittest.TestCase):
    """A dynamic program's dispatch.json (driver/range_ranking.h), as `mugraph superoptimize`
    writes it, read by mugraph_launch: every length of the range finds one bucket, whose
    variant's folder is beside it; a length outside is refused."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp(prefix="mugraph_dispatch_test_")
        program = os.path.join(cls.scratch, "proj.mg")
        with open(program, "w") as f:
            f.write("program proj\ndim m in [1, 2048]\ninput A f16 [m, 256]\n"
                    "input B f16 [256, 512] layout=transposed\nC = matmul(A, B)\noutput C\n")
        cls.out = os.path.join(cls.scratch, "out")
        subprocess.run([BINARY, "superoptimize", program, "--threads", "1", "--time-limit", "20",
                        "--max-variants", "6", "--out", cls.out], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch)

    def test_every_length_has_one_bucket_whose_variant_is_written(self):
        spec = mugraph_launch.load_dispatch(self.out)
        self.assertEqual(spec["dim"], "m")
        for m in (1, 2, 31, 64, 65, 500, 1024, 1025, 2047, 2048):
            bucket = mugraph_launch.dispatch_bucket(spec, {"m": m})
            self.assertTrue(bucket["min"] <= m <= bucket["max"])
            with open(os.path.join(self.out, bucket["variant"], "manifest.json")) as f:
                manifest = json.load(f)
            self.assertEqual(mugraph_launch.dim_lengths(manifest, {"m": m}), {"m": m})
        with self.assertRaisesRegex(ValueError, r"m=2049 is in no bucket"):
            mugraph_launch.dispatch_bucket(spec, {"m": 2049})
        with self.assertRaisesRegex(ValueError, "the dispatch is over 'm'"):
            mugraph_launch.dispatch_bucket(spec, {})

    def test_a_malformed_dispatch_is_refused_with_its_path(self):
        bad = os.path.join(self.scratch, "bad")
        os.makedirs(bad, exist_ok=True)
        with open(os.path.join(bad, "dispatch.json"), "w") as f:
            json.dump({"format": "mugraph.dispatch", "version": 1, "dim": "m",
                       "buckets": [{"min": 1, "max": 10, "variant": "a"},
                                   {"min": 5, "max": 20, "variant": "b"}]}, f)
        with self.assertRaisesRegex(ValueError, r"buckets\[1\]: overlaps"):
            mugraph_launch.load_dispatch(bad)


if __name__ == "__main__":
    unittest.main()
