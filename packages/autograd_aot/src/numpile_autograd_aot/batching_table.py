"""The batching table: one rule per op that applies it to a batch of values at once.

`vmap` traces a function on one example and then rewrites that region of the
graph for the whole batch (`batch_nodes`): a value a batched input reaches
carries the batch as a new leading axis of static size. A rule takes a
`BatchContext` (the graph, the example's node, its new inputs and which of
them are batched) and returns the batched result, with the batch at axis 0.
An op without a rule takes the explicit fallback, `loop_batch_rule`: the op
once per example on slices, the results stacked — still nodes of the one
graph, never a Python loop at run time, but the batch is unrolled.

    >>> from numpile_capture import get_op
    >>> get_batch_rule(get_op("sin")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from numpile_capture import ArrayMeta, Graph, Node

from .rule_table import RuleContext, RuleTable

__all__ = [
    "BATCH_RULES",
    "BatchContext",
    "BatchRule",
    "batch_nodes",
    "batch_rule_ops",
    "get_batch_rule",
    "loop_batch_rule",
    "register_batch_rule",
]


@attrs.frozen(eq=False)
class BatchContext(RuleContext):
    """What a batching rule sees: the graph it adds nodes to, the example's node, the node's
    new inputs (a batched input has the batch at axis 0), `batched[i]` whether input `i` is,
    and the batch `size`. `meta` is the example's result metadata (without the batch axis).
    """

    inputs: tuple[Any, ...]
    batched: tuple[bool, ...]
    size: int

    def example_ndim(self, position: int) -> int:
        """The number of dims input `position` has in one example."""
        value = self.node.inputs[position]
        meta = value.meta if isinstance(value, Node) else None
        return meta.ndim if isinstance(meta, ArrayMeta) else 0

    def same(self, *inputs: Any, **params: Any) -> Node:
        """The node's own op on new inputs, its params updated by `params`."""
        assert self.node.op is not None
        return self.graph.call(self.node.op, *inputs, **{**self.params, **params})

    def with_rank(self, position: int, ndim: int) -> Any:
        """Input `position` with its example dims padded on the left with 1s to `ndim` (a
        batched input keeps the batch first), so it broadcasts as in one example."""
        value = self.inputs[position]
        missing = ndim - self.example_ndim(position)
        if not self.batched[position] or missing <= 0:
            return value
        return self.call("expand_dims", value, axis=tuple(range(1, 1 + missing)))

    def batched_input(self, position: int) -> Any:
        """Input `position` with the batch at axis 0 (an unbatched one broadcast to it)."""
        value = self.inputs[position]
        if self.batched[position]:
            return value
        meta = value.meta
        assert isinstance(meta, ArrayMeta)
        return self.call("broadcast_to", value, shape=(self.size, *meta.shape))


BatchRule = Callable[[BatchContext], Node | None]


def _load_rules() -> None:
    # Late import: the rule modules import this module to register themselves.
    from . import (  # noqa: F401
        batching_linalg,
        batching_pointwise,
        batching_reduction,
        batching_view,
    )


# NOTE: the table of batching rules. A rule may return None to take the fallback
# (`loop_batch_rule`) for a node it does not handle; an op without a rule always takes it.
BATCH_RULES: RuleTable[BatchRule] = RuleTable("batching", load=_load_rules)

register_batch_rule = BATCH_RULES.register
get_batch_rule = BATCH_RULES.get
batch_rule_ops = BATCH_RULES.ops


def loop_batch_rule(ctx: BatchContext) -> Node:
    """The fallback: the op once per example (batched inputs sliced at that example), the
    results stacked on a new axis 0.

    >>> loop_batch_rule(BatchContext(graph, node, inputs, (True,), 4))  # doctest: +SKIP
    """
    assert ctx.node.op is not None
    rows = []
    for example in range(ctx.size):
        inputs = [
            ctx.call("getitem", value, index=(example,)) if batched else value
            for value, batched in zip(ctx.inputs, ctx.batched, strict=True)
        ]
        result = ctx.graph.call(ctx.node.op, *inputs, **ctx.params)
        rows.append(ctx.call("expand_dims", result, axis=(0,)))
    if len(rows) == 1:
        return rows[0]
    return ctx.call("concatenate", *rows, axis=0)


def batch_nodes(
    graph: Graph, nodes: Sequence[Node], batched: dict[Node, Node], size: int
) -> tuple[dict[Node, Node], set[Node]]:
    """Append to `graph` the batched form of `nodes` (a region traced on one example, in
    topological order) given `batched`, the batched value (batch at axis 0) of each example
    input. Return the new value of each node (a node no batched input reaches is its own),
    and the set of nodes whose new value carries the batch axis.

        >>> values, carried = batch_nodes(graph, region, {example_x: x}, 8)  # doctest: +SKIP
    """
    values: dict[Node, Node] = dict(batched)
    carried: set[Node] = set(batched)
    for node in nodes:
        if node in values:
            continue
        flags = tuple(isinstance(v, Node) and v in carried for v in node.inputs)
        if not any(flags):
            values[node] = node
            continue
        assert node.op is not None
        inputs = tuple(values.get(v, v) if isinstance(v, Node) else v for v in node.inputs)
        context = BatchContext(graph, node, inputs, flags, size)
        rule = get_batch_rule(node.op)
        result = rule(context) if rule is not None else None
        values[node] = result if result is not None else loop_batch_rule(context)
        carried.add(node)
    return values, carried
