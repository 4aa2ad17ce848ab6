"""An aten-level FX graph written as a mugraph model graph (format "mugraph.graph").

The C++ partitioner (onnx_import/, reached through the C API) reads nodes in ONNX's operator
vocabulary. This module only translates: each aten node becomes the ONNX node (or the few
nodes) that compute the same function, named after the FX node, and every value carries the
dtype and static shape FX's fake tensors give it. Which nodes are fused, and how, is decided
in C++ alone. An aten op with no translation here becomes a node the partitioner leaves to
PyTorch ("no mapping"); it is never an error.
"""
import math
import operator

import torch

from . import constant_mask, fx_attention, fx_dims, fx_functions
from .fx_values import (ELEM_TYPES as _ELEM_TYPES, ONNX_TYPE_NUMBERS as _ONNX_TYPE_NUMBERS,
                        Untranslatable as _Untranslatable, has_gaps as _has_gaps,
                        packet as _packet,
                        static_shape as _static_shape, stored_layout as _stored_layout,
                        tensor_meta as _tensor_meta)

GRAPH_FORMAT = "mugraph.graph"
OPSET = 21

# The longest length a dynamic dim serves by default (fx_dims.py): its range's top, what the
# search verifies and ranks over; a longer one recompiles the graph.
DEFAULT_MAX_LENGTH = 4096


class _Writer:
    def __init__(self, name, max_length=DEFAULT_MAX_LENGTH):
        self.graph = {"format": GRAPH_FORMAT, "version": 1, "name": name, "opset": OPSET,
                      "values": [], "inputs": [], "outputs": [], "constants": [], "nodes": []}
        self.described = set()
        self.dims = fx_dims.DimNames(max_length)
        self.origin = {}  # graph JSON node name -> FX node name
        self.untranslated = {}  # FX node name -> why it was not translated
        self.causal_masks = {}  # value name -> (FX SDPA node, rows, cols, dtype)
        self.attentions = {}  # FX SDPA node name -> the prefix of its values
        # value name -> (FX node, rep): GQA's KV heads each repeated rep times along the heads
        # dim (-3), where a subgraph reads the repeats rather than the KV buffer
        self.repeated_heads = {}
        # value name -> (FX node, perm): a transpose inside one translated aten node (SDPA's Kᵀ)
        # of an FX value; where the partitioner leaves it out (K a view no layout describes
        # twice, as after GPT-2's split of a fused QKV) and a subgraph reads it, the backend
        # makes it, as a permute of the FX value
        self.permuted = {}
        # (mask FX node name, rows, cols) -> whether it is a causal mask computed from no input,
        # read as is_causal (constant_mask.py): evaluated once however many attentions read it
        self.constant_causal_masks = {}
        # FX node name -> the value names of its results, for a node that returns a tuple
        # (native_layer_norm) which getitems read
        self.tuple_results = {}
        # value name -> its "layout" in the graph JSON, where it is not row-major
        # (fx_values.stored_layout)
        self.stored_layouts = {}

    def constant_causal(self, mask, rows, cols):
        key = (mask.name, rows, cols)
        if key not in self.constant_causal_masks:
            self.constant_causal_masks[key] = constant_mask.is_constant_causal_mask(mask, rows,
                                                                                   cols)
        return self.constant_causal_masks[key]

    def attention_prefix(self, node):
        return self.attentions.setdefault(node.name, f"attention{len(self.attentions)}")

    def value(self, name, elem_type, shape, why=None, layout=None, dense=True):
        if name in self.described:
            return name
        entry = {"name": name, "type": elem_type, "shape": shape}
        if shape is None:
            entry["why_no_shape"] = why or "its shape is symbolic (a dynamic dim)"
        elif layout is not None:
            entry["layout"] = layout
            self.stored_layouts[name] = layout
        if shape is not None and not dense:
            entry["dense"] = False
        self.graph["values"].append(entry)
        self.described.add(name)
        return name

    def value_of(self, node):
        val = _tensor_meta(node)
        if val is None:
            return self.value(node.name, "not a tensor", None, "not a tensor")
        elem_type = _ELEM_TYPES.get(val.dtype, "not a tensor")
        try:
            shape = self.shape_of(val)
        except fx_dims.NoDim as e:
            return self.value(node.name, elem_type, None, str(e))
        if 0 in shape:  # the IR has no empty tensors: PyTorch keeps it
            return self.value(node.name, elem_type, None, "an empty tensor (a zero-size dim)")
        layout = _stored_layout(val) or ("heads_transposed" if _readers_swap_heads(node, val)
                                         else None)
        return self.value(node.name, elem_type, shape, layout=layout, dense=not _has_gaps(val))

    def shape_of(self, val):
        """Sizes, and names of dynamic dims (fx_dims.py); fx_dims.NoDim where one can be
        neither."""
        return [self.dims.size(d) for d in val.shape]

    def constant(self, name, values, elem_type, shape):
        self.value(name, elem_type, shape)
        self.graph["constants"].append({"name": name, "values": list(values)})
        return name

    def node(self, fx_name, name, op, inputs, outputs, attributes=None):
        entry = {"name": name, "op": op, "inputs": inputs, "outputs": outputs}
        if attributes:
            entry["attributes"] = attributes
        self.graph["nodes"].append(entry)
        self.origin[name] = fx_name


