"""Batching rules of the reductions and scans: their axes move one to the right.

A reduction over all axes (`axis=None`) reduces every example axis; a scan
without an axis (which flattens) flattens each example.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.batching_table import get_batch_rule
    >>> get_batch_rule(get_op("var")) is not None
    True
"""

from __future__ import annotations

from typing import Any

from numpile_capture import Node, OpKind, all_ops

from .batching_table import BatchContext, register_batch_rule


def _shifted(axis: Any, ndim: int) -> Any:
    # An axis (int or tuple) of one example as the axis of the batch.
    if isinstance(axis, tuple):
        return tuple(a % ndim + 1 if ndim else a + 1 for a in axis)
    return axis % ndim + 1 if ndim else axis + 1


@register_batch_rule(*(op for op in all_ops() if op.kind is OpKind.REDUCTION))
def _reduction_batch(ctx: BatchContext) -> Node | None:
    if len(ctx.inputs) != 1:
        return None  # weights or other array inputs: the fallback
    ndim = ctx.example_ndim(0)
    axis = ctx.params.get("axis")
    if axis is None:
        if ndim == 0:
            return ctx.same(ctx.inputs[0], axis=())
        return ctx.same(ctx.inputs[0], axis=tuple(range(1, ndim + 1)))
    return ctx.same(ctx.inputs[0], axis=_shifted(axis, ndim))


@register_batch_rule(*(op for op in all_ops() if op.kind is OpKind.SCAN))
def _scan_batch(ctx: BatchContext) -> Node | None:
    if len(ctx.inputs) != 1:
        return None
    ndim = ctx.example_ndim(0)
    axis = ctx.params.get("axis")
    if axis is None:
        flat = ctx.call("reshape", ctx.inputs[0], shape=(ctx.size, -1))
        return ctx.same(flat, axis=1)
    return ctx.same(ctx.inputs[0], axis=_shifted(axis, ndim))
