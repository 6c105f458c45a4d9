"""VJP rules of the reductions and scans.

Reductions broadcast the cotangent back over the reduced axes; `max`/`min`
split it evenly among tied elements (as JAX does); scans run the reversed scan
of the cotangent.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("sum")) is not None
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from numpile_capture import ArrayMeta, Node, get_op

from .vjp_table import VjpContext, register_vjp


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
