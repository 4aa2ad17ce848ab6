"""What the FX front end's modules share: element types, fake-tensor metadata, and the
exception that leaves a node to PyTorch."""
import torch

ELEM_TYPES = {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float",
    torch.float64: "double", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
    torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
}
# The IR's dtype names (graph/types.h) as torch dtypes.
IR_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
# ONNX TensorProto element type numbers, for Cast's `to`.
ONNX_TYPE_NUMBERS = {torch.float32: 1, torch.float16: 10, torch.bfloat16: 16,
                     torch.float64: 11, torch.int64: 7, torch.int32: 6, torch.bool: 9}


class Untranslatable(Exception):
    """A node the front end leaves to PyTorch: the reason."""


def packet(target):
    """'mm' for aten.mm.default; None for anything that is not an aten overload."""
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten":
        return target.overloadpacket.__name__
    return None


def tensor_meta(node):
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def static_shape(val):
    """The sizes, or None where one is symbolic. A symbolic size is never turned into an int:
    that would guard the graph on its present value (a recompile per length)."""
    if any(isinstance(d, torch.SymInt) and not d.node.expr.is_number for d in val.shape):
        return None
    return [int(d) for d in val.shape]


def stored_layout(val):
    """"heads_transposed" where a tensor of logical shape [.., h, s, d] is laid out densely as
    [.., s, h, d] (SDPA's result, a projection's output viewed per head), else None: the
    graph JSON's value "layout" (graph/types.h, storageStrides). A subgraph writing such a
    value stores it so, and one reading it reads that memory, so neither side copies it.
    Only where every size and stride is static (a symbolic one is never guarded on)."""
    if val is None or val.dim() < 3 or val.is_contiguous():
        return None
    shape = static_shape(val)
    strides = [s for s in val.stride() if not isinstance(s, torch.SymInt) or s.node.expr.is_number]
    if shape is None or len(strides) != len(shape):
        return None
    stored = shape[:-3] + [shape[-2], shape[-3], shape[-1]]
    expected = list(torch.empty(stored, device="meta").transpose(-3, -2).stride())
    if all(n == 1 or int(a) == b for n, a, b in zip(shape, strides, expected)):
        return "heads_transposed"
    return None


def has_gaps(val):
    """Whether the framework stores the tensor with gaps between its elements (a column slice
    of a fused projection: rows further apart than a row's size), so a kernel reading dense
    storage is handed a copy: the graph JSON's value "dense": false. Only where every size and
    stride is static (a symbolic one is never guarded on)."""
    if val is None or static_shape(val) is None or \
            any(isinstance(s, torch.SymInt) and not s.node.expr.is_number for s in val.stride()):
        return False
    expected = 1
    dims = sorted((int(s), int(n)) for n, s in zip(val.shape, val.stride()) if int(n) != 1)
    for stride, size in dims:
        if stride != expected:
            return True
        expected *= size
    return False


def storage_view(x, layout):
    """The tensor as stored in `layout`: a dense view where it is laid out so (the memory a
    kernel reads or writes)."""
    return x.transpose(-3, -2) if layout == "heads_transposed" else x
