"""Checkpointing: `checkpoint(fn)` recomputes `fn`'s values in the backward instead of saving.

Inside a function that a transform differentiates (`grad`, `value_and_grad`,
`vjp`, `jvp`), a call to a checkpointed function is traced as usual with
identity marker nodes on its array inputs and outputs. Both partitioners
read the markers (`split_checkpoints`) and drop them before anything is
compiled: the values computed strictly inside a call are never saved for the backward (the
min-cut gives them no finite cost, and may recompute even extern calls
there); what enters a call and what leaves it may be saved, so a chain of
checkpointed calls saves each call's inputs, as `torch.utils.checkpoint` does
(the min-cut may save less). Elsewhere (`numpile.compile`, `vmap`, a
transform traced inside a compiled function, where forward and backward are
one graph) a checkpointed function is just `fn`.

    >>> import numpy as np
    >>> from numpile_autograd_aot import grad
    >>> block = checkpoint(lambda h, w: np.tanh(h @ w))
    >>> grad(lambda w, x: np.sum(block(block(x, w), w)))(np.eye(2), np.ones((3, 2))).shape
    (2, 2)
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    Op,
    OpKind,
    TransformCall,
    register_transform,
    tree_flatten,
    tree_unflatten,
)

from .joint import JointGraph
from .jvp_table import JvpContext, register_function_jvp
from .vjp_table import VjpContext, register_function_vjp

__all__ = ["checkpoint", "differentiating", "split_checkpoints"]


def _identity(value: Any) -> Any:
    return value


# NOTE: the marker ops: identities on the arrays entering and leaving a checkpointed call.
# Not in capture's op set: they never reach a backend (partitioners drop them).
CHECKPOINT_INPUT = Op("checkpoint_input", OpKind.EXTERN, _identity, _identity)
CHECKPOINT_OUTPUT = Op("checkpoint_output", OpKind.EXTERN, _identity, _identity)
_MARKERS = (CHECKPOINT_INPUT, CHECKPOINT_OUTPUT)


def _marker_vjp(ctx: VjpContext) -> list[Node | None]:
    return [ctx.cotangent]


def _marker_jvp(ctx: JvpContext) -> Node | None:
    return ctx.tangent(0)


for _marker in _MARKERS:
    register_function_vjp(_marker, _marker_vjp)
    register_function_jvp(_marker, _marker_jvp)

# NOTE: set while a transform captures the function it differentiates: only then do
# checkpointed calls leave markers (elsewhere nothing would partition them away).
_DIFFERENTIATING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "numpile_differentiating", default=False
)


@contextlib.contextmanager
def differentiating() -> Iterator[None]:
    """Mark the capture inside the block as one that a partitioner will split.

    >>> with differentiating():
    ...     pass
    """
    token = _DIFFERENTIATING.set(True)
    try:
        yield
    finally:
        _DIFFERENTIATING.reset(token)


def _marked(graph: Graph, tree: Any, op: Op) -> Any:
    leaves, spec = tree_flatten(tree)
    marked = [
        graph.call(op, leaf)
        if isinstance(leaf, Node) and isinstance(leaf.meta, ArrayMeta)
        else leaf
        for leaf in leaves
    ]
    return tree_unflatten(spec, marked)


def checkpoint(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, whose intermediate values a differentiating transform recomputes in the
    backward instead of saving (see the module docstring).

    >>> import numpy as np
    >>> layer = checkpoint(lambda x: np.sin(np.cos(x)))
    >>> float(layer(np.zeros(())))
    0.8414709848078965
    """
    name = getattr(fn, "__qualname__", type(fn).__name__)

    def expand(call: TransformCall) -> Any:
        if not _DIFFERENTIATING.get():
            return call.inline(fn, call.args, dict(call.kwargs))
        args = _marked(call.graph, call.args, CHECKPOINT_INPUT)
        output = call.inline(fn, tuple(args), dict(call.kwargs))
        return _marked(call.graph, output, CHECKPOINT_OUTPUT)

    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    checkpointed.__qualname__ = f"checkpoint({name})"
    checkpointed.__name__ = f"checkpoint_{getattr(fn, '__name__', 'fn')}"
    register_transform(checkpointed, expand, f"checkpoint of {name}")
    return checkpointed


def split_checkpoints(joint: JointGraph) -> tuple[JointGraph, set[Node]]:
    """`joint` without its checkpoint markers, and the forward nodes to recompute rather
    than save: those after an input marker and before an output marker.

    >>> plain, recompute = split_checkpoints(joint)  # doctest: +SKIP
    """
    graph = joint.graph
    if not any(node.op in _MARKERS for node in graph.nodes):
        return joint, set()
    after: set[Node] = set()
    for node in graph.nodes:
        entered = node.op is CHECKPOINT_INPUT or any(v in after for v in node.input_nodes())
        if entered and node.op is not CHECKPOINT_OUTPUT:
            after.add(node)
    before: set[Node] = set()
    for node in reversed(graph.nodes):
        if node.op is CHECKPOINT_OUTPUT or node in before:
            before.update(node.input_nodes())
    tangents = set(joint.tangents)
    dependent: set[Node] = set(tangents)
    for node in graph.nodes:
        if any(v in dependent for v in node.input_nodes()):
            dependent.add(node)
    # A call's outputs are the next call's inputs: they may be saved, as torch saves the
    # inputs of each checkpointed call; everything strictly inside is recomputed.
    outputs = {
        v for node in graph.nodes if node.op is CHECKPOINT_OUTPUT for v in node.input_nodes()
    }
    region = {n for n in after & before if n.op not in _MARKERS and n not in dependent | outputs}
    result = Graph()
    mapping: dict[Node, Any] = {}
    for node in graph.nodes:
        if node.op is None:
            mapping[node] = result.placeholder(node.name, node.meta)
        elif node.op in _MARKERS:
            mapping[node] = mapping[node.inputs[0]]
        else:
            inputs = tuple(mapping[v] if isinstance(v, Node) else v for v in node.inputs)
            mapping[node] = result.add_node(node.op, inputs, node.kwargs, node.meta)
            if node in graph.locations:
                result.locations[mapping[node]] = graph.locations[node]

    def remap(tree: Any) -> Any:
        leaves, spec = tree_flatten(tree)
        return tree_unflatten(
            spec, [mapping.get(v, v) if isinstance(v, Node) else v for v in leaves]
        )

    result.output = remap(graph.output)
    plain = JointGraph(
        result, joint.num_primals, joint.num_fw_outputs, joint.tangent_outputs, joint.diff_inputs
    )
    return plain, {mapping[node] for node in region}
