"""Reductions in the loop IR: sum, prod, max, min, any, all (and mean, by a divisor).

A reduction node becomes a kernel whose outer loops run over the result's
shape (`x*`, keepdims positions included) and whose inner loops run over the
reduced sizes (`r*`). Its value is its input's loader, so pointwise producers
fuse into the reduction. Results are always realized.

Accumulation happens in the result dtype, as NumPy does. Float and complex
sums use blocked pairwise summation (8 accumulators, blocks of 128, a binary
cascade of block sums): bit-identical to NumPy for a reduced run of at most
128 contiguous elements or a power-of-two multiple of 128, and otherwise within
a few ulp times log2(n) of it. Sums over an outer axis (`sum(axis=0)` of a
row-major array) add whole rows in NumPy's order: bit-identical. max and min
compare in 8 lanes and propagate NaN through a separate lane of the NaNs seen:
exact values; only which of two equal zeros (-0.0 and 0.0) wins may differ
from NumPy's own SIMD lanes.

    >>> LOWERINGS["sum"]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node, contiguous_strides, k_order_axes

from ..codegen.common import kernel_dtype
from ..index import loop_var, stride_rank
from ..loop_ir import Load, ReductionStore
from .context import (
    CannotLower,
    Lowered,
    LoweringContext,
    cast,
    node_layout,
    out_shape,
    register_lowering,
)

_REDUCTION_TYPES = {
    "sum": "sum",
    "prod": "prod",
    "max": "max",
    "min": "min",
    "amax": "max",
    "amin": "min",
    "any": "any",
    "all": "all",
}


def reduction_axes(node: Node, ndim: int) -> tuple[int, ...]:
    """The reduced axes of a reduction node, sorted and non-negative.

    >>> reduction_axes(node, 3)  # doctest: +SKIP
    (0, 2)
    """
    axis = node.kwargs.get("axis")
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted({int(a) % ndim if ndim else 0 for a in axis}))


def reduction_order(
    shape: tuple[Any, ...], strides: tuple[Any, ...], axes: tuple[int, ...], *, keepdims: bool
) -> tuple[Any, ...]:
    """The loop variables of a reduction over `axes` of an array of `shape` and `strides`
    (the layout NumPy reduces), outermost first, in the order NumPy's iterator walks it
    (`k_order_axes`; axes of one element outermost, as NumPy coalesces them away). A
    reduced axis is `r<k>` (its rank among `axes`), a kept one `x<d>` (its result axis);
    with keepdims a reduced axis's size-1 `x<d>` goes just outside its `r<k>`.

    >>> reduction_order((5, 6), (1, 5), (1,), keepdims=False)  # Fortran order
    (r0, x0)
    >>> reduction_order((5, 6), (6, 1), (1,), keepdims=False)  # C order
    (x0, r0)
    """
    ndim = len(shape)
    ranks = [stride_rank(stride) for stride in strides]
    if any(rank is None for rank in ranks):
        order = tuple(range(ndim))
    else:
        row = tuple(
            0 if size == 1 else int(rank or 0) for size, rank in zip(shape, ranks, strict=True)
        )
        order = k_order_axes([row], ndim)
    order = tuple(a for a in order if shape[a] == 1) + tuple(a for a in order if shape[a] != 1)
    kept = [d for d in range(ndim) if d not in axes]
    result: list[Any] = []
    for d in order:
        if d in axes:
            if keepdims:
                result.append(loop_var(d))
            result.append(loop_var(axes.index(d), "r"))
        else:
            result.append(loop_var(d if keepdims else kept.index(d)))
    return tuple(result)


def reduce_value(
    ctx: LoweringContext,
    value: Lowered,
    *,
    axes: tuple[int, ...],
    keepdims: bool,
    reduction_type: str,
    dtype: np.dtype[Any],
    name: str,
    divisor: float | None = None,
    layout: tuple[Any, ...] | None = None,
    source: ArrayMeta | None = None,
) -> Lowered:
    """A realized reduction of `value` over `axes`, accumulated in `dtype`, into a buffer
    laid out by `layout` (dense strides; None: C order). `source` is the array NumPy
    reduces (its layout fixes the order of the additions, `reduction_order`; None: a
    C-ordered one).

    >>> reduce_value(ctx, v, axes=(1,), keepdims=False, reduction_type="sum",
    ...              dtype=np.dtype("float64"), name="v3")  # doctest: +SKIP
    """
    loader = value.loader
    if loader is None or not kernel_dtype(dtype):
        raise CannotLower("reduction input")
    in_shape = value.shape
    kept = [d for d in range(len(in_shape)) if d not in axes]
    if keepdims:
        shape = tuple(1 if d in axes else size for d, size in enumerate(in_shape))
    else:
        shape = tuple(in_shape[d] for d in kept)
    reduction_ranges = tuple(in_shape[d] for d in axes)
    if reduction_type in ("max", "min") and 0 in reduction_ranges:
        raise CannotLower("max/min of an empty axis raises in NumPy")
    xs = tuple(loop_var(d) for d in range(len(shape)))
    rs = tuple(loop_var(k, "r") for k in range(len(axes)))
    index: list[Any] = []
    for d in range(len(in_shape)):
        if d in axes:
            index.append(rs[axes.index(d)])
        elif keepdims:
            index.append(xs[d])
        else:
            index.append(xs[kept.index(d)])
    element = loader(tuple(index))
    if reduction_type in ("any", "all"):
        element = cast(element, np.dtype("bool"))
    elif element.dtype.kind == "c" and dtype.kind != "c":
        raise CannotLower("complex reduced into a real dtype")
    else:
        element = cast(element, dtype)
    buffer = ctx.new_buffer(name, shape, dtype, "kernel", layout=layout)
    strides = contiguous_strides(in_shape)
    if source is not None and source.strides is not None and len(source.strides) == len(in_shape):
        strides = tuple(source.strides)
    order = reduction_order(in_shape, strides, axes, keepdims=keepdims)
    store = ReductionStore(buffer, xs, reduction_type, element, dtype, divisor, order)
    ctx.add_kernel(shape, reduction_ranges, (store,), (name,))
    result = Lowered(shape, dtype, lambda idx: Load(buffer, idx, dtype), buffer=buffer)
    result.pure_view = True
    return result


def reduced_meta(node: Node) -> ArrayMeta | None:
    # The meta of the array a reduction node reduces (its layout is NumPy's).
    meta = node.inputs[0].meta if node.inputs and isinstance(node.inputs[0], Node) else None
    return meta if isinstance(meta, ArrayMeta) else None


def reduction_input(ctx: LoweringContext, node: Node) -> Lowered:
    if len(node.inputs) != 1 or not isinstance(node.inputs[0], Node):
        raise CannotLower("reduction of a non-array")
    extra = {k: v for k, v in node.params if k not in ("axis", "keepdims", "dtype", "ddof")}
    if extra:
        raise CannotLower(f"reduction params {sorted(extra)}")
    return ctx.values[node.inputs[0]]


@register_lowering(*_REDUCTION_TYPES)
def _lower_reduction(ctx: LoweringContext, node: Node) -> Lowered:
    assert node.op is not None and isinstance(node.meta, ArrayMeta)
    value = reduction_input(ctx, node)
    dtype = node.meta.dtype
    if node.op.name in ("max", "min", "amax", "amin") and dtype.kind == "c":
        raise CannotLower("complex max/min order")
    if node.op.name == "prod" and dtype.kind == "c":
        raise CannotLower("complex product")
    lowered = reduce_value(
        ctx,
        value,
        axes=reduction_axes(node, len(value.shape)),
        keepdims=bool(node.kwargs.get("keepdims", False)),
        reduction_type=_REDUCTION_TYPES[node.op.name],
        dtype=dtype,
        name=node.name,
        layout=node_layout(node, out_shape(node)),
        source=reduced_meta(node),
    )
    if lowered.shape != out_shape(node):
        raise CannotLower("reduction shape")
    return lowered