def _operand(w, node, arg, index, like):
    """An argument as a value name: an FX node's value, or a scalar constant."""
    if isinstance(arg, torch.fx.Node):
        return w.value_of(arg)
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        val = _tensor_meta(like)
        elem_type = _ELEM_TYPES.get(val.dtype, "float") if val is not None else "float"
        return w.constant(f"{node.name}.c{index}", [float(arg)], elem_type, [])
    raise _Untranslatable(f"argument {index} is {type(arg).__name__}")


def _axes(w, node, dims, rank, suffix="axes"):
    dims = [dims] if isinstance(dims, int) else list(dims)
    dims = [d + rank if d < 0 else d for d in dims]
    return w.constant(f"{node.name}.{suffix}", dims, "int64", [len(dims)])


def _shape_constant(w, node, suffix="shape"):
    shape = _static_shape(_tensor_meta(node))
    if shape is None:
        raise _Untranslatable("its shape is symbolic")
    return w.constant(f"{node.name}.{suffix}", shape, "int64", [len(shape)])


def _unary(op):
    return lambda w, n: w.node(n.name, n.name, op, [w.value_of(n.args[0])], [w.value_of(n)])


def _binary(op):
    def translate(w, n):
        a, b = n.args[0], n.args[1]
        if n.kwargs.get("alpha", 1) != 1 or (len(n.args) > 2 and n.args[2] != 1):
            raise _Untranslatable("alpha other than 1")
        if op in ("Mul", "Div") and isinstance(a, torch.fx.Node) and b == 1 \
                and not isinstance(b, bool) and _same_type(a, n):
            # x·1 and x/1 are x exactly (IEEE, infinities and NaN included): RoPE's
            # cos·attention_scaling with scaling 1 stays a value the subgraph reads
            return _identity(w, n)
        like = a if isinstance(a, torch.fx.Node) else b
        operands = [_operand(w, n, a, 0, like), _operand(w, n, b, 1, like)]
        if op == "Add":
            for m, (mask, scores) in enumerate(((a, b), (b, a))):
                causal = _causal_mask_operand(w, n, mask, scores)
                if causal is not None:
                    operands[m] = causal
                    break
        w.node(n.name, n.name, op, operands, [w.value_of(n)])
    return translate


_CASTS = ("_to_copy", "clone", "alias", "contiguous", "detach")


def _only_softmax_reads(node, depth=0):
    """Whether only softmaxes over the last dim read the FX node (through casts and copies):
    they see -inf and the dtype's lowest value alike, so a mask of either is causal_mask."""
    if not node.users or depth > 4:
        return False
    rank = len(_tensor_meta(node).shape)
    for user in node.users:
        name = _packet(user.target) if user.op == "call_function" else None
        if name in ("_softmax", "softmax"):
            dim = user.args[1] if len(user.args) > 1 else user.kwargs.get("dim")
            if not isinstance(dim, int) or dim % rank != rank - 1 or user.args[0] is not node:
                return False
        elif name not in _CASTS or not _only_softmax_reads(user, depth + 1):
            return False
    return True


