"""The JVP table: one forward-mode rule per op that builds a node's tangent as graph nodes.

A rule takes a `JvpContext` (the graph being built, the forward node, one
tangent per input: a `Node`, or None for a zero tangent) and returns the
tangent of the node's result, or None when it is zero. Rules may return a
tangent with a broadcast-compatible shape or another float dtype;
`fit_tangent` broadcasts and casts it to the result's metadata, so every rule
stays short.

An op without a rule here is not a gap: `transposed_vjp_jvp` derives its
tangent from its VJP rule (the VJP is linear in the cotangent, and the VJP
of that linear map is the JVP), so forward mode covers every op with a VJP
rule; the rules here are the faster, direct forms (no dead cotangent nodes).

    >>> from numpile_capture import get_op
    >>> get_jvp(get_op("sin")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node, get_op

from .joint import append_backward, input_cotangent
from .rule_table import RuleContext, RuleTable
from .vjp_table import VjpContext, differentiable, fit_cotangent, get_vjp, missing_rule_error

__all__ = [
    "JVP_RULES",
    "JvpContext",
    "JvpRule",
    "fit_tangent",
    "get_jvp",
    "jvp_ops",
    "register_function_jvp",
    "register_jvp",
    "transposed_vjp_jvp",
]


@attrs.frozen(eq=False)
class JvpContext(RuleContext):
    """What a JVP rule sees: the graph it adds tangent nodes to, the node, its input tangents.

    `tangents[i]` is the tangent of input `i`: a node shaped like that input, or None
    when it is zero (a constant, an integer input, a value no differentiated input reaches).
    """

    tangents: tuple[Node | None, ...]

    @property
    def inputs(self) -> tuple[Any, ...]:
        return self.node.inputs

    def tangent(self, position: int) -> Node | None:
        """The tangent of input `position` (None when zero)."""
        return self.tangents[position] if position < len(self.tangents) else None

    def same(self, *inputs: Any) -> Node:
        """The node's own op applied to other inputs, with the node's params (linear ops)."""
        assert self.node.op is not None
        return self.graph.call(self.node.op, *inputs, **self.params)

    def sum_of(self, terms: list[Node | None]) -> Node | None:
        """The sum of the tangent terms that are not None (None when all are)."""
        found = [term for term in terms if term is not None]
        if not found:
            return None
        total = found[0]
        for term in found[1:]:
            total = self.call("add", total, term)
        return total


JvpRule = Callable[[JvpContext], Node | None]


def _load_rules() -> None:
    # Late import: the rule modules import this module to register themselves.
    from . import jvp_linear, jvp_pointwise  # noqa: F401


# NOTE: the table of direct JVP rules; an op without one gets `transposed_vjp_jvp`.
JVP_RULES: RuleTable[JvpRule] = RuleTable("JVP", load=_load_rules)

register_jvp = JVP_RULES.register
register_function_jvp = JVP_RULES.register_function
get_jvp = JVP_RULES.get
jvp_ops = JVP_RULES.ops


def fit_tangent(graph: Graph, tangent: Node, meta: ArrayMeta) -> Node:
    """`tangent` broadcast to `meta`'s shape and cast to its dtype (a complex tangent of a
    real result keeps its real part).

    >>> fit_tangent(graph, tangent_of_shape_3, ArrayMeta((2, 3), "float32"))  # doctest: +SKIP
    """
    value = tangent
    value_meta = value.meta
    assert isinstance(value_meta, ArrayMeta)
    if value_meta.dtype.kind == "c" and meta.dtype.kind != "c":
        value = graph.call(get_op("real"), value)
    if tuple(value.meta.shape) != tuple(meta.shape):  # type: ignore[union-attr]
        value = graph.call(get_op("broadcast_to"), value, shape=meta.shape)
    if value.meta.dtype != meta.dtype:  # type: ignore[union-attr]
        value = graph.call(get_op("astype"), value, dtype=np.dtype(meta.dtype))
    return value


def transposed_vjp_jvp(ctx: JvpContext) -> Node | None:
    """The tangent of `ctx.node` from its VJP rule: the VJP `u -> J^T u` is linear in `u`,
    and its own VJP applied to the input tangents is `J t`. Raises NotImplementedError when
    the op has no VJP rule either.

    >>> transposed_vjp_jvp(JvpContext(graph, node, (tangent,)))  # doctest: +SKIP
    """
    node, graph = ctx.node, ctx.graph
    assert node.op is not None
    rule = get_vjp(node.op)
    if rule is None:
        raise missing_rule_error(node, "forward")
    wanted = tuple(t is not None for t in ctx.tangents)
    if not differentiable(node.meta) or not any(wanted):
        return None
    start = len(graph.nodes)
    # The VJP is linear in the cotangent, so any value stands for it; zeros are cheap, and
    # the nodes that depend on it are dead once the transposed sweep is appended.
    cotangent = graph.call(get_op("zeros"), shape=ctx.meta.shape, dtype=ctx.meta.dtype)
    grads = rule(VjpContext(graph, node, cotangent, wanted))
    seeds: list[tuple[Any, Node]] = []
    for value, tangent, grad in zip(node.inputs, ctx.tangents, grads, strict=False):
        if tangent is None or grad is None:
            continue
        meta = value.meta
        assert isinstance(meta, ArrayMeta)
        seeds.append((fit_cotangent(graph, grad, meta), tangent))
    if not seeds:
        return None
    region = [cotangent, *(n for n in graph.nodes[start:] if n.op is not None)]
    region = list(dict.fromkeys(region))
    found = append_backward(graph, region, [cotangent], seeds)
    return input_cotangent(graph, found, cotangent)
