"""Stores into a loop body's input arrays as kernels: `B[1:-1, 1:-1] = expr`, `pos += dt * v`.

A body compiled for the host loop keeps its mutation ops as barriers (extern calls into
NumPy). A body run from a C loop (`loop_kernels`) needs them as kernels: `setitem` with a
basic index of constants becomes a copy kernel over the view, and an in-place binary ufunc
(`add_`, `subtract_`, ...) a pointwise kernel reading and writing the target. The
scheduler then fuses the copy into the kernel computing the value, so the value is stored
straight into the view. The op's result names its target from then on (the rename map).

Only what gives NumPy's result exactly is rewritten: the target is an input array of
static shape, the value has the target's dtype (or is a number the target's dtype holds),
and its shape broadcasts to the view's; anything else stays an extern (the caller then
keeps the host loop). Whether a fused kernel reads its target at other elements than it
writes is `loop_kernels`' check, after fusion.

    >>> steps, renamed = stores_as_kernels(program)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ...index import loop_var
from ...loop_ir import (
    Apply,
    BufferRef,
    Constant,
    Expr,
    ExternCall,
    Kernel,
    Load,
    ReductionStore,
    ScalarArg,
    Store,
)
from ...lowering import Program


def stores_as_kernels(program: Program) -> tuple[list[Kernel | ExternCall], dict[str, str]]:
    """The program's steps with its stores into inputs as kernels, and the rename map
    (the buffer of each rewritten op's result -> the input it wrote).

    Later steps read the renamed buffers under their inputs' names.
    """
    renamed: dict[str, str] = {}
    steps: list[Kernel | ExternCall] = []
    for step in program.steps:
        step = _renamed(step, renamed)
        if isinstance(step, ExternCall):
            kernel = _store_kernel(program, step, len(steps))
            if kernel is not None:
                target = step.args[0]
                assert isinstance(target, BufferRef)
                renamed[step.buffer] = target.name
                steps.append(kernel)
                continue
        steps.append(step)
    return steps, renamed


def _store_kernel(program: Program, step: ExternCall, position: int) -> Kernel | None:
    if not step.args or not isinstance(step.args[0], BufferRef):
        return None
    target = program.buffers[step.args[0].name]
    if target.kind != "input" or not all(isinstance(d, int) for d in target.shape):
        return None
    name = f"kernel_store{position}"
    origins = (step.node_name,)
    if step.op_name == "setitem" and len(step.args) == 2:
        kwargs = dict(step.kwargs)
        if set(kwargs) != {"index"}:
            return None
        view = _basic_view(kwargs["index"], target.shape)
        if view is None:
            return None
        index, shape = view
        value = _operand(program, step.args[1], target.dtype, shape, exact=False)
        if value is None:
            return None
        return Kernel(name, shape, (), (Store(target.name, index, value),), origins)
    base = step.op_name.removesuffix("_")
    ufunc = getattr(np, base, None)
    if (
        base == step.op_name
        or not isinstance(ufunc, np.ufunc)
        or ufunc.nin != 2
        or ufunc.nout != 1
        or len(step.args) != 2
        or step.kwargs
    ):
        return None
    shape = tuple(int(d) for d in target.shape)
    operand = _operand(program, step.args[1], target.dtype, shape, exact=True)
    if operand is None or not _same_loop(ufunc, target.dtype):
        return None
    index = tuple(loop_var(d) for d in range(len(shape)))
    own = Load(target.name, index, target.dtype)
    value = Apply(base, (own, operand), target.dtype)
    return Kernel(name, shape, (), (Store(target.name, index, value),), origins)


def _same_loop(ufunc: np.ufunc, dtype: np.dtype[Any]) -> bool:
    # Whether the ufunc on two `dtype` operands computes in `dtype` and gives `dtype`.
    try:
        loop = ufunc.resolve_dtypes((dtype, dtype, None))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return False
    return all(d == dtype for d in loop) and dtype.kind in "iuf"


def _operand(
    program: Program, value: Any, dtype: np.dtype[Any], shape: tuple[int, ...], *, exact: bool
) -> Expr | None:
    # The value stored (or combined) at each element of a view of `shape`, in `dtype`.
    # `exact`: an in-place ufunc (a number must be one NumPy's weak scalars give exactly).
    if isinstance(value, BufferRef):
        buf = program.buffers[value.name]
        if buf.dtype != dtype:
            return None
        if buf.kind == "scalar":
            return ScalarArg(buf.name, dtype)
        if buf.kind not in ("input", "kernel", "extern"):
            return None
        index = _broadcast_index(buf.shape, shape)
        return None if index is None else Load(buf.name, index, dtype)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if dtype.kind == "f" or (
        dtype.kind in "iu" and isinstance(value, int) and _holds(dtype, value)
    ):
        if exact and dtype.kind == "f" and isinstance(value, int) and abs(value) > 2**24:
            return None
        return Constant(value, dtype)
    return None


def _holds(dtype: np.dtype[Any], value: int) -> bool:
    info = np.iinfo(dtype)
    return bool(info.min <= value <= info.max)


def _broadcast_index(source: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...] | None:
    # The index into an array of shape `source` broadcast to `shape` (NumPy's rules).
    if len(source) > len(shape) or not all(isinstance(d, int) for d in source):
        return None
    lead = len(shape) - len(source)
    index = []
    for d, size in enumerate(source):
        if size == shape[lead + d]:
            index.append(loop_var(lead + d))
        elif size == 1:
            index.append(sympy.Integer(0))
        else:
            return None
    return tuple(index)


def _basic_view(
    index: Any, shape: tuple[int, ...]
) -> tuple[tuple[Any, ...], tuple[int, ...]] | None:
    # For a basic index of ints and slices (and one Ellipsis) into an array of static
    # `shape`: the element of the array at each view position and the view's shape.
    items = index if isinstance(index, tuple) else (index,)
    if sum(item is Ellipsis for item in items) > 1:
        return None
    if any(not (item is Ellipsis or isinstance(item, slice | int)) for item in items):
        return None
    if any(isinstance(item, bool) for item in items):
        return None
    explicit = sum(item is not Ellipsis for item in items)
    if explicit > len(shape):
        return None
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = (slice(None),) * (len(shape) - explicit)
        items = (*items[:at], *fill, *items[at + 1 :])
    items = (*items, *(slice(None),) * (len(shape) - len(items)))
    element: list[Any] = []
    view: list[int] = []
    for item, size in zip(items, shape, strict=True):
        if isinstance(item, int):
            position = item + size if item < 0 else item
            if not 0 <= position < size:
                return None  # NumPy's IndexError: the extern raises it
            element.append(sympy.Integer(position))
            continue
        start, _, step = item.indices(size)
        length = len(range(*item.indices(size)))
        element.append(start + step * loop_var(len(view)))
        view.append(length)
    return tuple(element), tuple(view)


def loads_of_target(step: Kernel, target: str) -> list[Any]:
    """The indices at which `step` reads buffer `target`.

    >>> loads_of_target(kernel, "a")  # doctest: +SKIP
    [(x0, x1)]
    """
    found: list[Any] = []
    for store in step.stores:
        value = store.value
        _collect(value, target, found)
    return found


def _collect(expr: Expr, target: str, found: list[Any]) -> None:
    if isinstance(expr, Load):
        if expr.buffer == target:
            found.append(expr.index)
    elif isinstance(expr, Apply):
        for arg in expr.args:
            _collect(arg, target, found)


def _renamed(step: Kernel | ExternCall, renamed: dict[str, str]) -> Kernel | ExternCall:
    # `step` reading each renamed buffer under its new name.
    if not renamed:
        return step
    if isinstance(step, ExternCall):
        args = tuple(
            BufferRef(renamed.get(arg.name, arg.name)) if isinstance(arg, BufferRef) else arg
            for arg in step.args
        )
        return ExternCall(
            step.buffer,
            step.op_name,
            step.impl,
            args,
            step.kwargs,
            step.is_barrier,
            step.node_name,
        )
    stores: list[Store | ReductionStore] = []
    for store in step.stores:
        value = _rename_expr(store.value, renamed)
        if isinstance(store, Store):
            stores.append(Store(store.buffer, store.index, value))
        else:
            stores.append(
                ReductionStore(
                    store.buffer,
                    store.index,
                    store.reduction_type,
                    value,
                    store.dtype,
                    store.divisor,
                )
            )
    return Kernel(step.name, step.ranges, step.reduction_ranges, tuple(stores), step.origins)


def _rename_expr(expr: Expr, renamed: dict[str, str]) -> Expr:
    if isinstance(expr, Load) and expr.buffer in renamed:
        return Load(renamed[expr.buffer], expr.index, expr.dtype)
    if isinstance(expr, Apply):
        return Apply(expr.fn, tuple(_rename_expr(arg, renamed) for arg in expr.args), expr.dtype)
    return expr
