"""VJP rules of sorting.

A sort permutes its input, so the cotangent goes back to where each sorted
element came from (found with a stable `argsort`).

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("sort")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from numpile_capture import ArrayMeta, IndexArray, Node, get_op
from numpile_capture.ops.scatter import index_scatter

from .vjp_table import VjpContext, register_vjp

# --- sorting -------------------------------------------------------------------------------------


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
