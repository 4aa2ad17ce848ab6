"""Launch a mugraph variant from its manifest and PTX alone, with CuPy, on torch tensors.

This file needs no mugraph code: it reads manifest.json (format "mugraph.manifest" v1, see
codegen/README.md), loads the PTX for the GPU's architecture with CuPy, and launches each
kernel in order on torch's current stream. Kernel parameters: for each kernel, device
pointers to the tensors it writes, then to the tensors it reads; intermediate tensors live in
one workspace at the offsets the manifest gives. Kernels on the sm_90 warpgroup path also take
tensor maps by value after the pointers (params of kind "tensor_map"): encoded here with the
driver's cuTensorMapEncodeTiled from the manifest's description, launched through
cuLaunchKernelEx. A manifest with "waits_for_prior_grids" (every kernel starts with
griddepcontrol.wait on sm_90) has its kernels launched with programmatic stream serialization,
so each starts while the one before it drains.

A dataset's external members (kernels from Triton or CUTLASS, dataset/external_member.h) carry
the same manifest: their compiler-added parameters (Triton's scratch pointers) are workspace
tensors, so `Variant` launches them unchanged; `dataset_members` lists every member of a
dataset, ours and external, that is not kept out of its class.

A variant of a program with dynamic dims (the manifest's "dims") has kernels that take the
lengths as `int` parameters (kind "dim", after the pointers and tensor maps): shapes and bytes
name the dims, and each grid entry is a number or {"ceil_div": [dim, tile]}. Give the lengths
as a dict, `Variant(folder, dims={"s": 1000})` or per launch, `launch(tensors, dims=...)`;
one PTX serves every length in the range. Where the search wrote a dispatch over the lengths
(dispatch.json: a variant per bucket of lengths, small tiles for short lengths, large for long),
`Dispatch(folder).launch(tensors, dims)` runs the bucket's variant.
"""
import ctypes
import json
import math
import os

import cupy
import numpy as np
import torch

_TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

# cuda.h's CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion values.
_MAP_DTYPES = {"f16": 6, "f32": 7, "bf16": 9}
_MAP_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
_MAP_L2_PROMOTION = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
_driver = None

# cuda.h's CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, CUlaunchAttribute and
# CUlaunchConfig.
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class _LaunchAttributeValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("allowed", ctypes.c_int)]


class _LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _LaunchAttributeValue)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


def _cuda_driver():
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
        _driver.cuTensorMapEncodeTiled.restype = ctypes.c_int
        _driver.cuLaunchKernelEx.restype = ctypes.c_int
    return _driver


def _check(result, what):
    if result != 0:
        raise RuntimeError(f"{what}: CUDA driver error {result}")


def encode_tensor_map(param, address, lengths=None):
    """The 128-byte CUtensorMap of a "tensor_map" parameter for a tensor at `address`; a dim
    or a stride given as a product of dynamic dims is evaluated at `lengths`."""
    rank = param["rank"]
    dims = [evaluate_product(d, lengths or {}) for d in param["dims"]]
    strides = [evaluate_product(s, lengths or {}) for s in param["strides_bytes"]]
    if param.get("interleave", "none") != "none" or param.get("oob_fill", "none") != "none":
        raise ValueError(f"tensor map of {param['tensor']}: unsupported interleave or fill")
    # CUtensorMap is 128 bytes aligned to 64: the map is the aligned part of a larger buffer.
    storage = (ctypes.c_uint8 * (128 + 64))()
    address_of_map = (ctypes.addressof(storage) + 63) // 64 * 64
    _check(_cuda_driver().cuTensorMapEncodeTiled(
        ctypes.c_void_p(address_of_map), _MAP_DTYPES[param["dtype"]], ctypes.c_uint32(rank),
        ctypes.c_void_p(address), (ctypes.c_uint64 * rank)(*dims),
        (ctypes.c_uint64 * max(1, rank - 1))(*strides),
        (ctypes.c_uint32 * rank)(*param["box"]),
        (ctypes.c_uint32 * rank)(*param["element_strides"]), 0,
        _MAP_SWIZZLE[param["swizzle"]], _MAP_L2_PROMOTION[param["l2_promotion"]], 0),
        f"encoding the tensor map of {param['tensor']}")
    return storage, address_of_map


