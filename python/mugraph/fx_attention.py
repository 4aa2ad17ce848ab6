"""Attention in the FX front end: SDPA's aten overloads written as the ONNX nodes of its
definition (Q·Kᵀ, scale, mask, softmax, P·V), GQA's head repeats as transformers' repeat_kv,
and the read of SDPA's first result. A causal mask and sizes that are dynamic dims go where the
partitioner reads them as structure (fx_graph.py, fx_dims.py)."""
import math

import torch

from . import fx_dims
from .fx_values import ELEM_TYPES, Untranslatable, tensor_meta


def _arguments(n):
    """(q, k, v, mask, causal, scale, gqa) of any scaled_dot_product_*attention overload."""
    schema_args = n.target._schema.arguments
    bound = {a.name: a.default_value for a in schema_args if a.has_default_value()}
    for a, value in zip(schema_args, n.args):
        bound[a.name] = value
    bound.update(n.kwargs)
    mask = bound.get("attn_mask", bound.get("attn_bias"))
    if bound.get("dropout_p", 0.0) not in (0, 0.0):
        raise Untranslatable("dropout")
    if bound.get("return_debug_mask") or bound.get("compute_log_sumexp"):
        pass  # extra results stay unread (getitem 0 is the only one translated)
    return (bound["query"], bound["key"], bound["value"], mask, bool(bound.get("is_causal")),
            bound.get("scale"), bool(bound.get("enable_gqa")))