def _causal_mask_operand(w, n, mask, scores):
    """Eager attention's `scores + mask` before a softmax, the mask a constant causal one
    (constant_mask.py): our CausalMask value, as SDPA's is_causal is written, so the partition
    reads it as causal_mask (onnx_import/causal_masks.h) and no mask is loaded. None otherwise."""
    if not (isinstance(mask, torch.fx.Node) and isinstance(scores, torch.fx.Node)):
        return None
    mv, sv = _tensor_meta(mask), _tensor_meta(scores)
    shape = _static_shape(sv) if sv is not None else None
    if mv is None or shape is None or len(shape) < 2 or mv.dtype == torch.bool:
        return None
    rows, cols = shape[-2:]
    if tuple(mv.shape[-2:]) != (rows, cols) or not _only_softmax_reads(n):
        return None
    if not w.constant_causal(mask, rows, cols):
        return None
    value = w.value(f"{n.name}.causal_mask", _ELEM_TYPES[sv.dtype], [rows, cols])
    w.node(n.name, value, "CausalMask", [], [value])
    w.causal_masks[value] = (n, rows, cols, sv.dtype)
    return value


def _same_type(a, b):
    va, vb = _tensor_meta(a), _tensor_meta(b)
    return va is not None and vb is not None and va.dtype == vb.dtype and va.shape == vb.shape


def _rsub(w, n):  # rsub(x, c) = c - x
    x, c = n.args[0], n.args[1]
    w.node(n.name, n.name, "Sub", [_operand(w, n, c, 1, x), w.value_of(x)], [w.value_of(n)])


def _rsqrt(w, n):
    x = n.args[0]
    root = w.value(f"{n.name}.sqrt", *_described(w, n))
    w.node(n.name, f"{n.name}.sqrt", "Sqrt", [w.value_of(x)], [root])
    w.node(n.name, n.name, "Reciprocal", [root], [w.value_of(n)])


def _silu(w, n):
    x = n.args[0]
    gate = w.value(f"{n.name}.sigmoid", *_described(w, n))
    w.node(n.name, f"{n.name}.sigmoid", "Sigmoid", [w.value_of(x)], [gate])
    w.node(n.name, n.name, "Mul", [w.value_of(x), gate], [w.value_of(n)])


def _described(w, node):
    val = _tensor_meta(node)
    try:
        return _ELEM_TYPES.get(val.dtype, "not a tensor"), w.shape_of(val)
    except fx_dims.NoDim as e:
        raise _Untranslatable(str(e))


def _matmul(w, n):
    w.node(n.name, n.name, "MatMul", [w.value_of(n.args[0]), w.value_of(n.args[1])],
           [w.value_of(n)])


def _addmm(w, n):
    """beta·input + alpha·(a·b): addmm (a linear layer with its bias) and baddbmm (BLOOM's
    scores: ALiBi's bias plus Q·Kᵀ scaled)."""
    bias, a, b = n.args[:3]
    beta, alpha = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
    if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in (beta, alpha)):
        raise _Untranslatable("beta or alpha is not a number")
    if beta == 0:
        raise _Untranslatable("beta 0 (the input ignored, NaN included)")
    elem, shape = _described(w, n)
    product = w.value(f"{n.name}.mm", elem, shape)
    w.node(n.name, f"{n.name}.mm", "MatMul", [w.value_of(a), w.value_of(b)], [product])
    if alpha != 1:
        scaled = w.value(f"{n.name}.alpha", elem, shape)
        w.node(n.name, scaled, "Mul",
               [product, w.constant(f"{n.name}.alpha_c", [float(alpha)], elem, [])], [scaled])
        product = scaled
    term = w.value_of(bias)
    if beta != 1:
        term = w.value(f"{n.name}.beta", *_described(w, bias))
        w.node(n.name, term, "Mul",
               [w.value_of(bias), w.constant(f"{n.name}.beta_c", [float(beta)], elem, [])], [term])
    w.node(n.name, n.name, "Add", [product, term], [w.value_of(n)])


def _permutation(rank, perm):
    return [p + rank if p < 0 else p for p in perm]




# aten ops whose result is their input's data unchanged (a view of the same shape, or a copy)
_SAME_DATA_OPS = {"view", "_unsafe_view", "reshape", "alias", "clone", "contiguous", "detach"}


