"""Decompositions: ops lowered as compositions of the core loop-IR operations.

Each entry rewrites one op into core pointwise operations and reductions
(sum, max, min, ...), keeping NumPy 2's dtypes and operation order:

| op | becomes |
| --- | --- |
| mean | sum in the result dtype, divided by the count (in float64, then cast) |
| var | mean (keepdims), subtract, multiply by itself, sum, divide by max(n - ddof, 0) |
| std | sqrt(var) |
| clip | minimum(maximum(x, low), high), NaN-propagating like np.clip |
| matmul, dot | of two float vectors: sum(multiply(a, b)), a fused reduction |

Other products stay extern steps (BLAS called from the C, `codegen/c/blas.py`).

A count known only at run time (dynamic shapes) is a second reduction in the
same loop, the sum of ones; var then takes ddof 0 or 1 only.

    >>> sorted(DECOMPOSITIONS)
    ['clip', 'dot', 'matmul', 'mean', 'std', 'var']
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node

from ..loop_ir import Apply, Constant, Expr
from . import reduction
from .context import (
    CannotLower,
    Lowered,
    LoweringContext,
    LoweringFn,
    as_dim,
    cast,
    input_cost,
    operand_loader,
    out_shape,
    register_lowering,
)


def _mean_dtype(node: Node, value: Lowered) -> np.dtype[Any]:
    assert isinstance(node.meta, ArrayMeta)
    dtype = node.meta.dtype
    if dtype.kind != "f" or value.dtype.kind == "c" or node.kwargs.get("dtype") is not None:
        raise CannotLower("mean/var of this dtype")
    return dtype


def _averaged(
    ctx: LoweringContext,
    value: Lowered,
    axes: tuple[int, ...],
    *,
    keepdims: bool,
    dtype: np.dtype[Any],
    name: str,
    ddof: Any = 0,
    source: ArrayMeta | None = None,
) -> Lowered:
    # sum(value) / max(n - ddof, 0) over `axes`, divided in float64 then cast (NumPy's
    # true_divide of the sum by the count; for float32 the double rounding is exact). A
    # count known only at run time is a second reduction in the same loop: the sum of
    # ones, exact in float64 (sizes 0 and 1 are never symbolic, so n - 1 >= 1).
    count = math.prod(value.shape[d] for d in axes)
    static = isinstance(count, int)
    if not static and ddof not in (0, 1):
        raise CannotLower("var with ddof other than 0 or 1 over a symbolic size")
    total = reduction.reduce_value(
        ctx,
        value,
        axes=axes,
        keepdims=keepdims,
        reduction_type="sum",
        dtype=dtype,
        # A symbolic count leaves `name` for the quotient, where it is stored.
        name=name if static else f"{name}_sum",
        divisor=max(count - ddof, 0) if static else None,
        source=source,
    )
    if static:
        return total
    ones = Lowered(value.shape, _F64, lambda idx: Constant(1.0, _F64))
    counted = reduction.reduce_value(
        ctx,
        ones,
        axes=axes,
        keepdims=keepdims,
        reduction_type="sum",
        dtype=_F64,
        name=f"{name}_count",
        source=source,
    )
    assert total.loader is not None and counted.loader is not None
    total_loader, count_loader = total.loader, counted.loader

    def load(idx: tuple[Any, ...]) -> Expr:
        n = count_loader(idx)
        if ddof:
            n = Apply("subtract", (n, Constant(float(ddof), _F64)), _F64)
        return cast(Apply("divide", (cast(total_loader(idx), _F64), n), _F64), dtype)

    return Lowered(total.shape, dtype, load, 2, heavy=True)


_F64 = np.dtype("float64")


def _lower_mean(ctx: LoweringContext, node: Node) -> Lowered:
    value = reduction.reduction_input(ctx, node)
    dtype = _mean_dtype(node, value)
    axes = reduction.reduction_axes(node, len(value.shape))
    keepdims = bool(node.kwargs.get("keepdims", False))
    source = reduction.reduced_meta(node)
    return _averaged(
        ctx, value, axes, keepdims=keepdims, dtype=dtype, name=node.name, source=source
    )


def _lower_var(ctx: LoweringContext, node: Node, *, root: bool = False) -> Lowered:
    value = reduction.reduction_input(ctx, node)
    dtype = _mean_dtype(node, value)
    axes = reduction.reduction_axes(node, len(value.shape))
    reduced = reduction.reduced_meta(node)
    mean = _averaged(
        ctx, value, axes, keepdims=True, dtype=dtype, name=f"{node.name}_mean", source=reduced
    )
    assert value.loader is not None and mean.loader is not None
    source, mean_loader = value.loader, mean.loader
    mean_index = [d in axes for d in range(len(value.shape))]

    def deviation_squared(idx: tuple[Any, ...]) -> Expr:
        at_mean = tuple(0 if reduced else i for i, reduced in zip(idx, mean_index, strict=True))
        dev = Apply("subtract", (cast(source(idx), dtype), mean_loader(at_mean)), dtype)
        return Apply("multiply", (dev, dev), dtype)

    squares = Lowered(value.shape, dtype, deviation_squared, value.ops + 2)
    result = _averaged(
        ctx,
        squares,
        axes,
        keepdims=bool(node.kwargs.get("keepdims", False)),
        dtype=dtype,
        name=f"{node.name}_var" if root else node.name,
        ddof=node.kwargs.get("ddof", 0),
        source=reduced,
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


_VECTOR_DOT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _lower_vector_dot(ctx: LoweringContext, node: Node) -> Lowered:
    # `x @ y` of two float vectors: a sum of products in the result dtype. NumPy's BLAS
    # dot sums in another order: results agree within rounding, not bit for bit.
    if len(node.inputs) != 2 or node.params or node.kwargs:
        raise CannotLower("a product with options")
    a, b = node.inputs
    assert isinstance(node.meta, ArrayMeta)
    dtype = node.meta.dtype
    metas = [x.meta if isinstance(x, Node) else None for x in (a, b)]
    if dtype not in _VECTOR_DOT_DTYPES or not all(
        isinstance(meta, ArrayMeta) and len(meta.shape) == 1 and meta.dtype == dtype
        for meta in metas
    ):
        raise CannotLower("not a dot product of two float vectors of the result dtype")
    first = metas[0]
    assert isinstance(first, ArrayMeta)
    shape = (as_dim(first.shape[0]),)
    left = operand_loader(ctx, a, shape)[0]
    right = operand_loader(ctx, b, shape)[0]
    ops, heavy = input_cost(ctx, node)

    def products(idx: tuple[Any, ...]) -> Expr:
        return Apply("multiply", (cast(left(idx), dtype), cast(right(idx), dtype)), dtype)

    value = Lowered(shape, dtype, products, ops + 1, heavy=heavy)
    return reduction.reduce_value(
        ctx, value, axes=(0,), keepdims=False, reduction_type="sum", dtype=dtype, name=node.name
    )


# NOTE: the decomposition table, as data; registered into the lowering table below.
DECOMPOSITIONS: dict[str, LoweringFn] = {
    "clip": _lower_clip,
    "dot": _lower_vector_dot,
    "matmul": _lower_vector_dot,
    "mean": _lower_mean,
    "std": _lower_std,
    "var": _lower_var,
}

for _name, _fn in DECOMPOSITIONS.items():
    register_lowering(_name)(_fn)
