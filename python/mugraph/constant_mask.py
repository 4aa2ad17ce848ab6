"""Causal masks that a model computes in the graph from no input, read as SDPA's is_causal.

transformers builds its causal mask from arange, comparisons, `where` and `expand` (with the
packed-sequence checks on positions that are themselves an arange when no positions are given),
and hands SDPA that float mask rather than is_causal. Added as a tensor, the mask is read from
memory and the blocks above the diagonal are computed for nothing. When none of the mask's
ancestors is a graph input (or an op with hidden state: random, uninitialized memory), its
value is the same on every call: it is evaluated once here, at translate time, over just those
nodes, and where its values are the causal pattern (0 where kept, -inf or at most the dtype's
lowest value where masked, or a boolean mask true where kept; the same in every slice of its
leading dims) the attention is written exactly as is_causal=True. The diagonal of SDPA's
is_causal is aligned top-left, the IR's causal_mask bottom-right: they agree for square
scores, the only case recognized. Anything else leaves the mask as it is.
"""
import contextlib

import torch

# A mask (and every value it is computed from) with more elements is left as a tensor: its
# evaluation would cost more than translating the graph.
MAX_ELEMENTS = 1 << 26


def _hidden_state(node):
    """An op whose result is not a function of its arguments (random, uninitialized)."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return True
    if torch.Tag.nondeterministic_seeded in target.tags or node.is_impure():
        return True
    name = target.overloadpacket.__name__
    return "empty" in name or "rand" in name


def _size_ok(node):
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        try:
            return int(val.numel()) <= MAX_ELEMENTS
        except (TypeError, ValueError):  # a symbolic size
            return False
    return True


def constant_ancestry(node):
    """The nodes `node` is computed from (itself included), in graph order; None where one of
    them is a graph input, or an op with hidden state or too large a value."""
    members, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in members:
            continue
        if n.op == "get_attr":
            members.add(n)
            continue
        if n.op != "call_function" or _hidden_state(n) or not _size_ok(n):
            return None
        members.add(n)
        stack.extend(n.all_input_nodes)
    return [n for n in node.graph.nodes if n in members]


def evaluate(node, ancestry):
    """The value of `node`, running its ancestry (constant_ancestry) eagerly."""
    module = node.graph.owning_module
    env = {}
    for n in ancestry:
        if n.op == "get_attr":
            value = module
            for part in n.target.split("."):
                value = getattr(value, part)
            env[n] = value
            continue
        args = torch.fx.node.map_arg(n.args, lambda a: env[a])
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: env[a])
        env[n] = n.target(*args, **kwargs)
    return env[node]


def is_causal_pattern(mask, rows, cols):
    """Whether `mask` ([.., rows, cols], broadcast over its leading dims) is SDPA's is_causal
    for square scores: kept on and below the diagonal, masked above it."""
    if not isinstance(mask, torch.Tensor) or mask.dim() < 2 or rows != cols or rows < 2:
        return False
    if tuple(mask.shape[-2:]) != (rows, cols):
        return False
    slices = mask.reshape(-1, rows, cols)
    keep = torch.ones(rows, cols, dtype=torch.bool, device=mask.device).tril()
    if mask.dtype == torch.bool:
        return bool((slices == keep).all())
    if not mask.is_floating_point():
        return False
    lowest = torch.finfo(mask.dtype).min
    # Comparisons over the whole slice (no boolean indexing: its size depends on the data).
    return bool(((slices == 0) | ~keep).all()) and bool(((slices <= lowest) | keep).all())


def is_constant_causal_mask(node, rows, cols):
    """Whether the FX node is a mask computed from no input whose values are the causal
    pattern for `rows` queries over `cols` keys."""
    ancestry = constant_ancestry(node)
    if ancestry is None:
        return False
    # Dynamo calls the backend with fake tensors active: the mask is computed on real ones.
    with _real_tensors(), torch.no_grad():
        try:
            return is_causal_pattern(evaluate(node, ancestry), rows, cols)
        except Exception:  # an op that cannot run here (a device, a kernel): the mask stays
            return False


def _real_tensors():
    unset = getattr(torch._subclasses.fake_tensor, "unset_fake_temporarily", None)
    return unset() if unset is not None else contextlib.nullcontext()