def sdpa(w, n):
    """Q·Kᵀ, the scale, the mask, the softmax and P·V as ONNX nodes. Their values are named
    attention<i> (the i-th attention of the graph), not after the aten overload, which differs
    between devices: the same model gives the same programs, and the same cache entries."""
    q, k, v, mask, causal, scale, _ = _arguments(n)
    prefix = w.attention_prefix(n)
    qv, kv, vv = tensor_meta(q), tensor_meta(k), tensor_meta(v)
    try:
        q_shape, k_shape, v_shape = (w.shape_of(x) for x in (qv, kv, vv))
        w.dims.unify(k_shape[-2], v_shape[-2])  # one key length, however the graph names it
    except fx_dims.NoDim as e:
        raise Untranslatable(str(e))
    if not all(isinstance(d, int) for d in q_shape[:-2] + k_shape[-3:-2] + v_shape[-3:-2]):
        raise Untranslatable("dynamic heads or batch")
    rows, cols, depth = q_shape[-2], k_shape[-2], q_shape[-1]
    if isinstance(mask, torch.fx.Node) and not causal and isinstance(rows, int) \
            and isinstance(cols, int) and w.constant_causal(mask, rows, cols):
        causal, mask = True, None  # transformers' own causal mask (constant_mask.py)
    if isinstance(mask, torch.fx.Node) and tensor_meta(mask).dtype == torch.bool:
        raise Untranslatable("a boolean mask")
    if causal and not (isinstance(rows, int) and isinstance(cols, int)):
        raise Untranslatable("is_causal over a dynamic length")
    heads, kv_heads = q_shape[-3], k_shape[-3]
    k_name, v_name = w.value_of(k), w.value_of(v)
    if heads != kv_heads:  # enable_gqa, or a kernel that takes the KV heads as they are
        if kv_heads < 1 or heads % kv_heads or v_shape[-3] != kv_heads:
            raise Untranslatable(f"{heads} query heads over {kv_heads} KV heads")
        k_name = _repeated_heads(w, n, k, f"{prefix}.k", heads // kv_heads)
        v_name = _repeated_heads(w, n, v, f"{prefix}.v", heads // kv_heads)
    scale = 1.0 / math.sqrt(depth) if scale is None else float(scale)
    elem = ELEM_TYPES[qv.dtype]
    batch = q_shape[:-2]
    kt = w.value(f"{prefix}.kt", elem, batch + [depth, cols])
    perm = list(range(len(batch))) + [len(batch) + 1, len(batch)]
    w.node(n.name, f"{prefix}.kt", "Transpose", [k_name], [kt], {"perm": perm})
    if heads == kv_heads:  # Kᵀ of the FX value itself, which the backend can make
        w.permuted[kt] = (k, perm)
    logits = w.value(f"{prefix}.qk", elem, batch + [rows, cols])
    w.node(n.name, f"{prefix}.qk", "MatMul", [w.value_of(q), kt], [logits])
    scaled = w.value(f"{prefix}.scaled", elem, batch + [rows, cols])
    w.node(n.name, f"{prefix}.scaled", "Mul",
           [logits, w.constant(f"{prefix}.scale", [scale], elem, [])], [scaled])
    if causal:
        if mask is not None:
            raise Untranslatable("both a mask and is_causal")
        mask_value = w.value(f"{prefix}.causal_mask", elem, [rows, cols])
        w.node(n.name, f"{prefix}.causal_mask", "CausalMask", [], [mask_value])
        w.causal_masks[mask_value] = (n, rows, cols, qv.dtype)
        mask = mask_value
    if mask is not None:
        masked = w.value(f"{prefix}.masked", elem, batch + [rows, cols])
        mask_name = mask if isinstance(mask, str) else w.value_of(mask)
        w.node(n.name, f"{prefix}.masked", "Add", [scaled, mask_name], [masked])
        scaled = masked
    probs = w.value(f"{prefix}.probs", elem, batch + [rows, cols])
    w.node(n.name, f"{prefix}.probs", "Softmax", [scaled], [probs], {"axis": -1})
    out = w.value(f"{prefix}.out", elem, batch + [rows, v_shape[-1]])
    w.node(n.name, f"{prefix}.out", "MatMul", [probs, v_name], [out])


def _repeated_heads(w, n, x, prefix, rep):
    """GQA's K or V heads repeated for the query heads (SDPA's enable_gqa, or a kernel that
    takes fewer KV heads), written as transformers' repeat_kv: Unsqueeze, Expand, Reshape. The
    partitioner reads such repeats as views of the KV buffer where the subgraph allows
    (onnx_import/repeated_heads.h); the values are named after the attention."""
    shape = w.shape_of(tensor_meta(x))
    elem = ELEM_TYPES[tensor_meta(x).dtype]
    lead, kv_heads, tail = shape[:-3], shape[-3], shape[-2:]
    # a target shape is numbers: a dynamic dim's is its reference extent, as its values' are
    ref = [w.dims.reference(d) for d in shape]
    ref_lead, ref_tail = ref[:-3], ref[-2:]
    unsqueezed = w.value(f"{prefix}_unsqueezed", elem, lead + [kv_heads, 1] + tail)
    w.node(n.name, unsqueezed, "Reshape",
           [w.value_of(x), w.constant(f"{unsqueezed}.shape", ref_lead + [kv_heads, 1] + ref_tail,
                                      "int64", [len(shape) + 1])], [unsqueezed])
    expanded = w.value(f"{prefix}_expanded", elem, lead + [kv_heads, rep] + tail)
    w.node(n.name, expanded, "Expand",
           [unsqueezed, w.constant(f"{expanded}.shape", ref_lead + [kv_heads, rep] + ref_tail,
                                   "int64", [len(shape) + 1])], [expanded])
    repeated = w.value(f"{prefix}_repeated", elem, lead + [kv_heads * rep] + tail)
    w.node(n.name, repeated, "Reshape",
           [expanded, w.constant(f"{repeated}.shape", ref_lead + [kv_heads * rep] + ref_tail,
                                 "int64", [len(shape)])], [repeated])
    # Where the partitioner cannot fold the repeat, a subgraph reads it from the Expand: the
    # backend makes it (the same memory as the merged repeat)
    w.repeated_heads[expanded] = w.repeated_heads[repeated] = (x, rep)
    return repeated


def getitem(w, n):
    source, index = n.args
    if isinstance(source, torch.fx.Node) and source.name in w.tuple_results:
        w.node(n.name, n.name, "Identity", [w.tuple_results[source.name][index]],
               [w.value_of(n)])
        return
    if (isinstance(source, torch.fx.Node) and "scaled_dot_product" in str(source.target)
            and index == 0 and source.name in w.attentions
            and f"{w.attentions[source.name]}.out" in w.described):
        w.node(n.name, n.name, "Identity", [f"{w.attentions[source.name]}.out"],
               [w.value_of(n)])
        return
    raise Untranslatable("reads an element of a tuple")
