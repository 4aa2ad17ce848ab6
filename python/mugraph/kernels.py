"""Our kernels as one PyTorch custom op, `mugraph::launch(key, inputs) -> outputs`.

Each optimized subgraph registers its variant under a key; the op launches the variant's
kernels on the current stream, on the inputs' memory, into outputs (and a workspace) taken
from PyTorch's caching allocator. Nothing synchronizes or allocates outside PyTorch, so a
module calling it captures into CUDA graphs. `register_fake` gives the outputs' shapes from the
registry, so the op traces under FakeTensor (torch.compile, torch.export).
"""
import copy
import os

import torch

from . import _capi
from .fx_values import IR_DTYPES as _DTYPES

_REGISTRY = {}
# What a launch copied ("<variant folder> input q: strides [..]", "... output o: ..."): an
# input handed over not dense, an output the FX value downstream strides otherwise. Each copy
# is a kernel of its own in the step; tools/python/profile_step.py prints these. At most
# _MOST_COPIES records (a dynamic length makes one per length).
COPIES = set()
_MOST_COPIES = 256


def _copied(what):
    if len(COPIES) < _MOST_COPIES:
        COPIES.add(what)


class BoundVariant:
    """A variant's tensors (manifest entries: name, role, dtype, layout, bytes, and shape_dims
    where a dim is dynamic) bound to the shapes and strides of the FX values it replaces;
    `_launch` computes the outputs.

    A variant whose kernels take the lengths of dynamic dims (`dims`, graph/dynamic_dims.h)
    reads each length from the first input that has the dim, and its output shapes name the
    dims (an entry of `output_shapes` is a size or a dim's name); it serves every length of the
    dims' ranges with one launch each, and outputs come in the dim order of the FX values'
    strides at the recorded length (`output_strides`; their stored layout's where not given)."""

    def __init__(self, directory, tensors, output_shapes, output_strides=None, dims=()):
        self.inputs = [t for t in tensors if t["role"] == "input"]
        self.outputs = [t for t in tensors if t["role"] == "output"]
        self.dims = list(dims)
        if len(output_shapes) != len(self.outputs):
            raise _capi.MugraphError(f"{directory}: {len(self.outputs)} outputs, the subgraph "
                                     f"has {len(output_shapes)}")
        self.name = os.path.basename(os.path.normpath(directory))
        self.output_shapes = [list(s) for s in output_shapes]
        self.dim_sources = [_source_of(d["name"], self.inputs, directory) for d in self.dims]
        if self.dims:
            # A dynamic output keeps the FX value's dim order (a view after a transpose may
            # depend on it), its strides following the lengths.
            self.output_strides = None
            self.output_orders = [_dim_order(s) for s in output_strides] if output_strides \
                else [None] * len(self.outputs)
            return
        # The FX values' strides: aten nodes downstream may depend on them (a view of a
        # transpose), so the outputs keep them; dense where not given.
        self.output_strides = [list(s) for s in output_strides] if output_strides else \
            [list(torch.empty(shape, device="meta").stride()) for shape in self.output_shapes]
        for shape, t in zip(self.output_shapes, self.outputs):
            if _numel(shape) * _DTYPES[t["dtype"]].itemsize != t["bytes"]:
                raise _capi.MugraphError(f"{directory}: output {t['name']} holds {t['bytes']} "
                                         f"bytes, the FX value {shape} does not")

    def lengths(self, inputs):
        """Each dynamic dim's length in these inputs (ints, or SymInts of fake tensors)."""
        return [inputs[i].shape[fx_axis(inputs[i].shape, self.inputs[i], d["name"])]
                for (i, _), d in zip(self.dim_sources, self.dims)]

    def shapes_at(self, lengths):
        at = {d["name"]: n for d, n in zip(self.dims, lengths)}
        return [[at[d] if isinstance(d, str) else d for d in shape]
                for shape in self.output_shapes]

    def fake_outputs(self, device, inputs=()):
        if self.dims:
            return [torch.empty_permuted(shape, order, dtype=_DTYPES[t["dtype"]], device=device)
                    if order else
                    _logical(torch.empty(_storage_shape(shape, t["layout"]),
                                         dtype=_DTYPES[t["dtype"]], device=device), t["layout"])
                    for shape, t, order in zip(self.shapes_at(self.lengths(inputs)),
                                               self.outputs, self.output_orders)]
        return [torch.empty_strided(shape, stride, dtype=_DTYPES[t["dtype"]], device=device)
                for shape, stride, t in zip(self.output_shapes, self.output_strides, self.outputs)]

    def run(self, inputs):
        if len(inputs) != len(self.inputs):
            raise _capi.MugraphError(f"{len(inputs)} inputs for {len(self.inputs)}")
        device = inputs[0].device
        lengths = self.lengths(inputs)
        for n, d in zip(lengths, self.dims):
            if not d["min"] <= n <= d["max"]:
                raise _capi.MugraphError(f"{d['name']}={n} is outside [{d['min']}, {d['max']}]")
        at = {d["name"]: n for d, n in zip(self.dims, lengths)}
        dense = []
        for tensor, t in zip(inputs, self.inputs):
            if tensor.dtype != _DTYPES[t["dtype"]] or tensor.device != device:
                raise _capi.MugraphError(f"input {t['name']}: {tensor.dtype} on {tensor.device}, "
                                         f"the variant reads {t['dtype']}")
            if not tensor.is_contiguous():
                _copied(f"{self.name} input {t['name']}: {tuple(tensor.shape)} strides "
                        f"{tuple(tensor.stride())}")
                tensor = tensor.contiguous()
            expected = _bytes_at(t, at)
            if tensor.numel() * tensor.element_size() != expected:
                raise _capi.MugraphError(f"input {t['name']}: {tuple(tensor.shape)} is not the "
                                         f"{expected} bytes the variant reads")
            dense.append(tensor)
        shapes = self.shapes_at(lengths)
        for shape, t in zip(shapes, self.outputs):
            if _numel(shape) * _DTYPES[t["dtype"]].itemsize != _bytes_at(t, at):
                raise _capi.MugraphError(f"output {t['name']}: {shape} is not the "
                                         f"{_bytes_at(t, at)} bytes the variant writes")
        outputs = [torch.empty(_storage_shape(shape, t["layout"]), dtype=_DTYPES[t["dtype"]],
                               device=device) for shape, t in zip(shapes, self.outputs)]
        self._launch(dense, outputs, device, lengths)
        if self.dims:
            return [_in_order(_logical(x, t["layout"]), order, f"{self.name} output {t['name']}")
                    for x, t, order in zip(outputs, self.outputs, self.output_orders)]
        return [_with_strides(_logical(x, t["layout"]), stride, f"{self.name} output {t['name']}")
                for x, t, stride in zip(outputs, self.outputs, self.output_strides)]

    def _launch(self, inputs, outputs, device, lengths):
        """Writes the outputs (dense, in their stored layout) from the dense inputs."""
        raise NotImplementedError