def _same_data(node):
    """Whether `node` gives its input's data in the same shape (a no-op view or a copy)."""
    if _packet(node.target) not in _SAME_DATA_OPS or not node.args \
            or not isinstance(node.args[0], torch.fx.Node):
        return False
    a, b = _tensor_meta(node.args[0]), _tensor_meta(node)
    return a is not None and b is not None and a.shape == b.shape


def _attention_result(node):
    """Whether `node` is SDPA's result (its first result, which a getitem reads), or that
    result through views and copies of the same shape."""
    while _same_data(node):
        node = node.args[0]
    source = node.args[0] if node.target is operator.getitem and node.args[1] == 0 else node
    return isinstance(source, torch.fx.Node) and \
        _TRANSLATIONS.get(_packet(source.target)) is fx_attention.sdpa


def _readers_swap_heads(node, val):
    """Whether `node` is attention's dense result [.., h, s, d] that every reader reads with
    its heads swapped back, [.., s, h, d] (before the output projection, where SDPA returns it
    dense: cuDNN at head dim 96, the CPU's kernel), directly or through views and copies of the
    same shape: then it is better stored so (graph JSON "layout": "heads_transposed"), and the
    reader's swap and merge of the heads are views of that memory. Where PyTorch computes it
    after all, the reader's binding makes that copy, as PyTorch did. Only attention's result:
    a value a subgraph computes along its last axis before the swap (Qwen3's per-head norms)
    is computed in the swapped order instead (heads_pushdown.h)."""
    if val is None or val.dim() < 3 or not val.is_contiguous() or _static_shape(val) is None \
            or not _attention_result(node):
        return False
    rank = val.dim()
    swapped = list(range(rank))
    swapped[rank - 3], swapped[rank - 2] = swapped[rank - 2], swapped[rank - 3]

    def swaps(n):
        if not n.users:
            return False
        for user in n.users:
            if user.args[0] is not n:
                return False
            if _same_data(user):
                if not swaps(user):
                    return False
            elif _packet(user.target) == "transpose":
                if sorted(_permutation(rank, user.args[1:3])) != [rank - 3, rank - 2]:
                    return False
            elif _packet(user.target) != "permute" or \
                    _permutation(rank, user.args[1]) != swapped:
                return False
        return True
    return swaps(node)


def _transpose(w, n):
    x = n.args[0]
    rank = len(_tensor_meta(x).shape)
    if _packet(n.target) == "t":
        perm = list(range(rank))[::-1]
    elif _packet(n.target) == "permute":
        perm = _permutation(rank, n.args[1])
    else:
        d0, d1 = _permutation(rank, n.args[1:3])
        perm = list(range(rank))
        perm[d0], perm[d1] = perm[d1], perm[d0]
    w.node(n.name, n.name, "Transpose", [w.value_of(x)], [w.value_of(n)], {"perm": perm})


def _reshape(w, n):
    x = n.args[0]
    if _static_shape(_tensor_meta(n)) is None:
        # Leading 1s added or dropped ([h, n, n] as [1, h, n, n]): an Unsqueeze or Squeeze,
        # which takes no sizes, however many symbolic sizes the shape has.
        try:
            before, after = w.shape_of(_tensor_meta(x)), w.shape_of(_tensor_meta(n))
        except fx_dims.NoDim as e:
            raise _Untranslatable(str(e))
        ones = len(after) - len(before)
        if ones > 0 and after[ones:] == before and all(d == 1 for d in after[:ones]):
            return w.node(n.name, n.name, "Unsqueeze",
                          [w.value_of(x), _axes(w, n, list(range(ones)), len(after))],
                          [w.value_of(n)])
        if ones < 0 and before[-ones:] == after and all(d == 1 for d in before[:-ones]):
            return w.node(n.name, n.name, "Squeeze",
                          [w.value_of(x), _axes(w, n, list(range(-ones)), len(before))],
                          [w.value_of(n)])
    w.node(n.name, n.name, "Reshape", [w.value_of(x), _reshape_target(w, n)], [w.value_of(n)])


