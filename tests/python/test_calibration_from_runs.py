"""`tools/python/calibration_from_runs.py --model-bench`: a model bench's subgraph timings become
cost-calibration data `mugraph calibrate` reads. A fake bench run (two GEMM variants of one
subgraph, timed, the same subgraph again as a next layer, and one subgraph of a single variant)
over a kernel cache holding the two shipped GEMM schedules: one program comes out, with both
variants in the cost model's order, and `calibrate` judges it against the planted times. A
variant missing from the cache is an error naming it. Needs a build ($MUGRAPH_BUILD_DIR)."""
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
TOOL = os.path.join(ROOT, "tools", "python", "calibration_from_runs.py")
SCHEDULES = {"vtiled": "gemm_1024.tiled.json", "vwarpgroups": "gemm_1024.warpgroups.json"}


class ModelBenchCalibrationTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.cache = os.path.join(self.dir, "cache")
        entry = os.path.join(self.cache, "sm_90", "0123-4567")
        variants = []
        for name, file in SCHEDULES.items():
            os.makedirs(os.path.join(entry, "variants", name))
            shutil.copy(os.path.join(ROOT, "schedules", file),
                        os.path.join(entry, "variants", name, "schedule.json"))
            # The tiled schedule is the search's first by estimate.
            variants.append({"name": name, "cost_us": 9.0 if name == "vtiled" else 10.0})
        with open(os.path.join(entry, "result.json"), "w") as f:
            json.dump({"variants": variants}, f)
        times = {"vtiled": 11.4, "vwarpgroups": 8.6}
        subgraphs = [{"name": "mm", "program_hash": "aa", "variants_us": times},
                     {"name": "mm_next_layer", "program_hash": "bb", "variants_us": times},
                     {"name": "alone", "program_hash": "cc", "variants_us": {"vtiled": 3.0}}]
        self.bench = os.path.join(self.dir, "bench.json")
        with open(self.bench, "w") as f:
            json.dump({"device": "a GPU", "results": [
                {"model": "toy", "case": "prefill 8", "rows": [
                    {"impl": "eager", "us": 20.0},
                    {"impl": "mugraph", "us": 10.0, "report": [{"subgraphs": subgraphs}]}]}]},
                      f)

    def tool(self, data, *args):
        return subprocess.run([sys.executable, TOOL, data, *args], capture_output=True,
                              text=True)

    def test_each_subgraph_timed_with_two_variants_is_one_program(self):
        data = os.path.join(self.dir, "data.json")
        done = self.tool(data, "--model-bench", self.bench, self.cache)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(data) as f:
            written = json.load(f)
        self.assertEqual(written["format"], "mugraph.cost_calibration")
        self.assertEqual([p["program"] for p in written["programs"]], ["toy.prefill_8.mm"])
        variants = written["programs"][0]["variants"]
        self.assertEqual([v["name"] for v in variants], ["vtiled", "vwarpgroups"])
        self.assertEqual([v["measured_us"] for v in variants], [11.4, 8.6])
        judged = json.loads(subprocess.run([BINARY, "calibrate", data, "--json"],
                                           capture_output=True, text=True, check=True).stdout)
        program = judged["current"]["programs"][0]
        self.assertEqual(program["fastest"], "vwarpgroups")
        self.assertEqual(len(program["variants"]), 2)

    def test_a_variant_missing_from_the_cache_is_named(self):
        os.remove(os.path.join(self.cache, "sm_90", "0123-4567", "variants", "vwarpgroups",
                               "schedule.json"))
        done = self.tool(os.path.join(self.dir, "data.json"), "--model-bench", self.bench,
                         self.cache)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("vwarpgroups", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "data.json")))


if __name__ == "__main__":
    unittest.main()
