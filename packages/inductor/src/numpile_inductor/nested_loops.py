"""Nested loops of a body that runs op by op, each compiled as a C loop of its own.

A host loop whose body no kernel takes (array work whose shapes follow its index: LU's
`A[k + 1 :, k]`) runs that body op by op, and with it the body's inner `for_loop` nodes,
one Python call per element. `nested_loop_runner` makes each such inner loop a graph of
its own, whose only work is that loop node:

    graph(a0: int, a1: int, a2: int, a3: float64[s0, s0], a4: int):
      v0 = for_loop(a0, a1, a2, a3, a4, body=<graph>, carried=0)  # tuple
      return ()

and compiles it through the normal C path (the graph cache keys it by its text), where
the wrapper makes the loop node a C loop function. Where it does not (the body needs
NumPy per iteration), the loop keeps running op by op. The compile happens on the loop's
first run: a loop that an outer C loop function runs never runs its host runner.

    >>> set_loop_runner(body, nested_loop_runner(node, body, compile_graph))  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpile_runtime as rt
from numpile_capture import ArrayMeta, Graph, Node, ScalarMeta, get_op, mentions_loop_symbol

from .loops import LoopRunner, matches, own_copy

log = logging.getLogger("numpile.inductor.nested_loops")

# Compiles a graph as C; gives back the module's function and whether every loop node of
# the graph runs as a C loop function (no host loop).
LoopGraphCompiler = Callable[[Graph], tuple[Callable[..., Any], bool]]

_BOUNDS = 3  # start, stop, step: the first inputs of a `for_loop` node


def loop_graph(node: Node, body: Graph) -> Graph | None:
    """A graph whose only work is `for_loop` node `node` running `body`: one placeholder
    per input of the node that is a graph value, the final carried values as its outputs;
    None where an input's shape follows an enclosing loop's index (kernels take sizes from
    shapes the graph states).

    >>> print(loop_graph(node, body))  # doctest: +SKIP
    """
    graph = Graph()
    inputs: list[Any] = []
    for position, value in enumerate(node.inputs):
        if not isinstance(value, Node):
            inputs.append(value)
            continue
        meta = value.meta
        if isinstance(meta, ArrayMeta) and mentions_loop_symbol(meta.shape):
            return None
        if position < _BOUNDS:
            meta = ScalarMeta(int)  # the host loop hands its bounds over as a range
        inputs.append(graph.placeholder(f"a{position}", meta))
    params = dict(node.params)
    # A copy with no runner of its own: where the C loop function hands a run back to NumPy
    # (an index out of bounds), the loop runs op by op, not through this module again.
    params["body"] = own_copy(body)
    loop = graph.add_node(node.op, tuple(inputs), params, node.meta)  # type: ignore[arg-type]
    output = get_op("loop_output")
    metas = [placeholder.meta for placeholder in body.placeholders[1 : 1 + params["carried"]]]
    graph.output = tuple(
        graph.add_node(output, (loop,), {"index": k}, meta) for k, meta in enumerate(metas)
    )
    return graph


def nested_loop_runner(
    node: Node, body: Graph, fallback: LoopRunner, compile_graph: LoopGraphCompiler
) -> LoopRunner:
    """The runner of `for_loop` node `node` (inside a body that runs op by op): its
    `loop_graph` compiled by `compile_graph` on the first run, called per run of the loop
    where the graph's module runs the loop as C (counted as `loop_nested_c_runs` on
    `numpile_runtime.counters()`), else `fallback` (the host loop).

    >>> runner = nested_loop_runner(node, body, host_loop(body, None), compile)  # doctest: +SKIP
    """
    graph = loop_graph(node, body)
    if graph is None:
        return fallback
    bounds_at = [k for k, value in enumerate(node.inputs[:_BOUNDS]) if isinstance(value, Node)]
    values_at = [
        position - _BOUNDS
        for position, value in enumerate(node.inputs)
        if position >= _BOUNDS and isinstance(value, Node)
    ]
    metas = [node.inputs[_BOUNDS + k].meta for k in values_at]
    compiled: list[Callable[..., Any] | None] = []

    def run(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        if not compiled:
            module, as_c = compile_graph(graph)
            compiled.append(module if as_c else None)
            if not as_c:
                log.info("nested loop %s stays a host loop: its module does not run it as C", node)
        fn = compiled[0]
        arguments = [values[k] for k in values_at]
        if fn is None or not matches(arguments, metas):
            return fallback(indices, values, carried)
        rt.count("loop_nested_c_runs")
        limits = (indices.start, indices.stop, indices.step)
        return tuple(fn(*(limits[k] for k in bounds_at), *arguments))

    return run