def _reshape_target(w, node):
    """The Reshape's target: its sizes, a symbolic one (a dynamic dim) as -1, which ONNX infers
    from the input's size at every length; at most one can be."""
    val = _tensor_meta(node)
    if _static_shape(val) is not None:
        return _shape_constant(w, node)
    try:
        shape = w.shape_of(val)
    except fx_dims.NoDim as e:
        raise _Untranslatable(str(e))
    if sum(isinstance(d, str) for d in shape) > 1:
        raise _Untranslatable("its shape has more than one symbolic size")
    return w.constant(f"{node.name}.shape", [-1 if isinstance(d, str) else d for d in shape],
                      "int64", [len(shape)])


def _expand(w, n):
    w.node(n.name, n.name, "Expand", [w.value_of(n.args[0]), _expand_target(w, n)],
           [w.value_of(n)])


def _expand_target(w, node):
    """The Expand's target: its sizes, a symbolic one as 1 (ONNX broadcasts it to the input's
    size), which holds where the input's dim is that same size: a dynamic dim is kept, never
    repeated."""
    val = _tensor_meta(node)
    if _static_shape(val) is not None:
        return _shape_constant(w, node)
    x = _tensor_meta(node.args[0])
    try:
        shape, given = w.shape_of(val), w.shape_of(x)
    except fx_dims.NoDim as e:
        raise _Untranslatable(str(e))
    given = [1] * (len(shape) - len(given)) + given
    for size, before in zip(shape, given):
        if isinstance(size, str) and size != before:
            raise _Untranslatable(f"repeats data along a dynamic dim ({before} to {size})")
    return w.constant(f"{node.name}.shape", [1 if isinstance(d, str) else d for d in shape],
                      "int64", [len(shape)])


def _identity(w, n):
    w.node(n.name, n.name, "Identity", [w.value_of(n.args[0])], [w.value_of(n)])


def _to_copy(w, n):
    x = n.args[0]
    source, result = _tensor_meta(x), _tensor_meta(n)
    if source.device != result.device:
        raise _Untranslatable("moves between devices")
    if source.dtype == result.dtype:
        return _identity(w, n)
    if result.dtype not in _ONNX_TYPE_NUMBERS:
        raise _Untranslatable(f"casts to {result.dtype}")
    w.node(n.name, n.name, "Cast", [w.value_of(x)], [w.value_of(n)],
           {"to": _ONNX_TYPE_NUMBERS[result.dtype]})


def _pow(w, n):
    x, e = n.args[:2]
    w.node(n.name, n.name, "Pow", [w.value_of(x), _operand(w, n, e, 1, x)], [w.value_of(n)])


def _reduce(op):
    def translate(w, n):
        x = n.args[0]
        rank = len(_tensor_meta(x).shape)
        dims = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", list(range(rank)))
        keepdim = n.args[2] if len(n.args) > 2 else n.kwargs.get("keepdim", False)
        if n.kwargs.get("dtype") is not None:
            raise _Untranslatable("reduces into another dtype")
        w.node(n.name, n.name, op, [w.value_of(x), _axes(w, n, dims, rank)], [w.value_of(n)],
               {"keepdims": int(bool(keepdim))})
    return translate


def _softmax(w, n):
    x, dim = n.args[:2]
    if _packet(n.target) == "_softmax" and n.args[2]:
        raise _Untranslatable("computes a half input in float (half_to_float)")
    w.node(n.name, n.name, "Softmax", [w.value_of(x)], [w.value_of(n)], {"axis": dim})


def _is_empty(node):
    val = _tensor_meta(node) if isinstance(node, torch.fx.Node) else None
    shape = _static_shape(val) if val is not None else None
    return shape is not None and 0 in shape


_WHOLE = 2 ** 62  # an end past any length: PyTorch writes x[a:] as an end of 2**63 - 1


