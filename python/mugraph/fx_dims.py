"""Symbolic sizes of an aten graph (torch.compile's dynamic shapes) as dynamic dims of the graph
JSON (onnx_import/README.md, "Graph JSON"; graph/dynamic_dims.h): one program, one search and
one PTX per variant serve every length, so a decode step over a growing KV cache recompiles
nothing.

Each distinct size expression (`s53`, `s53 + 1`) is one dim, named n0, n1, .. in order of first
meeting; sizes an op requires to be equal (an attention's key and value lengths) are one dim.
A dim's range is what the ShapeEnv knows of the expression, its top cut at `max_length`: the
backend guards the graph on that bound (guard_ranges), so a longer length recompiles instead
of reaching a kernel that was not verified for it.
"""
import math

import torch


class NoDim(Exception):
    """A size that cannot be a dim of the programs: the reason."""


class DimNames:
    def __init__(self, max_length):
        self.max_length = int(max_length)
        self._by_expr = {}  # str(expr) -> name
        self._parent = {}  # name -> the name it was unified with (union-find)
        self._range = {}  # root name -> [min, max]
        self._sizes = {}  # name -> the SymInts met for it

    def size(self, d):
        """A tensor size: an int where static, else the name of its dim."""
        if not isinstance(d, torch.SymInt):
            return int(d)
        expr = d.node.expr
        if expr.is_number:
            return int(expr)
        key = str(expr)
        if key not in self._by_expr:
            bounds = d.node.shape_env.bound_sympy(expr)
            low = _finite(bounds.lower)
            high = _finite(bounds.upper)
            low = max(1, low if low is not None else 1)
            high = self.max_length if high is None else min(high, self.max_length)
            hint = d.node.hint
            if hint is None or hint > high or low > high:
                raise NoDim(f"its length {key} = {hint} is past max_length {self.max_length}")
            name = f"n{len(self._by_expr)}"
            self._by_expr[key] = name
            self._parent[name] = name
            self._range[name] = [low, high]
        name = self._by_expr[key]
        self._sizes.setdefault(name, []).append(d)
        return name

    def reference(self, size):
        """The extent a size has in the programs: a dim's max (graph/dynamic_dims.h)."""
        return self._range[self.find(size)][1] if isinstance(size, str) else size

    def find(self, name):
        while self._parent[name] != name:
            name = self._parent[name]
        return name

    def unify(self, a, b):
        """Sizes an op requires to be equal: one dim, over the ranges' overlap."""
        if isinstance(a, str) != isinstance(b, str):
            raise NoDim(f"a static size ({a if isinstance(a, int) else b}) against a dynamic one")
        if not isinstance(a, str):
            if a != b:
                raise NoDim(f"sizes {a} and {b} differ")
            return
        a, b = self.find(a), self.find(b)
        if a == b:
            return
        low = max(self._range[a][0], self._range[b][0])
        high = min(self._range[a][1], self._range[b][1])
        if low > high:
            raise NoDim(f"{a} and {b} have no length in common")
        self._parent[b] = a
        self._range[a] = [low, high]

    def resolve(self, shape):
        return None if shape is None else [self.find(s) if isinstance(s, str) else s
                                           for s in shape]

    def declarations(self, used):
        """$.dims of the graph JSON: every dim a value's shape names."""
        return [{"name": n, "min": self._range[n][0], "max": self._range[n][1]}
                for n in sorted(used, key=lambda n: int(n[1:]))]

    def guard_ranges(self, used):
        """Guards the graph on each dim's range: evaluating `size <= max` as a bool records it in
        the ShapeEnv, which Dynamo turns into a guard, as Inductor's own size checks do. A
        length past it recompiles the graph (there the size is past max_length and the
        subgraphs reading it stay in PyTorch). Only the dims in `used` (those a subgraph's
        program has) are guarded: a length only PyTorch reads serves every value."""
        for name, sizes in self._sizes.items():
            if self.find(name) not in used:
                continue
            low, high = self._range[self.find(name)]
            for d in sizes:
                if not (bool(d <= high) and bool(d >= low)):
                    raise NoDim(f"{d} is outside [{low}, {high}]")


def _finite(bound):
    try:
        value = float(bound)
    except (TypeError, ValueError):
        return None
    return int(value) if math.isfinite(value) else None
