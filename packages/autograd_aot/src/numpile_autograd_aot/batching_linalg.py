"""Batching rule of `matmul`: NumPy's matmul already broadcasts over leading dims.

1-D operands become matrices first (a row on the left, a column on the
right) and the extra axis is dropped after; batched operands get their
example dims padded to a common rank so the batch axis lines up, and
unbatched operands broadcast against it. Other linalg ops take the fallback.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.batching_table import get_batch_rule
    >>> get_batch_rule(get_op("matmul")) is not None
    True
"""

from __future__ import annotations

from typing import Any

from numpile_capture import Node, get_op

from .batching_table import BatchContext, register_batch_rule


@register_batch_rule(get_op("matmul"))
def _matmul_batch(ctx: BatchContext) -> Node | None:
    if len(ctx.inputs) != 2 or ctx.params:
        return None
    operands: list[Any] = list(ctx.inputs)
    ranks = [ctx.example_ndim(0), ctx.example_ndim(1)]
    if 0 in ranks:
        return None
    if ranks[0] == 1:
        operands[0] = _expand(ctx, 0, operands[0], -2)
        ranks[0] = 2
    if ranks[1] == 1:
        operands[1] = _expand(ctx, 1, operands[1], -1)
        ranks[1] = 2
    special = _outer_product(ctx, operands, ranks) or _one_gemm(ctx, operands, ranks)
    if special is not None:
        return _dropped(ctx, special)
    rank = max(ranks)
    for position in range(2):
        missing = rank - ranks[position]
        if ctx.batched[position] and missing > 0:
            operands[position] = ctx.call(
                "expand_dims", operands[position], axis=tuple(range(1, 1 + missing))
            )
    return _dropped(ctx, ctx.graph.call(get_op("matmul"), *operands))


def _outer_product(ctx: BatchContext, operands: list[Any], ranks: list[int]) -> Node | None:
    # A contraction over one element is a product: pointwise, so the inductor fuses it
    # (per-example weight gradients are such outer products).
    if max(ranks) != 2:
        return None
    contracted = operands[0].meta.shape[-1]
    if contracted != 1:
        return None
    return ctx.call("multiply", operands[0], operands[1])


def _one_gemm(ctx: BatchContext, operands: list[Any], ranks: list[int]) -> Node | None:
    # A batched left operand times an unbatched matrix: the batch folds into the rows, one
    # matrix product instead of one per example.
    if not ctx.batched[0] or ctx.batched[1] or ranks != [2, 2]:
        return None
    left = operands[0]
    shape = left.meta.shape  # (batch, m, k)
    rows = ctx.call("reshape", left, shape=(shape[0] * shape[1], shape[2]))
    product = ctx.graph.call(get_op("matmul"), rows, operands[1])
    columns = product.meta.shape[-1]  # type: ignore[union-attr]
    return ctx.call("reshape", product, shape=(shape[0], shape[1], columns))


def _dropped(ctx: BatchContext, result: Node) -> Node:
    drop = []
    if ctx.example_ndim(0) == 1:
        drop.append(-2)
    if ctx.example_ndim(1) == 1:
        drop.append(-1)
    if drop:
        ndim = result.meta.ndim  # type: ignore[union-attr]
        result = ctx.call("squeeze", result, axis=tuple(sorted(d % ndim for d in drop)))
    return result


def _expand(ctx: BatchContext, position: int, value: Any, axis: int) -> Node:
    # A 1-D operand as a matrix: with the batch first, the new axis counts from the end.
    return ctx.call("expand_dims", value, axis=(axis % (2 + int(ctx.batched[position])),))
