"""The VJP table: one rule per op that builds the backward of a node as graph nodes.

A rule takes a `VjpContext` (the graph being built, the forward node, its
cotangent) and returns one cotangent per input of the node: a `Node`, or
None for "no gradient" (a constant input, an integer or bool input, or a
derivative that is zero almost everywhere such as `floor`). Rules may return
cotangents with the broadcast shape and promoted dtype of the node's result;
`fit_cotangent` then sums over broadcast dims and casts back to the input's
shape and dtype, so every rule stays short.

Complex numbers follow JAX's convention: a rule is the transpose of the
node's derivative with respect to the bilinear pairing `Re(u * v)` (no
conjugation). Holomorphic ops give `ct * f'(z)`; `conjugate` gives
`conj(ct)`; for a real-valued `f` of complex `z` the result is
`df/dx - i df/dy`, so `grad(lambda z: abs(z) ** 2)(z) == 2 * conj(z)`.
A real input whose cotangent came out complex keeps its real part.

The table is `VJP_RULES` (a `RuleTable`); `register_vjp`, `get_vjp`, `vjp_ops` and
`register_function_vjp` are its methods.

    >>> @register_vjp(get_op("negative"))
    ... def _negative_vjp(ctx):
    ...     return [ctx.call("negative", ctx.cotangent)]  # doctest: +SKIP
    >>> get_vjp(get_op("sin")) is not None, get_op("matmul") in vjp_ops()
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from numpile_capture import ArrayMeta, Graph, Node, get_op

from .loop_stacks import LoopStacks
from .rule_table import RuleContext, RuleTable

__all__ = [
    "VJP_RULES",
    "VjpContext",
    "VjpRule",
    "differentiable",
    "fit_cotangent",
    "get_vjp",
    "missing_rule_error",
    "register_function_vjp",
    "register_vjp",
    "vjp_ops",
]


@attrs.frozen(eq=False)
class VjpContext(RuleContext):
    """What a VJP rule sees: the graph it adds backward nodes to, the node, its cotangent.

    `wants(i)` says whether input `i` needs a cotangent at all (a rule may skip
    building nodes for the others).
    """

    cotangent: Node
    wanted: tuple[bool, ...]
    # NOTE: for a tuple-valued node (np.linalg.svd's U, S, Vh): the cotangent of each item
    # that has one, by index (`cotangent` is then one of them; the rule reads these).
    items: dict[int, Node] = attrs.field(factory=dict)
    # NOTE: a forward loop node -> a loop the rule added that computes its carried values
    # too (`vjp_loop`'s stacking loop); the caller of `append_backward` may keep only the
    # latter (`share_forward_loops`). Rules add to it; nobody else reads it before then.
    shared_loops: dict[Node, Node] = attrs.field(factory=dict)
    # NOTE: a stacking loop (see `shared_loops`) -> what its reverse loop needs
    # (`vjp_loop.LoopStacks`): a later sweep through that loop reads its stacks instead of
    # stacking again. Rules add to it and read it.
    stacked_loops: dict[Node, LoopStacks] = attrs.field(factory=dict)

    @property
    def inputs(self) -> tuple[Any, ...]:
        return self.node.inputs

    def wants(self, position: int) -> bool:
        return position < len(self.wanted) and self.wanted[position]

    def input_meta(self, position: int) -> ArrayMeta:
        value = self.node.inputs[position]
        assert isinstance(value, Node) and isinstance(value.meta, ArrayMeta)
        return value.meta

    def input_zeros(self, position: int) -> Node:
        """Zeros of input `position`'s shape in the result's dtype, to scatter a cotangent into."""
        return self.call("zeros", shape=self.input_meta(position).shape, dtype=self.meta.dtype)


VjpRule = Callable[[VjpContext], Sequence[Node | None]]


def _load_rules() -> None:
    # Late import: the rule modules import this module to register themselves.
    from . import (  # noqa: F401
        vjp_cond,
        vjp_extern,
        vjp_indexing,
        vjp_join,
        vjp_least_squares,
        vjp_linalg,
        vjp_loop,
        vjp_numeric,
        vjp_ordering,
        vjp_pointwise,
        vjp_reduction,
        vjp_view,
    )


# NOTE: the table of VJP rules; `vjp_ops()` lists the op set's, not user functions'.
VJP_RULES: RuleTable[VjpRule] = RuleTable("VJP", load=_load_rules)

register_vjp = VJP_RULES.register
register_function_vjp = VJP_RULES.register_function
get_vjp = VJP_RULES.get
vjp_ops = VJP_RULES.ops


def missing_rule_error(node: Node, mode: str) -> NotImplementedError:
    """The error for a node whose op has no rule in `mode` ("reverse" or "forward"): an
    `allow_in_graph` function is named, with the decorators that give it a rule.

    >>> str(missing_rule_error(node, "reverse"))  # doctest: +SKIP
    """
    op = node.op
    assert op is not None
    table = "VJP" if mode == "reverse" else "JVP or VJP"
    if op.name.startswith("allowed["):
        function = op.name[len("allowed[") : -1]
        return NotImplementedError(
            f"cannot differentiate a call to {function} (in `{node.format()}`): it is marked "
            "allow_in_graph, so numpile does not trace into it, and it has no derivative rule; "
            "give it one with numpile.custom_vjp or numpile.custom_jvp"
        )
    return NotImplementedError(
        f"no {table} rule for op {op.name!r} (in `{node.format()}`); "
        f"it cannot be differentiated in {mode} mode yet"
    )


def differentiable(meta: Any) -> bool:
    """Whether values of `meta` carry gradients: arrays of float or complex dtype.

    >>> differentiable(ArrayMeta((2,), "float32")), differentiable(ArrayMeta((2,), "int64"))
    (True, False)
    """
    return isinstance(meta, ArrayMeta) and meta.dtype.kind in "fc"


def fit_cotangent(graph: Graph, cotangent: Node, meta: ArrayMeta) -> Node:
    """`cotangent` summed over the dims broadcasting added and cast to `meta`'s shape and dtype.

    >>> fit_cotangent(graph, ct_of_shape_2_3, ArrayMeta((3,), "float32"))  # doctest: +SKIP
    """
    value = cotangent
    value_meta = value.meta
    assert isinstance(value_meta, ArrayMeta)
    if value_meta.dtype.kind == "c" and meta.dtype.kind != "c":
        value = graph.call(get_op("real"), value)
    shape = tuple(value.meta.shape)  # type: ignore[union-attr]
    extra = len(shape) - meta.ndim
    if extra > 0:
        value = graph.call(get_op("sum"), value, axis=tuple(range(extra)))
        shape = shape[extra:]
    ones = tuple(
        axis
        for axis, (dim, want) in enumerate(zip(shape, meta.shape, strict=True))
        if want == 1 and dim != 1
    )
    if ones:
        value = graph.call(get_op("sum"), value, axis=ones, keepdims=True)
    if extra < 0:
        value = graph.call(get_op("broadcast_to"), value, shape=meta.shape)
    value_meta = value.meta
    assert isinstance(value_meta, ArrayMeta)
    if tuple(value_meta.shape) != tuple(meta.shape):
        value = graph.call(get_op("broadcast_to"), value, shape=meta.shape)
    if value.meta.dtype != meta.dtype:  # type: ignore[union-attr]
        value = graph.call(get_op("astype"), value, dtype=np.dtype(meta.dtype))
    return value
