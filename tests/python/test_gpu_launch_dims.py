"""GPU test (label gpu): tools/python/mugraph_launch.py launches one PTX of the GEMM with
dynamic rows (schedules/dynamic/gemm_dynamic_m.grid128.json), replayed once per target (sm_80:
the general path; sm_90: the warpgroup GEMM path, whose tensor maps it encodes per length), at
rows around the tile of 128, at 1 and at the range's max, on fresh normal random inputs, and
matches torch's product; and the search's dispatch over the lengths of a dynamic projection
runs each bucket's variant correctly. Skipped without a GPU or CuPy. Needs a build ($MUGRAPH_BUILD_DIR)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(os.environ.get("MUGRAPH_BUILD_DIR", os.path.join(ROOT, "build")), "bin",
                      "mugraph")
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))

try:
    import cupy  # noqa: F401
    HAVE_CUPY = True
except ImportError:
    HAVE_CUPY = False


@unittest.skipUnless(torch.cuda.is_available() and HAVE_CUPY, "needs a GPU and CuPy")
class GpuLaunchDimsTest(unittest.TestCase):
    def test_one_ptx_per_target_matches_torch_at_every_length(self):
        import mugraph_launch
        schedule = os.path.join(ROOT, "schedules", "dynamic", "gemm_dynamic_m.grid128.json")
        scratch = tempfile.mkdtemp(prefix="mugraph_gpu_launch_dims_")
        try:
            for arch in ("sm_80", "sm_90"):
                folder = os.path.join(scratch, arch)
                subprocess.run([BINARY, "replay", schedule, "--arch", arch, "--out", folder],
                               check=True, capture_output=True)
                variant = mugraph_launch.Variant(folder)
                for m in (1, 63, 64, 65, 127, 128, 129, 1000, 4096):
                    with self.subTest(arch=arch, m=m):
                        a = torch.randn(m, 128, device="cuda").half()
                        b = torch.randn(128, 64, device="cuda").half()
                        c = variant.empty("C", dims={"m": m}).fill_(float("nan"))
                        variant.launch({"A": a, "B": b, "C": c}, dims={"m": m})
                        torch.cuda.synchronize()
                        want = a.float() @ b.float()
                        error = mugraph_launch.relative_error(c.float(), want)
                        print(f"[gpu] {arch} m={m}: relative error {error:.2e}")
                        self.assertLess(error, 2e-2)
        finally:
            shutil.rmtree(scratch)

    def test_the_searchs_dispatch_matches_torch_in_every_bucket(self):
        """`mugraph superoptimize` of a dynamic projection (B stored transposed, as nn.Linear
        keeps its weight), then mugraph_launch.Dispatch at each bucket's ends and inside it:
        each launch runs that bucket's variant (the sketch's warpgroup kernels at the long
        lengths) and matches torch."""
        import mugraph_launch
        scratch = tempfile.mkdtemp(prefix="mugraph_gpu_dispatch_")
        try:
            program = os.path.join(scratch, "proj.mg")
            with open(program, "w") as f:
                f.write("program proj\ndim m in [1, 4096]\ninput A f16 [m, 512]\n"
                        "input B f16 [512, 1024] layout=transposed\nC = matmul(A, B)\n"
                        "output C\n")
            out = os.path.join(scratch, "out")
            subprocess.run([BINARY, "superoptimize", program, "--time-limit", "30",
                            "--max-variants", "8", "--out", out], check=True, capture_output=True)
            dispatch = mugraph_launch.Dispatch(out)
            lengths = set()
            for b in dispatch.spec["buckets"]:
                lengths.update({b["min"], b["max"], (b["min"] + b["max"]) // 2})
            for m in sorted(lengths):
                with self.subTest(m=m):
                    a = torch.randn(m, 512, device="cuda").half()
                    w = torch.randn(1024, 512, device="cuda").half()  # B's storage: [n, k]
                    c = dispatch.empty("C", dims={"m": m}).fill_(float("nan"))
                    dispatch.launch({"A": a, "B": w, "C": c}, dims={"m": m})
                    torch.cuda.synchronize()
                    want = a.float() @ w.float().t()
                    error = mugraph_launch.relative_error(c.float(), want)
                    bucket = mugraph_launch.dispatch_bucket(dispatch.spec, {"m": m})
                    print(f"[gpu] dispatch m={m} ({bucket['variant']}): relative error {error:.2e}")
                    self.assertLess(error, 2e-2)
        finally:
            shutil.rmtree(scratch)


if __name__ == "__main__":
    unittest.main()
