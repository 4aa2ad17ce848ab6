"""aten ops that ONNX defines as functions of other ops (LayerNormalization, Gelu), written as
those single nodes: the C++ importer replaces each by its body (onnx_import/function_ops.h),
the one place their definitions live, so a LayerNorm fuses with the matmul after it as the
RMSNorm transformers writes out does."""
from . import fx_dims
from .fx_values import ELEM_TYPES, Untranslatable, tensor_meta


def layer_norm(w, n):
    """native_layer_norm(x, normalized_shape, weight, bias, eps) -> (y, mean, rstd): one
    LayerNormalization over the trailing dims; each result a value a getitem reads."""
    x, normalized_shape, weight, bias, eps = n.args[:5]
    results = n.meta.get("val")
    source = tensor_meta(x)
    if source is None or not isinstance(results, (tuple, list)) or len(results) != 3:
        raise Untranslatable("its results are not three tensors")
    if source.dtype != results[0].dtype:
        raise Untranslatable("normalizes into another dtype")
    names = []
    for suffix, val in zip(("out", "mean", "rstd"), results):
        try:
            shape = w.shape_of(val)
        except fx_dims.NoDim as e:
            raise Untranslatable(str(e))
        names.append(w.value(f"{n.name}.{suffix}", ELEM_TYPES.get(val.dtype, "not a tensor"),
                             shape))
    inputs = [w.value_of(x), w.value_of(weight) if weight is not None else "",
              w.value_of(bias) if bias is not None else ""]
    w.node(n.name, n.name, "LayerNormalization", inputs, names,
           {"axis": len(source.shape) - len(normalized_shape), "epsilon": float(eps)})
    w.tuple_results[n.name] = names


def gelu(w, n):
    approximate = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
    if approximate not in ("none", "tanh"):
        raise Untranslatable(f"approximate={approximate!r}")
    w.node(n.name, n.name, "Gelu", [w.value_of(n.args[0])], [w.value_of(n)],
           {"approximate": approximate})
