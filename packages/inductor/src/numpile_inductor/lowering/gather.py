"""Lowering of gathers: `x[idx]` with integer index arrays as a load whose index is read
from data, so the gather fuses into the kernel that consumes it (no `x[idx]` array).

An `index` node whose template holds integer index arrays side by side (broadcast
together, their dims where NumPy puts them) and full slices lowers to a loader: each index
array's element becomes a symbol of the loaded index, bound by an `Indirect` to the index
array's loader (`loop_ir.Indirect`; code generators wrap negative indices and check the
bounds, failing the call with NumPy's IndexError). Boolean masks, integers and `None` in
the template, advanced indices apart, unsigned 64-bit indices and gathered dims of symbolic
size stay extern NumPy calls.

    >>> "index" in LOWERINGS
    True
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import attrs

from numpile_capture import IndexArray, Node

from ..index import free_symbols, index_symbol, loop_var
from ..loop_ir import Apply, Expr, Indirect, Load
from .context import (
    LOWERINGS,
    CannotLower,
    Lowered,
    LoweringContext,
    out_shape,
    readable_source,
    register_lowering,
)

if TYPE_CHECKING:
    import sympy
else:
    from ..light_lowering import sympy  # imported on first use (see light_lowering)

__all__ = [
    "LOWERINGS",
    "AdvancedIndex",
    "bind_indirect",
    "gather_symbol",
    "index_array",
    "lower_index",
]

# Gather symbols are unique in the process: two gathers in one kernel never share one.
_SYMBOLS = itertools.count()


def gather_symbol() -> sympy.Symbol:
    """A fresh symbol for an index read from data (`Indirect.symbol`).

    >>> gather_symbol().is_nonnegative
    True
    """
    return index_symbol(f"ind{next(_SYMBOLS)}")


def bind_indirect(expr: Expr, bounds: tuple[Indirect, ...]) -> Expr:
    """`expr` with each load whose index (or whose gather indices' loads) mentions a symbol
    of `bounds` bound to it.

    >>> import numpy as np
    >>> s = sympy.Symbol("ind", integer=True, nonnegative=True)
    >>> i = Load("idx", (loop_var(0),), np.dtype("int64"))
    >>> print(bind_indirect(Load("x", (s,), np.dtype("float64")), (Indirect(s, i, 8),)))
    x[ind]{ind=idx[x0]}
    """
    if isinstance(expr, Load):
        inner = tuple(
            attrs.evolve(bound, value=bind_indirect(bound.value, bounds)) for bound in expr.indirect
        )
        free = set().union(*(free_symbols(i) for i in expr.index))
        added = tuple(bound for bound in bounds if bound.symbol in free)
        return attrs.evolve(expr, indirect=inner + added)
    if isinstance(expr, Apply):
        return attrs.evolve(expr, args=tuple(bind_indirect(arg, bounds) for arg in expr.args))
    return expr


def _bound_symbols(expr: Expr) -> set[Any]:
    if isinstance(expr, Load):
        found = {bound.symbol for bound in expr.indirect}
        for bound in expr.indirect:
            found |= _bound_symbols(bound.value)
        return found
    if isinstance(expr, Apply):
        return set().union(*(_bound_symbols(arg) for arg in expr.args))
    return set()


@attrs.frozen
class AdvancedIndex:
    """An index template of integer index arrays side by side and full slices, over an
    array of `len(template)` dims: which element of it an element of `x[index]` reads."""

    template: tuple[Any, ...]
    axes: tuple[int, ...]
    arrays: tuple[Lowered, ...]

    @classmethod
    def of(cls, template: tuple[Any, ...], ndim: int, arrays: list[Lowered]) -> AdvancedIndex:
        """The index `template` over `ndim` dims (raises `CannotLower` for what it is not)."""
        if len(template) > ndim:
            raise CannotLower("more indices than dims")
        template += (slice(None),) * (ndim - len(template))
        at = [axis for axis, item in enumerate(template) if isinstance(item, IndexArray)]
        if not at or at != list(range(at[0], at[-1] + 1)):
            raise CannotLower("no index arrays, or index arrays apart")
        if any(not isinstance(item, IndexArray) and item != slice(None) for item in template):
            raise CannotLower("an index with integers, None or partial slices")
        return cls(template, tuple(at), tuple(arrays))

    def element(
        self, idx: tuple[Any, ...], out_ndim: int, sizes: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], tuple[Indirect, ...]]:
        """The indexed array's index read by element `idx` of the result (`out_ndim` dims),
        and the bindings of its data-read symbols (`sizes`: the indexed array's dims)."""
        first = self.axes[0]
        width = out_ndim - (len(self.template) - len(self.axes))
        advanced = idx[first : first + width]
        basic = iter((*idx[:first], *idx[first + width :]))
        index: list[Any] = []
        bounds: list[Indirect] = []
        for axis, item in enumerate(self.template):
            if not isinstance(item, IndexArray):
                index.append(next(basic))
                continue
            array = self.arrays[item.position]
            lead = width - len(array.shape)
            element = tuple(
                0 if size == 1 else advanced[lead + d] for d, size in enumerate(array.shape)
            )
            assert array.loader is not None
            symbol = gather_symbol()
            index.append(symbol)
            bounds.append(Indirect(symbol, array.loader(element), sizes[axis], axis))
        return tuple(index), tuple(bounds)


def index_array(ctx: LoweringContext, value: Any) -> Lowered:
    """The lowered index array `value` (integer, at most 32-bit unsigned: an int64 in C
    holds every value), or `CannotLower` (also when `ctx` lowers no data-read indices)."""
    if not ctx.data_indices:
        raise CannotLower("indices read from data are extern calls for this code generator")
    if not isinstance(value, Node):
        raise CannotLower("an index that is no array")
    lowered = ctx.values[value]
    kind, size = lowered.dtype.kind, lowered.dtype.itemsize
    if lowered.loader is None or kind not in "iu" or (kind == "u" and size >= 8):
        raise CannotLower(f"an index array of dtype {lowered.dtype}")
    return lowered


@register_lowering("index")
def lower_index(ctx: LoweringContext, node: Node) -> Lowered:
    """`x[idx]` (integer index arrays, full slices) as a gathering loader.

    >>> lower_index(ctx, index_node).shape  # doctest: +SKIP
    (8000,)
    """
    if node.kwargs.get("nnz") is not None:
        raise CannotLower("a boolean mask (a data-dependent size)")
    source, loader = readable_source(ctx, node)
    ndim = len(source.shape)
    arrays = [index_array(ctx, value) for value in node.inputs[1:]]
    indexing = AdvancedIndex.of(tuple(node.kwargs["index"]), ndim, arrays)
    for axis in indexing.axes:
        if not isinstance(source.shape[axis], int):
            raise CannotLower("a gathered dim of symbolic size")
    shape = out_shape(node)

    def load(idx: tuple[Any, ...]) -> Expr:
        index, bounds = indexing.element(idx, len(shape), source.shape)
        return bind_indirect(loader(index), bounds)

    # Every index must be checked: a source whose value does not depend on the gathered
    # element (a broadcast, a constant) would lose the bounds check.
    probe = load(tuple(loop_var(d) for d in range(len(shape))))
    if len(_bound_symbols(probe)) < len(indexing.axes) + _nested_gathers(source):
        raise CannotLower("a gather whose source does not read the gathered element")
    ops = source.ops + sum(array.ops for array in arrays) + 1
    return Lowered(shape, source.dtype, load, ops, heavy=True)


def _nested_gathers(source: Lowered) -> int:
    # How many gather symbols the source's own loads bind (a gather of a gather).
    assert source.loader is not None
    idx = tuple(loop_var(d) for d in range(len(source.shape)))
    return len(_bound_symbols(source.loader(idx)))
