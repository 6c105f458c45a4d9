"""VJP rules of the joins: concatenate, tile, repeat, roll.

The cotangent of a join is cut back into the pieces (or summed over the
repetitions) it was made of; a roll's is rolled back.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("concatenate")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from numpile_capture import IndexArray, Node, get_op
from numpile_capture.ops.scatter import index_add

from .vjp_table import VjpContext, register_vjp

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


@register_vjp(get_op("roll"))
def _roll_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # out[i] = x[i - s]: the cotangent of x[j] is g[j + s], a roll by -s.
    shift = tuple(-s for s in ctx.params["shift"])
    return [ctx.call("roll", ctx.cotangent, shift=shift, axis=ctx.params["axis"])]


@register_vjp(get_op("tile"))
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


@register_vjp(get_op("repeat"))
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
