"""The ranges a `for` loop kept as a loop iterates: `RangeVar` and its iterator.

`range(n)` with a bound that is a symbolic size, an unspecialized int input or a run-time
int stays a `RangeVar` (its bounds unspecialized); GET_ITER on it, on a constant range,
on an array or on a `zip` / `enumerate` of arrays gives a `RangeIterVar`, which FOR_ITER
keeps as one loop (see `loop_capture`) or unrolls (`unrolled`).

    >>> RangeVar((ConstantVar(0), ConstantVar(3), ConstantVar(1))).describe()
    'range(0, 3, 1)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from numpile_guards.symbolic import SymInt, is_size_expr

from .bound_origins import size_var, size_vars, with_origins
from .capture_result import Unsupported
from .loop_sources import ZipVar, zip_length
from .operators import _check_unroll, iterate, size_value
from .variables import (
    ArrayVar,
    ConstantVar,
    IteratorVar,
    ScalarInputVar,
    ScalarNodeVar,
    Variable,
)

if TYPE_CHECKING:
    from .tracer import Tracer


@attrs.define(eq=False)
class RangeVar(Variable):
    """`range(start, stop, step)` whose bounds are not all plain ints (symbolic sizes,
    unspecialized or run-time ints). Used as a constant, it specializes its bounds.

        >>> RangeVar((ConstantVar(0), ConstantVar(3), ConstantVar(1))).as_python_constant()
        range(0, 3)
    """

    bounds: tuple[Variable, Variable, Variable]

    def as_python_constant(self) -> Any:
        values = [_specialized_int(bound) for bound in self.bounds]
        return range(*values)

    def python_type(self) -> type:
        return range

    def describe(self) -> str:
        return "range(" + ", ".join(bound.describe() for bound in self.bounds) + ")"


@attrs.define(eq=False)
class RangeIterVar(Variable):
    """The iterator a `for` over a range, or over an array's first axis (`over`), starts
    with (GET_ITER right before FOR_ITER).

    It lives only between the two instructions: FOR_ITER keeps the loop, or replaces it
    by an `IteratorVar` of the items and unrolls.
    """

    bounds: tuple[Variable, Variable, Variable]
    over: ArrayVar | ZipVar | None = None

    def describe(self) -> str:
        return "range iterator"


def _hint(var: Variable) -> int | None:
    # A bound's value now, read without a guard (None: a form this does not read).
    if isinstance(var, ScalarInputVar):
        return int(var.current) if type(var.current) is int else None
    if isinstance(var, ConstantVar):
        value = var.value
        if isinstance(value, SymInt):
            return value.hint
        return value if type(value) is int else None
    return None


def _static(var: Variable) -> bool:
    # A bound known now whatever the inputs: a plain int constant.
    return isinstance(var, ConstantVar) and type(var.value) is int


def _specialized_int(var: Variable) -> int:
    value = var.as_python_constant()
    if isinstance(value, SymInt):
        return int(value)
    return int(value) if is_size_expr(value) else value


def pinned(iterator: RangeIterVar) -> RangeIterVar:
    """`iterator` with the bounds known at capture time (symbolic sizes, unspecialized int
    inputs) read as ints, guarded: the loops a transform differentiates with
    `pin_trip_counts` (a loop VJP that needs the trip count at capture time; a new trip
    count compiles again). Bounds computed at run time stay as they are.

        >>> pinned(RangeIterVar((ConstantVar(0), ConstantVar(3), ConstantVar(1)))).bounds[1].value
        3
    """
    bounds = tuple(
        bound if isinstance(bound, ScalarNodeVar) else ConstantVar(_specialized_int(bound))
        for bound in iterator.bounds
    )
    return RangeIterVar((bounds[0], bounds[1], bounds[2]), iterator.over)


def make_range(args: list[Variable]) -> Variable | None:
    """`range(*args)` kept unspecialized when a bound is symbolic or a run-time int, else None.

    >>> make_range([ConstantVar(3)]) is None
    True
    """
    if not 1 <= len(args) <= 3 or not any(_is_open_bound(arg) for arg in args):
        return None
    if not all(_is_open_bound(arg) or _is_int_constant(arg) for arg in args):
        return None
    bounds: tuple[Variable, Variable, Variable]
    if len(args) == 1:
        bounds = (ConstantVar(0), args[0], ConstantVar(1))
    elif len(args) == 2:
        bounds = (args[0], args[1], ConstantVar(1))
    else:
        bounds = (args[0], args[1], args[2])
    return RangeVar(bounds)


def _is_open_bound(var: Variable) -> bool:
    if isinstance(var, ScalarNodeVar):
        return var.python_type() is int
    if isinstance(var, ScalarInputVar):
        return type(var.current) is int
    return isinstance(var, ConstantVar) and isinstance(var.value, SymInt)


def _is_int_constant(var: Variable) -> bool:
    return isinstance(var, ConstantVar) and type(var.value) is int


def range_iterator(tracer: Tracer, iterable: Variable) -> RangeIterVar | None:
    """The iterator to start a `for` over `iterable` with, when it is a range or an array."""
    if isinstance(iterable, ArrayVar) and iterable.meta.ndim > 0:
        rows = iterable.meta.shape[0]
        if not isinstance(rows, int) and not is_size_expr(rows):
            return None
        try:
            count = size_value(rows)
        except Unsupported:
            return None  # a data-dependent length (x[x > 0]): iterated as before
        node = iterable.node
        builder = tracer.builder
        (stop,) = size_vars(
            (count,),
            lambda: builder.array_inputs_of(node),
            lambda: builder.created_origins_of(node),
        )
        return RangeIterVar((ConstantVar(0), stop, ConstantVar(1)), iterable)
    if isinstance(iterable, ZipVar):
        length = zip_length(iterable)
        if length is None:
            return None
        try:
            count = size_value(length) if is_size_expr(length) else length
        except Unsupported:
            return None
        # The length is a static size of the zipped arrays: tagged with it as a loop over
        # one array's rows is, so a new trip count does not capture again.
        return RangeIterVar((ConstantVar(0), size_var(count), ConstantVar(1)), iterable)
    if isinstance(iterable, RangeVar):
        return RangeIterVar(iterable.bounds)
    if isinstance(iterable, ConstantVar) and isinstance(iterable.value, range):
        value = iterable.value
        start, stop, step = (
            with_origins(ConstantVar(b), iterable) for b in (value.start, value.stop, value.step)
        )
        return RangeIterVar((start, stop, step))
    return None


def unrolled(tracer: Tracer, iterator: RangeIterVar, *, pin: bool = True) -> IteratorVar:
    """The items of the range, for a loop that is unrolled (its bounds specialized).

    A loop too long to unroll, or with `pin=False` (its body breaks the graph anyway) one
    whose trip count is not static (a symbolic size, an unspecialized int), raises
    `Unsupported` with nothing guarded, so the graph break at its head serves every trip
    count: its body then compiles once, as resume functions whose index is a run-time
    input (a symbolic bound is read from the inputs' sizes at call time, see graph_breaks).
    """
    if iterator.over is not None:
        rows = zip_length(iterator.over)
        if not pin and rows is not None and not isinstance(rows, int):
            raise Unsupported(f"not supported yet: unrolling a loop over {rows} rows (symbolic)")
        return IteratorVar(iterate(tracer, iterator.over))
    hints = [_hint(bound) for bound in iterator.bounds]
    known = [hint for hint in hints if hint is not None]
    if len(known) == len(hints):
        _check_unroll(len(range(*known)))
        if not pin and not all(_static(bound) for bound in iterator.bounds):
            count = len(range(*known))
            raise Unsupported(
                f"not supported yet: unrolling a loop of a symbolic trip count ({count} now)"
            )
    values = [_specialized_int(bound) for bound in iterator.bounds]
    items = range(*values)
    _check_unroll(len(items))
    return IteratorVar([ConstantVar(item) for item in items])
