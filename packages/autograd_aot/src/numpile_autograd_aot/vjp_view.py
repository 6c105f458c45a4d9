"""VJP rules of the views: reshape, transpose, broadcast_to, real/imag, basic indexing, diagonal.

A view's cotangent undoes the view (`reshape`, `transpose`) or is scattered
back into zeros of the input's shape.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("transpose")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from numpile_capture import IndexArray, Node, get_op
from numpile_capture.ops.scatter import index_scatter, view_scatter

from .vjp_table import VjpContext, register_vjp

# --- views ---------------------------------------------------------------------------------------


@register_vjp(get_op("reshape"), get_op("squeeze"), get_op("expand_dims"))
def _reshape_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("reshape", ctx.cotangent, shape=ctx.input_meta(0).shape)]


@register_vjp(get_op("transpose"))
def _transpose_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    ndim = ctx.input_meta(0).ndim
    axes = ctx.params.get("axes")
    perm = tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)
    return [ctx.call("transpose", ctx.cotangent, axes=tuple(int(i) for i in np.argsort(perm)))]


@register_vjp(get_op("broadcast_to"), get_op("real"), get_op("alias"))
def _broadcast_to_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # `fit_cotangent` sums the broadcast dims away (and makes a real cotangent complex).
    return [ctx.cotangent]


@register_vjp(get_op("imag"))
def _imag_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("multiply", ctx.cotangent, -1j)]


@register_vjp(get_op("getitem"), get_op("element"))
def _getitem_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    views = (("getitem", (("index", ctx.params["index"]),)),)
    return [ctx.graph.call(view_scatter, ctx.input_zeros(0), ctx.cotangent, views=views)]


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