def _source_of(dim, inputs, directory):
    """(input index, axis) of the first input whose shape has dynamic dim `dim`, an axis of the
    value as stored (its layout's order), counted from the last: the FX value may have leading
    1s the program's shape drops."""
    for i, t in enumerate(inputs):
        names = stored_dim_names(t)
        if dim in names:
            return i, names.index(dim) - len(names)
    raise _capi.MugraphError(f"{directory}: no input has dim {dim}, so no launch knows its length")


def fx_axis(shape, t, dim):
    """The axis of an FX value of `shape`, the bytes of manifest tensor `t`, that holds `t`'s
    dynamic dim `dim`. The value may be another view of the stored tensor: leading 1s the
    program drops, or dims it splits ([1, n, 64] for a stored [n, 2, 32]); the axis is the one
    whose inner dims hold as many elements as the stored dims after `dim` do (from the last
    axis where another dynamic dim lies among those)."""
    names = stored_dim_names(t)
    stored = _storage_shape(t["shape"], t.get("layout", "row_major"))
    axis = names.index(dim)
    if any(names[axis + 1:]):
        return axis - len(names)
    inner = _numel(stored[axis + 1:])
    elements = 1
    for a in range(len(shape) - 1, -1, -1):
        if elements == inner:
            return a
        elements *= int(shape[a])
    raise _capi.MugraphError(f"no axis of {tuple(shape)} holds dim {dim} of input {t['name']}")


