"""Batching rules of the views and joins: shapes gain the batch, axes move to the right.

>>> from numpile_capture import get_op
>>> from numpile_autograd_aot.batching_table import get_batch_rule
>>> get_batch_rule(get_op("reshape")) is not None
True
"""

from __future__ import annotations

from numpile_capture import Node, get_op

from .batching_table import BatchContext, register_batch_rule


@register_batch_rule(get_op("reshape"))
def _reshape_batch(ctx: BatchContext) -> Node | None:
    return ctx.same(ctx.inputs[0], shape=(ctx.size, *ctx.params["shape"]))


@register_batch_rule(get_op("broadcast_to"))
def _broadcast_to_batch(ctx: BatchContext) -> Node | None:
    shape = tuple(ctx.params["shape"])
    padded = ctx.with_rank(0, len(shape))
    return ctx.same(padded, shape=(ctx.size, *shape))


@register_batch_rule(get_op("transpose"))
def _transpose_batch(ctx: BatchContext) -> Node | None:
    ndim = ctx.example_ndim(0)
    axes = ctx.params.get("axes")
    order = tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)
    return ctx.same(ctx.inputs[0], axes=(0, *(a + 1 for a in order)))


@register_batch_rule(get_op("expand_dims"))
def _expand_dims_batch(ctx: BatchContext) -> Node | None:
    rank = ctx.meta.ndim
    axis = ctx.params["axis"]
    axes = axis if isinstance(axis, tuple) else (axis,)
    return ctx.same(ctx.inputs[0], axis=tuple(a % rank + 1 for a in axes))


@register_batch_rule(get_op("squeeze"))
def _squeeze_batch(ctx: BatchContext) -> Node | None:
    value = ctx.node.inputs[0]
    assert isinstance(value, Node)
    shape = value.meta.shape  # type: ignore[union-attr]
    axis = ctx.params.get("axis")
    if axis is None:
        axes = tuple(i for i, dim in enumerate(shape) if dim == 1)
    else:
        axes = axis if isinstance(axis, tuple) else (axis,)
    return ctx.same(ctx.inputs[0], axis=tuple(a % len(shape) + 1 for a in axes))


@register_batch_rule(get_op("getitem"))
def _getitem_batch(ctx: BatchContext) -> Node | None:
    index = ctx.params["index"]
    index = index if isinstance(index, tuple) else (index,)
    if any(item is Ellipsis for item in index):
        return None
    return ctx.same(ctx.inputs[0], index=(slice(None), *index))


@register_batch_rule(get_op("alias"), get_op("real"), get_op("imag"))
def _unary_view_batch(ctx: BatchContext) -> Node | None:
    return ctx.same(ctx.inputs[0])


@register_batch_rule(get_op("concatenate"))
def _concatenate_batch(ctx: BatchContext) -> Node | None:
    axis = ctx.params.get("axis", 0)
    if axis is None:
        return None
    rank = ctx.meta.ndim
    inputs = [ctx.batched_input(i) for i in range(len(ctx.inputs))]
    return ctx.same(*inputs, axis=axis % rank + 1)
