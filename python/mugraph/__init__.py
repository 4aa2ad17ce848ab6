"""mugraph for PyTorch: `torch.compile(model, backend="mugraph")`, or `mugraph.compile`.

The backend partitions each aten graph with mugraph's C++ partitioner, superoptimizes every
subgraph (or reads it from the cache), checks the variants against PyTorch on real values and
runs the ones that match as custom ops; everything else stays in PyTorch (backend.py).
"""
from .backend import compile, mugraph_backend  # noqa: F401

__all__ = ["compile", "mugraph_backend"]
