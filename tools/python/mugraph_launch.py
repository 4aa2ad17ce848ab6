"""Launch a mugraph variant from its manifest and PTX alone, with CuPy, on torch tensors.

This file needs no mugraph code: it reads manifest.json (format "mugraph.manifest" v1, see
codegen/README.md), loads the PTX for the GPU's architecture with CuPy, and launches each
kernel in order on torch's current stream. Kernel parameters are device pointers only: for
each kernel, the tensors it writes, then the tensors it reads; intermediate tensors live in
one workspace at the offsets the manifest gives.
"""
import json
import math
import os

import cupy
import numpy as np
import torch

_TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def relative_error(got, want):
    """Normwise relative error max|got - want| / max|want|, by verify/relative_error.h's rule:
    NaN or infinity in either tensor gives inf, and an all-zero reference is matched only
    exactly (0 if `got` is all zero too, else inf)."""
    got, want = got.double(), want.double()
    if not (torch.isfinite(got).all() and torch.isfinite(want).all()):
        return math.inf
    difference = (got - want).abs().max().item() if got.numel() else 0.0
    scale = want.abs().max().item() if want.numel() else 0.0
    if scale == 0:
        return 0.0 if difference == 0 else math.inf
    return difference / scale


class Variant:
    def __init__(self, directory):
        self.directory = directory
        with open(os.path.join(directory, "manifest.json")) as f:
            self.manifest = json.load(f)
        if self.manifest.get("format") != "mugraph.manifest" or self.manifest.get("version") != 1:
            raise ValueError(f"{directory}/manifest.json: not a mugraph manifest v1")
        major, minor = torch.cuda.get_device_capability()
        capability = major * 10 + minor
        usable = [a for a in self.manifest["ptx"] if int(a[3:]) <= capability]
        if not usable:
            raise ValueError(f"no PTX for compute capability {capability}")
        self.arch = max(usable, key=lambda a: int(a[3:]))
        self.module = cupy.RawModule(path=os.path.join(directory, self.manifest["ptx"][self.arch]))
        self.kernels = []
        for k in self.manifest["kernels"]:
            fn = self.module.get_function(k["entry"])
            # Raising the limit to what the kernel uses is harmless below the default, so the
            # launcher needs no knowledge of any GPU's default.
            fn.max_dynamic_shared_size_bytes = k["dynamic_shared_bytes"]
            self.kernels.append((fn, k))
        self.tensors = {t["name"]: t for t in self.manifest["tensors"]}
        self.workspace = torch.empty(max(1, self.manifest["workspace_bytes"]), dtype=torch.uint8,
                                     device="cuda")

    def storage_shape(self, name):
        """The shape of the tensor as stored: a transposed tensor swaps its last two dims."""
        t = self.tensors[name]
        shape = list(t["shape"])
        if t.get("layout") == "transposed":
            shape[-1], shape[-2] = shape[-2], shape[-1]
        return shape

    def empty(self, name):
        t = self.tensors[name]
        return torch.empty(self.storage_shape(name), dtype=_TORCH_DTYPES[t["dtype"]], device="cuda")

    def launch(self, tensors):
        """Runs every kernel once. `tensors` maps input and output names to contiguous torch
        tensors in storage layout (inputs read, outputs written)."""
        pointers = {}
        for name, t in self.tensors.items():
            if t["role"] == "workspace":
                pointers[name] = self.workspace.data_ptr() + t["offset"]
                continue
            tensor = tensors[name]
            if list(tensor.shape) != self.storage_shape(name) or not tensor.is_contiguous():
                raise ValueError(f"{name}: expected a contiguous tensor of shape "
                                 f"{self.storage_shape(name)}, got {list(tensor.shape)}")
            if tensor.dtype != _TORCH_DTYPES[t["dtype"]]:
                raise ValueError(f"{name}: expected {t['dtype']}, got {tensor.dtype}")
            pointers[name] = tensor.data_ptr()
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        with stream:
            for fn, k in self.kernels:
                args = tuple(np.uint64(pointers[p["tensor"]]) for p in k["params"])
                fn(tuple(k["grid"]), tuple(k["block"]), args,
                   shared_mem=k["dynamic_shared_bytes"])
