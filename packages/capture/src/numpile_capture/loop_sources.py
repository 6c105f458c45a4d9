"""`enumerate(...)` and `zip(...)` over arrays' first axes, kept lazy so a loop stays a loop.

`for i, row in enumerate(A):` and `for a, b in zip(x, y):` iterate arrays row by row.
Called inside captured code, `enumerate` and `zip` of arrays (or of each other) give a
`ZipVar` that holds its sources instead of the rows: a `for` over it is kept as one
`for_loop` node whose body receives, per index, the tuple eager Python builds (the index
plus `start`, the rows `A[i]`). Any other use (`list(zip(x, y))`, a loop that is not kept)
iterates the rows now, as before.

    >>> ZipVar((), start=0).describe()
    'enumerate()'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from numpile_guards.symbolic import is_size_expr

from .variables import ArrayVar, ConstantVar, ScalarNodeVar, TupleVar, Variable

if TYPE_CHECKING:
    from .tracer import Tracer


@attrs.define(eq=False)
class ZipVar(Variable):
    """`enumerate(source, start)` (`start` an int) or `zip(*sources)` (`start` None) whose
    sources are arrays (their first axis) or other `ZipVar`s, not iterated yet."""

    sources: tuple[Variable, ...]
    start: int | None = None
    strict: bool = False

    def python_type(self) -> type:
        return zip if self.start is None else enumerate

    def describe(self) -> str:
        name = "zip" if self.start is None else "enumerate"
        return f"{name}(" + ", ".join(source.describe() for source in self.sources) + ")"


def keepable(var: Variable) -> bool:
    """Whether `var` can be a source of a kept `enumerate` / `zip`: an array with a first
    axis, or another such `ZipVar`."""
    if isinstance(var, ZipVar):
        return True
    return isinstance(var, ArrayVar) and var.meta.ndim > 0


def zip_length(var: Variable) -> Any:
    """The number of items of a kept source (an int or a size expression), or None when
    its sources' lengths differ in a way only the run time knows."""
    if isinstance(var, ArrayVar):
        rows = var.meta.shape[0]
        return rows if isinstance(rows, int) or is_size_expr(rows) else None
    assert isinstance(var, ZipVar)
    lengths = [zip_length(source) for source in var.sources]
    if not lengths or any(length is None for length in lengths):
        return None
    if all(length == lengths[0] for length in lengths):
        return lengths[0]
    if var.strict or not all(isinstance(length, int) for length in lengths):
        return None  # a strict zip raises at run time, a symbolic min needs a guard: iterate
    return min(lengths)


def item_at(tracer: Tracer, var: Variable, index: ScalarNodeVar) -> Variable:
    """The item `var` gives at `index` (a run-time int): a row, or the tuple of a zip."""
    # Late import: operators imports this module (iterate).
    from .operators import getitem

    if isinstance(var, ArrayVar):
        return getitem(tracer, var, index)
    assert isinstance(var, ZipVar)
    items = tuple(item_at(tracer, source, index) for source in var.sources)
    if var.start is None:
        return TupleVar(items)
    counter: Variable = index
    if var.start != 0:
        # Late import: ops register their rules on import.
        from .op import get_op

        node = tracer.graph.call(get_op("py_binary"), index.node, var.start, operator="add")
        expr = None if index.expr is None else index.expr + var.start
        counter = ScalarNodeVar(node, expr)
    return TupleVar((counter, *items))


def materialize(tracer: Tracer, var: ZipVar) -> list[Variable]:
    """The items of `var`, all known now (a use other than a kept loop)."""
    # Late import: operators imports this module (iterate).
    from .operators import iterate

    columns = [iterate(tracer, source) for source in var.sources]
    if var.start is not None:
        (items,) = columns
        return [TupleVar((ConstantVar(var.start + i), item)) for i, item in enumerate(items)]
    if var.strict and len({len(column) for column in columns}) > 1:
        raise ValueError("zip() arguments have different lengths")
    return [TupleVar(tuple(row)) for row in zip(*columns, strict=False)]
