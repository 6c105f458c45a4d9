"""VJP rules of advanced indexing and of the scatters that functionalization emits.

The cotangent of `x[arrays]` adds into zeros of `x`'s shape at the indexed
places (repeated indices accumulate).

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("index")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from numpile_capture import Node, get_op
from numpile_capture.ops.scatter import index_accumulate, index_add, index_scatter, view_scatter

from .vjp_table import VjpContext, register_vjp

# --- indexing ------------------------------------------------------------------------------------


@register_vjp(get_op("index"))
def _index_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    arrays = ctx.inputs[1:]
    grad = ctx.graph.call(index_add, ctx.input_zeros(0), ctx.cotangent, *arrays, **ctx.params)
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


# NOTE: the sign of the value's cotangent for each `ufunc.at` with a rule (linear in both).
_LINEAR_AT = {"add": 1, "subtract": -1}


@register_vjp(index_accumulate)
def _index_accumulate_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # np.add.at / np.subtract.at: the base passes the cotangent through, the value gets the
    # gather of it at the indices (each repeated index gets its own copy).
    sign = _LINEAR_AT.get(ctx.params["ufunc"])
    if sign is None:
        raise NotImplementedError(
            f"no VJP rule for np.{ctx.params['ufunc']}.at: only add.at and subtract.at are linear"
        )
    g = ctx.cotangent
    arrays = ctx.inputs[2:]
    params = {key: value for key, value in ctx.params.items() if key != "ufunc"}
    if params.get("nnz") is None:
        params["nnz"] = f"{ctx.node.name}_nnz"
    value = ctx.call("index", g, *arrays, **params) if ctx.wants(1) else None
    if value is not None and sign < 0:
        value = ctx.call("negative", value)
    return [g if ctx.wants(0) else None, value, *([None] * len(arrays))]