def _slice(w, n):
    x = n.args[0]
    shape = _static_shape(_tensor_meta(x))
    dim = n.args[1] if len(n.args) > 1 else 0
    start = n.args[2] if len(n.args) > 2 else None
    end = n.args[3] if len(n.args) > 3 else None
    step = n.args[4] if len(n.args) > 4 else 1
    if not all(isinstance(v, int) or v is None for v in (start, end, step)):
        raise _Untranslatable("its bounds are symbolic")
    sizes = _tensor_meta(x).shape
    dim = dim + len(sizes) if dim < 0 else dim
    if shape is None and isinstance(sizes[dim], torch.SymInt) \
            and not sizes[dim].node.expr.is_number:  # the other dims may be dynamic
        if start in (None, 0) and (end is None or end >= _WHOLE) and step == 1:
            return _identity(w, n)  # x[:, :] over a dynamic dim: x at every length
        raise _Untranslatable("it slices a dynamic dim")
    size = int(sizes[dim])
    start = 0 if start is None else max(0, min(start + size if start < 0 else start, size))
    end = size if end is None else max(0, min(end + size if end < 0 else end, size))
    if start == 0 and end == size and step == 1:  # x[:, :, None]'s full slices: x itself
        return _identity(w, n)
    rank = len(sizes)
    inputs = [w.value_of(x), w.constant(f"{n.name}.starts", [start], "int64", [1]),
              w.constant(f"{n.name}.ends", [end], "int64", [1]),
              _axes(w, n, [dim], rank), w.constant(f"{n.name}.steps", [step], "int64", [1])]
    w.node(n.name, n.name, "Slice", inputs, [w.value_of(n)])


def _cat(w, n):
    tensors = n.args[0]
    dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)
    rank = len(_tensor_meta(n).shape)
    if not isinstance(_tensor_meta(n).shape[dim], int):
        raise _Untranslatable("concatenates along a dynamic dim (a KV cache's append)")
    nonempty = [t for t in tensors if not _is_empty(t)]
    if len(nonempty) == 1 and _same_type(nonempty[0], n):
        # a cache's empty past concatenated with the new keys: the keys themselves
        w.node(n.name, n.name, "Identity", [w.value_of(nonempty[0])], [w.value_of(n)])
        return
    w.node(n.name, n.name, "Concat", [w.value_of(t) for t in tensors], [w.value_of(n)],
           {"axis": dim + rank if dim < 0 else dim})


def _stack(w, n):
    """stack(tensors, dim) as ONNX writes it: each tensor given a new axis of 1 at dim
    (Unsqueeze), then one Concat along that axis. Interleaved RoPE's
    torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2) then reaches the partitioner as
    the pattern it maps to rotate_pairs (onnx_import/rope_patterns.h)."""
    tensors = n.args[0]
    dim = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)
    rank = len(_tensor_meta(n).shape)
    axis = dim + rank if dim < 0 else dim
    shapes = []  # every operand's shape first: nothing is written for an untranslatable one
    for index, t in enumerate(tensors):
        val = _tensor_meta(t) if isinstance(t, torch.fx.Node) else None
        if val is None:
            raise _Untranslatable(f"operand {index} is not a tensor")
        try:
            shapes.append(w.shape_of(val))
        except fx_dims.NoDim as e:
            raise _Untranslatable(f"operand {index}: {e}")
    axes = _axes(w, n, [axis], rank)
    stacked = []
    for index, (t, shape) in enumerate(zip(tensors, shapes)):
        name = f"{n.name}.u{index}"
        w.value(name, _ELEM_TYPES.get(_tensor_meta(t).dtype, "not a tensor"),
                shape[:axis] + [1] + shape[axis:])
        w.node(n.name, name, "Unsqueeze", [w.value_of(t), axes], [name])
        stacked.append(name)
    w.node(n.name, n.name, "Concat", stacked, [w.value_of(n)], {"axis": axis})