def stored_dim_names(t):
    """A manifest tensor's dim names (shape_dims; "" for a static dim) in its stored order; none
    for a static tensor (the manifest gives it no shape_dims)."""
    names = t.get("shape_dims")
    return _storage_shape(names, t.get("layout", "row_major")) if names else []


def _bytes_at(t, at):
    """A manifest tensor's bytes at the lengths `at` (its static bytes where it has no dim)."""
    names = t.get("shape_dims")
    if not names:
        return t["bytes"]
    shape = [at[n] if n else d for d, n in zip(t["shape"], names)]
    return _numel(shape) * _DTYPES[t["dtype"]].itemsize


class DispatchedVariant:
    """A dynamic program's dispatch (`dispatch.json`, "format": "mugraph.dispatch"): each
    bucket of the dim's lengths runs one variant, every variant bound like a BoundVariant.
    Where the variants store an output in different layouts, it is returned dense, so its
    strides do not depend on the length."""

    def __init__(self, spec, variants):
        if spec.get("format") != "mugraph.dispatch" or spec.get("version") != 1:
            raise ValueError("not a mugraph.dispatch v1")
        self.buckets = [(b["min"], b["max"], variants[b["variant"]]) for b in spec["buckets"]]
        self.variants = variants
        self.name = "dispatch(" + ", ".join(variants) + ")"
        first = next(iter(variants.values()))
        self.dim = [d["name"] for d in first.dims].index(spec["dim"])
        layouts = {tuple(t["layout"] for t in v.outputs) for v in variants.values()}
        self.dense = len(layouts) > 1

    def variant_at(self, length):
        for low, high, variant in self.buckets:
            if low <= length <= high:
                return variant
        raise _capi.MugraphError(f"length {length} is in no bucket of the dispatch")

    def run(self, inputs):
        first = next(iter(self.variants.values()))
        outputs = self.variant_at(int(first.lengths(inputs)[self.dim])).run(inputs)
        return [x.contiguous() for x in outputs] if self.dense else outputs

    def fake_outputs(self, device, inputs=()):
        outputs = next(iter(self.variants.values())).fake_outputs(device, inputs)
        return [x.contiguous() for x in outputs] if self.dense else outputs


class LoadedVariant(BoundVariant):
    """A variant loaded on the GPU (`_capi.Variant`): its kernels run on the current stream."""

    def __init__(self, directory, output_shapes, output_strides=None):
        self.variant = loaded(directory)
        super().__init__(directory, self.variant.tensors, output_shapes, output_strides,
                         self.variant.dims)

    def _launch(self, inputs, outputs, device, lengths):
        workspace = None
        if self.variant.workspace_bytes:
            workspace = torch.empty(self.variant.workspace_bytes, dtype=torch.uint8, device=device)
        addresses = [x.data_ptr() for x in inputs] + [x.data_ptr() for x in outputs]
        self.variant.launch(addresses, workspace.data_ptr() if workspace is not None else 0,
                            torch.cuda.current_stream(device).cuda_stream,
                            [int(n) for n in lengths])


_LOADED = {}  # a variant folder's real path -> (its manifest's mtime, its _capi.Variant)


def loaded(directory):
    """The folder's variant, its PTX loaded (JIT-compiled by the driver) once per process: a
    recompile (a guard that failed, a second torch.compile) reuses it. The cache writes a
    folder by rename, so a rewritten one has a new manifest and is loaded again."""
    path = os.path.realpath(directory)
    stamp = os.stat(os.path.join(path, "manifest.json")).st_mtime_ns
    hit = _LOADED.get(path)
    if hit is None or hit[0] != stamp:
        hit = (stamp, _capi.Variant(directory))
        _LOADED[path] = hit
    return hit[1]