def dim_lengths(manifest, dims):
    """The lengths a manifest is launched at: {name: length} for each of its "dims", inside
    the range; {} for a manifest without (where `dims` must be empty too)."""
    dims = dict(dims or {})
    declared = {d["name"]: d for d in manifest.get("dims", [])}
    for name in dims:
        if name not in declared:
            have = sorted(declared) or "none"
            raise ValueError(f"no dynamic dim {name!r} (the variant has {have})")
    for name, d in declared.items():
        if name not in dims:
            raise ValueError(f"the kernels take the length of {name!r}: give dims={{{name!r}: N}}, "
                             f"N in [{d['min']}, {d['max']}]")
        if not d["min"] <= dims[name] <= d["max"]:
            raise ValueError(f"{name}={dims[name]} is outside [{d['min']}, {d['max']}]")
    return dims


def evaluate_product(value, lengths):
    """A size of the manifest: an integer, or a list of integers and dim names multiplied
    (graph/dynamic_extents.h)."""
    if isinstance(value, int):
        return value
    product = 1
    for factor in value:
        product *= lengths[factor] if isinstance(factor, str) else factor
    return product


def evaluate_count(value, lengths):
    """A grid count of the manifest: an integer or {"ceil_div": [dim, tile]}."""
    if isinstance(value, int):
        return value
    dim, tile = value["ceil_div"]
    return -(-lengths[dim] // tile)


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


def dataset_members(dataset):
    """(key, folder, row) of every member of the dataset in `dataset` (a folder with
    manifest.jsonl), ours and external, except external members kept out of their class
    because they failed on a GPU. Each folder launches with Variant(folder)."""
    with open(os.path.join(dataset, "manifest.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    for row in rows:
        if row.get("verification", {}).get("status") == "failed":
            continue
        key = f"{row['class']}/{row['variant']}"
        yield key, os.path.join(dataset, key), row


def load_dispatch(directory):
    """dispatch.json of a dynamic program's `mugraph superoptimize` folder (format
    "mugraph.dispatch" v1, driver/range_ranking.h): {"dim": name, "dims": [...], "buckets":
    [{"min", "max", "variant"}]}, each bucket's variant a folder beside it. Needs no GPU."""
    path = os.path.join(directory, "dispatch.json")
    with open(path) as f:
        spec = json.load(f)
    if spec.get("format") != "mugraph.dispatch" or spec.get("version") != 1:
        raise ValueError(f"{path}: not a mugraph dispatch v1")
    if not spec.get("buckets"):
        raise ValueError(f"{path}: no buckets")
    previous = None
    for i, b in enumerate(spec["buckets"]):
        if not (isinstance(b.get("min"), int) and isinstance(b.get("max"), int)
                and b["min"] <= b["max"] and isinstance(b.get("variant"), str)):
            raise ValueError(f"{path}: $.buckets[{i}]: needs integers min <= max and a variant")
        if previous is not None and b["min"] <= previous:
            raise ValueError(f"{path}: $.buckets[{i}]: overlaps the bucket before it")
        previous = b["max"]
    return spec


def dispatch_bucket(spec, dims):
    """The bucket of `spec` (load_dispatch) whose lengths hold dims[spec["dim"]]."""
    dim = spec["dim"]
    if dim not in (dims or {}):
        raise ValueError(f"the dispatch is over {dim!r}: give dims={{{dim!r}: N}}")
    n = dims[dim]
    for b in spec["buckets"]:
        if b["min"] <= n <= b["max"]:
            return b
    served = ", ".join(f"[{b['min']}, {b['max']}]" for b in spec["buckets"])
    raise ValueError(f"{dim}={n} is in no bucket of the dispatch ({served})")


class Dispatch:
    """A dynamic program's variants over its lengths, as `mugraph superoptimize` wrote them
    (dispatch.json beside the variants' folders): each launch runs the kernels of the variant
    whose bucket holds the length. `empty`, `storage_shape` and `launch` are Variant's, with
    the lengths required; each variant is loaded on its first use."""

    def __init__(self, directory):
        self.directory = directory
        self.spec = load_dispatch(directory)
        self._variants = {}

    def variant(self, dims):
        name = dispatch_bucket(self.spec, dims)["variant"]
        if name not in self._variants:
            self._variants[name] = Variant(os.path.join(self.directory, name))
        return self._variants[name]

    def storage_shape(self, name, dims):
        return self.variant(dims).storage_shape(name, dims)

    def empty(self, name, dims):
        return self.variant(dims).empty(name, dims)

    def launch(self, tensors, dims):
        self.variant(dims).launch(tensors, dims)


class Variant:
    def __init__(self, directory, dims=None):
        """`dims`: the default lengths of the dynamic dims (a dict), if the variant has any."""
        self.directory = directory
        self.dims = dims
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
        # Kernels that wait for the grids before them (griddepcontrol.wait in sm_90 PTX) start
        # while those drain: launched with programmatic stream serialization.
        self.programmatic = (self.manifest.get("waits_for_prior_grids", False)
                             and int(self.arch[3:]) >= 90)
        self.tensors = {t["name"]: t for t in self.manifest["tensors"]}
        # With dynamic dims, the workspace is sized for the range's max.
        self.workspace = torch.empty(max(1, self.manifest["workspace_bytes"]), dtype=torch.uint8,
                                     device="cuda")

    def lengths(self, dims=None):
        """The dims to launch at: `dims`, else the variant's default."""
        return dim_lengths(self.manifest, dims if dims is not None else self.dims)

    def storage_shape(self, name, dims=None):
        """The shape of the tensor as stored (the manifest's, graph::storedShape), at `dims`."""
        lengths = self.lengths(dims)
        return [evaluate_product(e, lengths) for e in self.tensors[name]["stored_shape"]]

    def empty(self, name, dims=None):
        t = self.tensors[name]
        return torch.empty(self.storage_shape(name, dims), dtype=_TORCH_DTYPES[t["dtype"]],
                           device="cuda")

    def launch(self, tensors, dims=None):
        """Runs every kernel once. `tensors` maps input and output names to contiguous torch
        tensors in storage layout (inputs read, outputs written); `dims` gives the lengths of
        dynamic dims (else the variant's default)."""
        lengths = self.lengths(dims)
        pointers = {}
        for name, t in self.tensors.items():
            if t["role"] == "workspace":
                pointers[name] = self.workspace.data_ptr() + t["offset"]
                continue
            tensor = tensors[name]
            shape = self.storage_shape(name, lengths)
            if list(tensor.shape) != shape or not tensor.is_contiguous():
                raise ValueError(f"{name}: expected a contiguous tensor of shape "
                                 f"{shape}, got {list(tensor.shape)}")
            if tensor.dtype != _TORCH_DTYPES[t["dtype"]]:
                raise ValueError(f"{name}: expected {t['dtype']}, got {tensor.dtype}")
            pointers[name] = tensor.data_ptr()
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        with stream:
            for fn, k in self.kernels:
                grid = tuple(evaluate_count(c, lengths) for c in k["grid"])
                if self.programmatic or any(p.get("kind") == "tensor_map" for p in k["params"]):
                    self._launch_through_driver(fn, k, grid, pointers, lengths, stream.ptr)
                    continue
                args = tuple(np.int32(lengths[p["dim"]]) if p.get("kind") == "dim"
                             else np.uint64(pointers[p["tensor"]]) for p in k["params"])
                fn(grid, tuple(k["block"]), args, shared_mem=k["dynamic_shared_bytes"])

    def _launch_through_driver(self, fn, k, grid, pointers, lengths, stream):
        """cuLaunchKernelEx with each parameter's bytes: pointers, encoded tensor maps, lengths;
        with programmatic stream serialization where the kernels wait for earlier grids."""
        keep, addresses = [], []
        for p in k["params"]:
            if p.get("kind") == "dim":
                value = ctypes.c_int32(lengths[p["dim"]])
                keep.append(value)
                addresses.append(ctypes.addressof(value))
            elif p.get("kind") == "tensor_map":
                storage, address = encode_tensor_map(p, pointers[p["tensor"]], lengths)
                keep.append(storage)
                addresses.append(address)
            else:
                value = ctypes.c_uint64(pointers[p["tensor"]])
                keep.append(value)
                addresses.append(ctypes.addressof(value))
        args = (ctypes.c_void_p * len(addresses))(*addresses)
        block = k["block"]
        attribute = _LaunchAttribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
        attribute.value.allowed = 1
        config = _LaunchConfig(grid[0], grid[1], grid[2], block[0], block[1], block[2],
                               k["dynamic_shared_bytes"], ctypes.c_void_p(stream),
                               ctypes.pointer(attribute), 1 if self.programmatic else 0)
        _check(_cuda_driver().cuLaunchKernelEx(
            ctypes.byref(config), ctypes.c_void_p(getattr(fn, "kernel", fn).ptr), args, None),
            f"launching {k['entry']}")
