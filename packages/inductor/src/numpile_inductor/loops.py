"""Loop nodes in the inductor: the body compiled once, run by a host loop.

A `for_loop` node's body is a graph of its own. `compile_loop_bodies` compiles each body
once (inner loops first), with the index and the carried values as run-time arguments,
and gives back the graph with each loop node running a host loop that calls the
compiled body per iteration: no compile per iteration or per trip count. The loop node
itself stays an extern call of the outer graph's module (a barrier: it may write its
inputs in place).

The first iteration may receive carried values of other types than the body was
compiled for (a Python `0.0` where the body takes the float32 scalar the loop carries
from then on, NEP 50); such iterations run the body with `run_graph`, which follows
NumPy on any input, until the types match.

    >>> compiled = compile_loop_bodies(graph, lambda body: compile_graph(body).fn)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    Op,
    OpKind,
    ScalarMeta,
    is_loop,
    run_graph,
    tree_map,
)

log = logging.getLogger("numpile.inductor.loops")

BodyCompiler = Callable[[Graph], Callable[..., Any]]


def compile_loop_bodies(graph: Graph, compile_body: BodyCompiler) -> Graph:
    """`graph` with every `for_loop` node running its body compiled by `compile_body`.

    Returns `graph` itself when it has no loop node.
    """
    if not any(is_loop(node) for node in graph.nodes):
        return graph
    result = Graph()
    mapping: dict[Node, Node] = {}

    def rename(value: Any) -> Any:
        return mapping.get(value, value) if isinstance(value, Node) else value

    for node in graph.nodes:
        if node.op is None:
            mapping[node] = result.placeholder(node.name, node.meta)
            continue
        op = node.op
        if is_loop(node) and _has_array_work(node.kwargs["body"]):
            body = compile_loop_bodies(node.kwargs["body"], compile_body)
            op = attrs.evolve(op, impl=host_loop(body, compile_body(body)))
        inputs = tuple(tree_map(rename, list(node.inputs)))
        copy = result.add_node(op, inputs, dict(node.params), node.meta)
        mapping[node] = copy
        line = graph.locations.get(node)
        if line is not None:
            result.locations[copy] = line
    result.output = tree_map(rename, graph.output)
    return result


# NOTE: a body of scalar work runs faster op by op (NumPy's scalar fast paths) than as a
# compiled module calling back into Python for each indexing op; kernels pay off on arrays.
_ARRAY_WORK = (OpKind.POINTWISE, OpKind.REDUCTION, OpKind.SCAN)


def _has_array_work(body: Graph) -> bool:
    return any(
        node.op is not None
        and node.op.kind in _ARRAY_WORK
        and isinstance(node.meta, ArrayMeta)
        and node.meta.ndim > 0
        for node in body.nodes
    )


def host_loop(body: Graph, compiled: Callable[..., Any]) -> Callable[..., Any]:
    """The implementation of a `for_loop` node that calls `compiled` (the body) per index."""
    metas = [node.meta for node in body.placeholders]

    def run(start: Any, stop: Any, step: Any, *values: Any, body: Graph, carried: int) -> Any:
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        state = tuple(values[:carried])
        invariants = values[carried:]
        matching = _matches(state, metas[1 : 1 + carried])
        for index in range(start, stop, step):
            if matching:
                state = tuple(compiled(index, *state, *invariants))
            else:
                state = tuple(run_graph(body, (index, *state, *invariants)))
                matching = _matches(state, metas[1 : 1 + carried])
        return state

    return run


def _matches(values: Sequence[Any], metas: Sequence[Any]) -> bool:
    # Whether carried values have the types the body was compiled for.
    for value, meta in zip(values, metas, strict=True):
        if isinstance(meta, ScalarMeta):
            if type(value) is not meta.type:
                return False
        elif isinstance(meta, ArrayMeta):
            if not isinstance(value, np.ndarray | np.generic) or value.dtype != meta.dtype:
                return False
            if np.ndim(value) != meta.ndim:
                return False
    return True


def loop_ops(graph: Graph) -> list[Op]:
    """The loop ops of `graph`'s nodes (for tests: each runs a host loop after compiling)."""
    return [node.op for node in graph.nodes if node.op is not None and is_loop(node)]