def _storage_shape(shape, layout):
    """The dense shape an output of `layout` is stored in (graph/types.h, storageStrides)."""
    shape = list(shape)
    if layout == "transposed":
        return shape[:-2] + [shape[-1], shape[-2]]
    if layout == "heads_transposed":
        return shape[:-3] + [shape[-2], shape[-3], shape[-1]]
    return shape


def _logical(x, layout):
    """The stored output as a view in its logical order."""
    if layout == "transposed":
        return x.transpose(-1, -2)
    if layout == "heads_transposed":
        return x.transpose(-3, -2)
    return x


def _dim_order(stride):
    """The dims from outermost to innermost (largest stride first; ties in dim order)."""
    return sorted(range(len(stride)), key=lambda d: -int(stride[d]))


def _in_order(x, order, what):
    """x itself where its dims are laid out in `order` (dims of size 1 aside), else a copy laid
    out so (torch.empty_permuted); x where no order is given."""
    if order is None:
        return x
    target = torch.empty_permuted(x.shape, order, dtype=x.dtype, device=x.device)
    if all(size == 1 or a == b for size, a, b in zip(x.shape, x.stride(), target.stride())):
        return x
    _copied(f"{what}: {tuple(x.shape)} strides {tuple(x.stride())} -> {tuple(target.stride())}")
    return target.copy_(x)


def _with_strides(x, stride, what):
    """x itself where its strides are the FX value's (dims of size 1 aside), else a copy laid
    out with them."""
    if all(size == 1 or a == b for size, a, b in zip(x.shape, x.stride(), stride)):
        return x
    _copied(f"{what}: {tuple(x.shape)} strides {tuple(x.stride())} -> {tuple(stride)}")
    return torch.empty_strided(x.shape, stride, dtype=x.dtype, device=x.device).copy_(x)


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def register(key, loaded):
    _REGISTRY[key] = loaded


def registered(key):
    return _REGISTRY[key]


def with_output_strides(key, strides, tag):
    """The key of the variant registered under `key` registered again, under key:tag, with
    its outputs' strides replaced by `strides` (the same kernels; only where run copies its
    outputs to, and what its fake outputs say, differ)."""
    variant = copy.copy(_REGISTRY[key])
    variant.output_strides = [list(s) for s in strides]
    _REGISTRY[f"{key}:{tag}"] = variant
    return f"{key}:{tag}"


def stored_strides(loaded, j):
    """The strides output j of a static variant has as our kernel stores it (its layout's
    order), with no copy to the FX value's strides."""
    t = loaded.outputs[j]
    x = torch.empty(_storage_shape(loaded.output_shapes[j], t["layout"]), device="meta")
    return list(_logical(x, t["layout"]).stride())


# Our kernels read dense storage (the binding hands each input over as the memory its program
# reads, a dense view). Inductor is told so: untold, it chose the layout of a buffer it writes
# for the launch (PyTorch 2.11 constrains no tensor inside a list argument), and Phi-3's RoPE
# results came [s, h, d] where the attention program reads [h, s, d], so the launch copied
# them (4 copies, 13.6 us a step on an H200). Required contiguous, the kernel that writes such
# a buffer writes it so, and a buffer already dense is left as it is.
_LAUNCH_TAGS = (torch.Tag.needs_contiguous_strides,) \
    if hasattr(torch.Tag, "needs_contiguous_strides") else ()


@torch.library.custom_op("mugraph::launch", mutates_args=(), tags=_LAUNCH_TAGS)
def launch(key: str, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    return _REGISTRY[key].run(inputs)


@launch.register_fake
def _launch_fake(key, inputs):
    return _REGISTRY[key].fake_outputs(inputs[0].device, inputs)
