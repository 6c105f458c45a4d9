"""Lowering: graph nodes become loop-IR values, kernels and extern calls, one module per
op family.

- `context`: `LoweringContext` (the walk over a graph), `Lowered`, `Program`, the table
  `LOWERINGS` and `register_lowering`, `lower_graph`;
- `pointwise`: ufuncs (the scalar-op vocabulary of `codegen.common`), `where`, `astype`;
- `view`: view ops as index arithmetic;
- `reduction`: sum, prod, max, min, any, all;
- `decompositions`: mean, var, std, clip as compositions of the above; float vector dot
  products as one sum reduction (`dot`, `matmul` of two vectors).

    >>> "sin" in LOWERINGS and "transpose" not in LOWERINGS
    True
    >>> sorted(DECOMPOSITIONS)
    ['clip', 'dot', 'matmul', 'mean', 'std', 'var']
"""

from __future__ import annotations

from .context import KIND_LOWERINGS as KIND_LOWERINGS
from .context import LOWERINGS as LOWERINGS
from .context import CannotLower as CannotLower
from .context import Lowered as Lowered
from .context import LoweringContext as LoweringContext
from .context import Program as Program
from .context import lower_graph as lower_graph
from .context import register_kind_lowering as register_kind_lowering
from .context import register_lowering as register_lowering
from .decompositions import DECOMPOSITIONS as DECOMPOSITIONS

__all__ = [
    "DECOMPOSITIONS",
    "KIND_LOWERINGS",
    "LOWERINGS",
    "CannotLower",
    "Lowered",
    "LoweringContext",
    "Program",
    "lower_graph",
    "register_kind_lowering",
    "register_lowering",
]