_TRANSLATIONS = {
    "mm": _matmul, "bmm": _matmul, "matmul": _matmul, "addmm": _addmm, "baddbmm": _addmm,
    "t": _transpose, "transpose": _transpose, "permute": _transpose,
    "view": _reshape, "_unsafe_view": _reshape, "reshape": _reshape, "unsqueeze": _reshape,
    "squeeze": _reshape, "flatten": _reshape, "expand": _expand,
    "clone": _identity, "alias": _identity, "contiguous": _identity, "detach": _identity,
    "_to_copy": _to_copy,
    "add": _binary("Add"), "sub": _binary("Sub"), "mul": _binary("Mul"), "div": _binary("Div"),
    "rsub": _rsub, "neg": _unary("Neg"), "exp": _unary("Exp"), "sqrt": _unary("Sqrt"),
    "tanh": _unary("Tanh"), "erf": _unary("Erf"), "relu": _unary("Relu"),
    "sigmoid": _unary("Sigmoid"), "reciprocal": _unary("Reciprocal"), "rsqrt": _rsqrt,
    "silu": _silu, "pow": _pow, "gelu": fx_functions.gelu,
    "native_layer_norm": fx_functions.layer_norm,
    "mean": _reduce("ReduceMean"), "sum": _reduce("ReduceSum"), "amax": _reduce("ReduceMax"),
    "_softmax": _softmax, "softmax": _softmax, "slice": _slice, "cat": _cat, "stack": _stack,
    "_scaled_dot_product_flash_attention": fx_attention.sdpa,
    "_scaled_dot_product_efficient_attention": fx_attention.sdpa,
    "_scaled_dot_product_cudnn_attention": fx_attention.sdpa,
    "_scaled_dot_product_flash_attention_for_cpu": fx_attention.sdpa,
    "scaled_dot_product_attention": fx_attention.sdpa,
}


def _target_name(node):
    target = node.target
    return str(target) if not callable(target) or isinstance(target, torch._ops.OpOverload) \
        else getattr(target, "__name__", str(target))


def program_dims(partition):
    """The graph JSON's dims that some subgraph's program has (`dim NAME in [..]`)."""
    return {line.split()[1] for s in partition["subgraphs"]
            for line in s["program_text"].splitlines() if line.startswith("dim ")}


def to_graph_json(gm, name="fx", max_length=DEFAULT_MAX_LENGTH):
    """(graph JSON dict, FxGraphInfo) for an aten-level GraphModule with fake-tensor metadata;
    a symbolic size is a dynamic dim of range at most [1, max_length] (fx_dims.py)."""
    w = _Writer(name, max_length)
    outputs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            w.value_of(node)
            entry = w.graph["values"][-1]
            if entry["shape"] is not None:
                w.graph["inputs"].append(node.name)
            else:
                w.untranslated[node.name] = f"an input that is {entry['why_no_shape']}"
                w.node(node.name, node.name, "Input", [], [node.name])
            continue
        if node.op == "output":
            for arg in torch.fx.node.map_arg(node.args[0], lambda a: a).__iter__() \
                    if isinstance(node.args[0], (list, tuple)) else [node.args[0]]:
                if isinstance(arg, torch.fx.Node) and arg.name in w.described:
                    outputs.append(arg.name)
            continue
        if node.op != "call_function":
            w.untranslated[node.name] = f"an FX {node.op} node"
            _opaque(w, node)
            continue
        packet = _packet(node.target)
        translate = _TRANSLATIONS.get(packet)
        if node.target is torch.ops.prims.convert_element_type.default:
            translate = _to_copy  # what decompositions write for a dtype conversion
        if node.target is operator.getitem:
            translate = fx_attention.getitem
        if translate is None and node.target == torch.ops.aten.copy_.default:
            w.untranslated[node.name] = (f"writes {node.args[0]} in place (model state such "
                                         "as a KV cache)")
            _opaque(w, node)
            continue
        if translate is None:
            w.untranslated[node.name] = f"no mapping for {_target_name(node)}"
            _opaque(w, node)
            continue
        nodes_before = len(w.graph["nodes"])
        try:
            translate(w, node)
        except _Untranslatable as e:
            del w.graph["nodes"][nodes_before:]
            w.untranslated[node.name] = f"{_target_name(node)}: {e}"
            _opaque(w, node)
    w.graph["outputs"] = list(dict.fromkeys(outputs))
    used = set()
    for v in w.graph["values"]:
        v["shape"] = w.dims.resolve(v["shape"])
        used.update(d for d in v["shape"] or [] if isinstance(d, str))
    if used:
        w.graph["dims"] = w.dims.declarations(used)
    return w.graph, w


def _opaque(w, node):
    """A node left to PyTorch: it reads its tensor arguments and defines its value."""
    inputs = []
    for arg in node.all_input_nodes:
        if arg.name in w.described:
            inputs.append(arg.name)
    w.value_of(node)
    w.node(node.name, node.name, "aten." + _target_name(node).replace("aten.", ""), inputs,
           [node.name])
