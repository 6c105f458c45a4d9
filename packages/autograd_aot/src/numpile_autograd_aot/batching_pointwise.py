"""Batching rules of the pointwise ops: every op of kind POINTWISE, one rule.

A pointwise op broadcasts its inputs; batched inputs get their example dims
padded with 1s to the example result's rank, so the batch axis (first) lines
up across them and unbatched inputs broadcast as in one example.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.batching_table import get_batch_rule
    >>> get_batch_rule(get_op("where")) is not None
    True
"""

from __future__ import annotations

from numpile_capture import Node, OpKind, all_ops

from .batching_table import BatchContext, register_batch_rule


@register_batch_rule(*(op for op in all_ops() if op.kind is OpKind.POINTWISE))
def _pointwise_batch(ctx: BatchContext) -> Node | None:
    rank = ctx.meta.ndim
    inputs = [ctx.with_rank(i, rank) for i in range(len(ctx.inputs))]
    return ctx.same(*inputs)
