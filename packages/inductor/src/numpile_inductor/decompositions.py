"""Decompositions: ops lowered as compositions of the core loop-IR operations.

Each entry rewrites one op into core pointwise operations and reductions
(sum, max, min, ...), keeping NumPy 2's dtypes and operation order:

| op | becomes |
| --- | --- |
| mean | sum in the result dtype, divided by the count (in float64, then cast) |
| var | mean (keepdims), subtract, multiply by itself, sum, divide by max(n - ddof, 0) |
| std | sqrt(var) |
| clip | minimum(maximum(x, low), high), NaN-propagating like np.clip |

    >>> sorted(DECOMPOSITIONS)
    ['clip', 'mean', 'std', 'var']
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node

from .loop_ir import Apply, Expr
from .lowering import (
    CannotLower,
    Lowered,
    LoweringContext,
    LoweringFn,
    cast,
    input_cost,
    operand_loader,
    out_shape,
    register_lowering,
)
from .reductions import reduce_value, reduction_axes, reduction_input


def _mean_dtype(node: Node, value: Lowered) -> np.dtype[Any]:
    assert isinstance(node.meta, ArrayMeta)
    dtype = node.meta.dtype
    if dtype.kind != "f" or value.dtype.kind == "c" or node.kwargs.get("dtype") is not None:
        raise CannotLower("mean/var of this dtype")
    return dtype


def _static_count(value: Lowered, axes: tuple[int, ...]) -> int:
    # The number of reduced elements; a symbolic count runs the op as an extern call.
    count = math.prod(value.shape[d] for d in axes)
    if not isinstance(count, int):
        raise CannotLower("mean/var over a symbolic size")
    return count


def _lower_mean(ctx: LoweringContext, node: Node) -> Lowered:
    value = reduction_input(ctx, node)
    dtype = _mean_dtype(node, value)
    axes = reduction_axes(node, len(value.shape))
    count = _static_count(value, axes)
    return reduce_value(
        ctx,
        value,
        axes=axes,
        keepdims=bool(node.kwargs.get("keepdims", False)),
        reduction_type="sum",
        dtype=dtype,
        name=node.name,
        divisor=count,
    )


def _lower_var(ctx: LoweringContext, node: Node, *, root: bool = False) -> Lowered:
    value = reduction_input(ctx, node)
    dtype = _mean_dtype(node, value)
    axes = reduction_axes(node, len(value.shape))
    count = _static_count(value, axes)
    ddof = node.kwargs.get("ddof", 0)
    mean = reduce_value(
        ctx,
        value,
        axes=axes,
        keepdims=True,
        reduction_type="sum",
        dtype=dtype,
        name=f"{node.name}_mean",
        divisor=count,
    )
    assert value.loader is not None and mean.loader is not None
    source, mean_loader = value.loader, mean.loader
    mean_index = [d in axes for d in range(len(value.shape))]

    def deviation_squared(idx: tuple[Any, ...]) -> Expr:
        at_mean = tuple(0 if reduced else i for i, reduced in zip(idx, mean_index, strict=True))
        dev = Apply("subtract", (cast(source(idx), dtype), mean_loader(at_mean)), dtype)
        return Apply("multiply", (dev, dev), dtype)

    squares = Lowered(value.shape, dtype, deviation_squared, value.ops + 2)
    divisor = max(count - ddof, 0)
    result = reduce_value(
        ctx,
        squares,
        axes=axes,
        keepdims=bool(node.kwargs.get("keepdims", False)),
        reduction_type="sum",
        dtype=dtype,
        name=f"{node.name}_var" if root else node.name,
        divisor=divisor,
    )
    if not root:
        return result
    assert result.loader is not None
    var_loader = result.loader

    def load(idx: tuple[Any, ...]) -> Expr:
        return Apply("sqrt", (var_loader(idx),), dtype)

    return Lowered(result.shape, dtype, load, 1, heavy=True)


def _lower_std(ctx: LoweringContext, node: Node) -> Lowered:
    return _lower_var(ctx, node, root=True)


def _lower_clip(ctx: LoweringContext, node: Node) -> Lowered:
    if len(node.inputs) != 3 or node.params:
        raise CannotLower("clip takes three operands here")
    assert isinstance(node.meta, ArrayMeta)
    dtype = node.meta.dtype
    if dtype.kind not in "biuf":
        raise CannotLower("clip of this dtype")
    shape = out_shape(node)
    x = operand_loader(ctx, node.inputs[0], shape)[0]
    sides = []
    for name, bound in (("maximum", node.inputs[1]), ("minimum", node.inputs[2])):
        if bound is not None:
            sides.append((name, operand_loader(ctx, bound, shape)[0]))

    def load(idx: tuple[Any, ...]) -> Expr:
        result = cast(x(idx), dtype)
        for name, bound_loader in sides:
            result = Apply(name, (result, cast(bound_loader(idx), dtype)), dtype)
        return result

    ops, heavy = input_cost(ctx, node)
    return Lowered(shape, dtype, load, ops + len(sides), heavy=heavy)


# NOTE: the decomposition table, as data; registered into the lowering table below.
DECOMPOSITIONS: dict[str, LoweringFn] = {
    "clip": _lower_clip,
    "mean": _lower_mean,
    "std": _lower_std,
    "var": _lower_var,
}

for _name, _fn in DECOMPOSITIONS.items():
    register_lowering(_name)(_fn)
