"""VJP rules of the structural ops: reductions, scans, views, indexing, linear algebra, joins.

Reductions broadcast the cotangent back over the reduced axes; `max`/`min`
split it evenly among tied elements (as JAX does); views scatter it back
into zeros or undo the view (`reshape`, `transpose`); linear algebra uses
the classic matrix identities, without conjugation (see `vjp` for the
complex convention).

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp import get_vjp
    >>> get_vjp(get_op("einsum")) is not None
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, IndexArray, Node, Op, get_op

from .scatter import index_add, index_scatter, view_scatter
from .vjp import VjpContext, register_vjp


def _optional_ops(*names: str) -> list[Op]:
    # Ops that the capture layer may not define yet.
    found = []
    for name in names:
        try:
            found.append(get_op(name))
        except KeyError:
            continue
    return found


def _axes(meta: ArrayMeta, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(meta.ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % meta.ndim for a in items)


def _broadcast_back(ctx: VjpContext, value: Node, *, keep: bool | None = None) -> Node:
    # A reduction's result (or cotangent) broadcast back to the reduced input's shape.
    x = ctx.input_meta(0)
    axes = _axes(x, ctx.params.get("axis"))
    keepdims = ctx.params.get("keepdims", False) if keep is None else keep
    if axes and not keepdims:
        value = ctx.call("expand_dims", value, axis=axes)
    return ctx.call("broadcast_to", value, shape=x.shape)


def _count(ctx: VjpContext) -> int:
    x = ctx.input_meta(0)
    return math.prod(x.shape[a] for a in _axes(x, ctx.params.get("axis")))


def _mean_keepdims(ctx: VjpContext, op_name: str) -> Node:
    axes = _axes(ctx.input_meta(0), ctx.params.get("axis"))
    return ctx.call(op_name, ctx.inputs[0], axis=axes, keepdims=True)


def _not_nan(ctx: VjpContext) -> Node:
    return ctx.call("logical_not", ctx.call("isnan", ctx.inputs[0]))


# --- reductions ------------------------------------------------------------------------------


@register_vjp(get_op("sum"))
def _sum_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [_broadcast_back(ctx, ctx.cotangent)]


@register_vjp(get_op("nansum"))
def _nansum_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("where", _not_nan(ctx), _broadcast_back(ctx, ctx.cotangent), 0)]


@register_vjp(get_op("mean"))
def _mean_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("divide", _broadcast_back(ctx, ctx.cotangent), _count(ctx))]


@register_vjp(get_op("nanmean"))
def _nanmean_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    mask = _not_nan(ctx)
    axes = _axes(ctx.input_meta(0), ctx.params.get("axis"))
    count = ctx.call("sum", mask, axis=axes, keepdims=True)
    share = ctx.call("divide", _broadcast_back(ctx, ctx.cotangent), count)
    return [ctx.call("where", mask, share, 0)]


@register_vjp(get_op("prod"), get_op("nanprod"))
def _prod_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # NOTE: divides by x, so an exact zero in x gives nan (as HIPS autograd does).
    both = ctx.call("multiply", _broadcast_back(ctx, ctx.cotangent), _broadcast_back(ctx, ctx.node))
    grad = ctx.call("divide", both, ctx.inputs[0])
    if ctx.node.op is get_op("nanprod"):
        grad = ctx.call("where", _not_nan(ctx), grad, 0)
    return [grad]


@register_vjp(get_op("max"), get_op("min"), get_op("nanmax"), get_op("nanmin"))
def _extremum_reduction_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x = ctx.input_meta(0)
    hit = ctx.call("equal", ctx.inputs[0], _broadcast_back(ctx, ctx.node))
    mask = ctx.call("astype", hit, dtype=x.dtype)
    ties = ctx.call("sum", mask, axis=_axes(x, ctx.params.get("axis")), keepdims=True)
    share = ctx.call("divide", _broadcast_back(ctx, ctx.cotangent), ties)
    return [ctx.call("multiply", share, mask)]


def _centered(ctx: VjpContext) -> Node:
    nan_aware = ctx.node.op in (get_op("nanvar"), get_op("nanstd"))
    mean = _mean_keepdims(ctx, "nanmean" if nan_aware else "mean")
    centered = ctx.call("subtract", ctx.inputs[0], mean)
    if ctx.input_meta(0).dtype.kind == "c":
        centered = ctx.call("conjugate", centered)
    if nan_aware:
        centered = ctx.call("where", _not_nan(ctx), centered, 0)
    return centered


def _dof(ctx: VjpContext) -> Any:
    ddof = ctx.params.get("ddof", 0)
    if ctx.node.op in (get_op("nanvar"), get_op("nanstd")):
        axes = _axes(ctx.input_meta(0), ctx.params.get("axis"))
        count = ctx.call("sum", _not_nan(ctx), axis=axes, keepdims=True)
        return ctx.call("subtract", count, ddof)
    return _count(ctx) - ddof


@register_vjp(get_op("var"), get_op("nanvar"))
def _var_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    scale = ctx.call("divide", _broadcast_back(ctx, ctx.cotangent), _dof(ctx))
    return [ctx.call("multiply", ctx.call("multiply", scale, 2), _centered(ctx))]


@register_vjp(get_op("std"), get_op("nanstd"))
def _std_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    spread = ctx.call("multiply", _broadcast_back(ctx, ctx.node), _dof(ctx))
    scale = ctx.call("divide", _broadcast_back(ctx, ctx.cotangent), spread)
    return [ctx.call("multiply", scale, _centered(ctx))]


# --- scans -------------------------------------------------------------------------------------


def _reverse_cumsum(ctx: VjpContext, value: Node, axis: int) -> Node:
    meta = value.meta
    assert isinstance(meta, ArrayMeta)
    flip = (slice(None),) * axis + (slice(None, None, -1),)
    flipped = ctx.call("getitem", value, index=flip)
    return ctx.call("getitem", ctx.call("cumsum", flipped, axis=axis), index=flip)


def _scan_layout(ctx: VjpContext) -> tuple[Any, int]:
    # The input as the scan sees it (flattened when axis is None) and the scan axis.
    axis = ctx.params.get("axis")
    x = ctx.inputs[0]
    if axis is None:
        return ctx.call("reshape", x, shape=(-1,)), 0
    return x, axis % ctx.input_meta(0).ndim


@register_vjp(get_op("cumsum"), get_op("nancumsum"))
def _cumsum_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    _, axis = _scan_layout(ctx)
    grad = _reverse_cumsum(ctx, ctx.cotangent, axis)
    grad = ctx.call("reshape", grad, shape=ctx.input_meta(0).shape)
    if ctx.node.op is get_op("nancumsum"):
        grad = ctx.call("where", _not_nan(ctx), grad, 0)
    return [grad]


@register_vjp(get_op("cumprod"), get_op("nancumprod"))
def _cumprod_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # NOTE: divides by x, so an exact zero in x gives nan.
    flat, axis = _scan_layout(ctx)
    summed = _reverse_cumsum(ctx, ctx.call("multiply", ctx.cotangent, ctx.node), axis)
    grad = ctx.call("reshape", ctx.call("divide", summed, flat), shape=ctx.input_meta(0).shape)
    if ctx.node.op is get_op("nancumprod"):
        grad = ctx.call("where", _not_nan(ctx), grad, 0)
    return [grad]


# --- views and indexing ------------------------------------------------------------------------


@register_vjp(get_op("reshape"), get_op("squeeze"), get_op("expand_dims"))
def _reshape_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("reshape", ctx.cotangent, shape=ctx.input_meta(0).shape)]


@register_vjp(get_op("transpose"))
def _transpose_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    ndim = ctx.input_meta(0).ndim
    axes = ctx.params.get("axes")
    perm = tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)
    return [ctx.call("transpose", ctx.cotangent, axes=tuple(int(i) for i in np.argsort(perm)))]


@register_vjp(get_op("broadcast_to"), get_op("real"), *_optional_ops("alias"))
def _broadcast_to_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # `fit_cotangent` sums the broadcast dims away (and makes a real cotangent complex).
    return [ctx.cotangent]


@register_vjp(get_op("imag"))
def _imag_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("multiply", ctx.cotangent, -1j)]


def _zeros_of(ctx: VjpContext, position: int) -> Node:
    meta = ctx.input_meta(position)
    return ctx.call("zeros", shape=meta.shape, dtype=ctx.meta.dtype)


@register_vjp(get_op("getitem"), get_op("element"))
def _getitem_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    views = (("getitem", (("index", ctx.params["index"]),)),)
    return [ctx.graph.call(view_scatter, _zeros_of(ctx, 0), ctx.cotangent, views=views)]


@register_vjp(get_op("diagonal"))
def _diagonal_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # The diagonal view is read-only, so the cotangent goes in through an advanced index:
    # move axis1 and axis2 last, put the cotangent on their diagonal, move them back.
    x = ctx.input_meta(0)
    ndim = x.ndim
    offset = ctx.params.get("offset", 0)
    first = ctx.params.get("axis1", 0) % ndim
    second = ctx.params.get("axis2", 1) % ndim
    perm = [i for i in range(ndim) if i not in (first, second)] + [first, second]
    length = ctx.meta.shape[-1]
    rows = ctx.call("arange", start=max(0, -offset), stop=max(0, -offset) + length, step=1)
    cols = ctx.call("arange", start=max(0, offset), stop=max(0, offset) + length, step=1)
    zeros = ctx.call("zeros", shape=tuple(x.shape[i] for i in perm), dtype=ctx.meta.dtype)
    index = (slice(None),) * (ndim - 2) + (IndexArray(0), IndexArray(1))
    placed = ctx.graph.call(index_scatter, zeros, ctx.cotangent, rows, cols, index=index)
    back = tuple(int(i) for i in np.argsort(perm))
    return [ctx.call("transpose", placed, axes=back)]


@register_vjp(get_op("index"))
def _index_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    arrays = ctx.inputs[1:]
    grad = ctx.graph.call(index_add, _zeros_of(ctx, 0), ctx.cotangent, *arrays, **ctx.params)
    return [grad, *([None] * len(arrays))]


@register_vjp(view_scatter)
def _view_scatter_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    views = ctx.params["views"]
    g = ctx.cotangent
    base = ctx.graph.call(view_scatter, g, 0, views=views) if ctx.wants(0) else None
    value = None
    if ctx.wants(1):
        value = g
        for name, params in views:
            value = ctx.call(name, value, **dict(params))
    return [base, value]


@register_vjp(index_scatter, index_add)
def _index_scatter_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # NOTE: with repeated indices index_scatter keeps the last write; all copies get the cotangent.
    g = ctx.cotangent
    arrays = ctx.inputs[2:]
    params = dict(ctx.params)
    if params.get("nnz") is None:
        params["nnz"] = f"{ctx.node.name}_nnz"
    base: Node | None = g
    if ctx.node.op is index_scatter and ctx.wants(0):
        base = ctx.graph.call(index_scatter, g, 0, *arrays, **ctx.params)
    value = ctx.call("index", g, *arrays, **params) if ctx.wants(1) else None
    return [base, value, *([None] * len(arrays))]


# --- joins -------------------------------------------------------------------------------------


@register_vjp(get_op("concatenate"))
def _concatenate_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    axis = ctx.params.get("axis", 0)
    g = ctx.cotangent
    grads: list[Node | None] = []
    start = 0
    for position in range(len(ctx.inputs)):
        meta = ctx.input_meta(position)
        if axis is None:
            size = meta.numel
            piece = ctx.call("getitem", g, index=(slice(start, start + size),))
            piece = ctx.call("reshape", piece, shape=meta.shape)
        else:
            size = meta.shape[axis % meta.ndim]
            index = (slice(None),) * (axis % meta.ndim) + (slice(start, start + size),)
            piece = ctx.call("getitem", g, index=index)
        grads.append(piece if ctx.wants(position) else None)
        start += size
    return grads


@register_vjp(get_op("tril"), get_op("triu"))
def _triangle_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    assert ctx.node.op is not None
    return [ctx.call(ctx.node.op.name, ctx.cotangent, k=ctx.params.get("k", 0))]


@register_vjp(get_op("sort"))
def _sort_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # The cotangent goes back to where each sorted element came from (argsort, same kind).
    x = ctx.input_meta(0)
    axis = ctx.params.get("axis", -1)
    source = ctx.inputs[0]
    if axis is None:
        source = ctx.call("reshape", source, shape=(-1,))
        axis = 0
    order = ctx.call("argsort", source, axis=axis, stable=True)
    order_meta = order.meta
    assert isinstance(order_meta, ArrayMeta)
    shape = order_meta.shape
    arrays: list[Node] = []
    for dim, size in enumerate(shape):
        if dim == axis % len(shape):
            arrays.append(order)
            continue
        grid = ctx.call("arange", start=0, stop=size, step=1)
        grid_shape = tuple(size if i == dim else 1 for i in range(len(shape)))
        arrays.append(ctx.call("reshape", grid, shape=grid_shape))
    index = tuple(IndexArray(i) for i in range(len(shape)))
    zeros = ctx.call("zeros", shape=shape, dtype=ctx.meta.dtype)
    placed = ctx.graph.call(index_scatter, zeros, ctx.cotangent, *arrays, index=index)
    return [ctx.call("reshape", placed, shape=x.shape)]


@register_vjp(*_optional_ops("tile"))
def _tile_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # out[k * d + j] = x[j] per axis: view the cotangent as (reps, size) pairs and sum the reps.
    x = ctx.input_meta(0)
    reps = tuple(ctx.params["reps"])
    ndim = max(x.ndim, len(reps))
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    full_reps = (1,) * (ndim - len(reps)) + reps
    pairs = tuple(v for r, d in zip(full_reps, shape, strict=True) for v in (r, d))
    split = ctx.call("reshape", ctx.cotangent, shape=pairs)
    summed = ctx.call("sum", split, axis=tuple(range(0, 2 * ndim, 2)))
    return [ctx.call("reshape", summed, shape=x.shape)]


@register_vjp(*_optional_ops("repeat"))
def _repeat_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x = ctx.input_meta(0)
    repeats = ctx.params["repeats"]
    axis = ctx.params.get("axis")
    g = ctx.cotangent
    flat_shape = (x.numel,) if axis is None else tuple(x.shape)
    axis = 0 if axis is None else axis % x.ndim
    size = flat_shape[axis]
    if isinstance(repeats, tuple | list) and len(repeats) == 1:
        repeats = repeats[0]
    if isinstance(repeats, int | np.integer):
        # out[j * r + k] = x[j]: view the cotangent as (size, r) and sum over r
        split = (*flat_shape[:axis], size, int(repeats), *flat_shape[axis + 1 :])
        summed = ctx.call("sum", ctx.call("reshape", g, shape=split), axis=(axis + 1,))
        return [ctx.call("reshape", summed, shape=x.shape)]
    sources = tuple(int(i) for i in np.repeat(np.arange(size), repeats))
    positions = ctx.call("array", value=sources, dtype=np.dtype("int64"))
    zeros = ctx.call("zeros", shape=flat_shape, dtype=ctx.meta.dtype)
    index = (slice(None),) * axis + (IndexArray(0),)
    placed = ctx.graph.call(index_add, zeros, g, positions, index=index)
    return [ctx.call("reshape", placed, shape=x.shape)]
