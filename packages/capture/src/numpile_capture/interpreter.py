"""Run a graph op by op with NumPy: the reference semantics of the IR.

>>> run_graph(graph, [np.ones(3)])  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Collection, Sequence
from typing import Any

from .graph import Graph, Node
from .pytree import tree_map
from .scalar_operators import SCALAR_OPERATORS, scalar_operator


def run_graph(graph: Graph, inputs: Sequence[Any], quiet: Collection[Node] = ()) -> Any:
    """Evaluate `graph` on concrete `inputs` (one per placeholder, in order).

    Views stay views and in-place ops write to their targets, so the result
    aliases and mutates exactly as the original NumPy program would; each op
    runs as if called from its `graph.locations` line, so NumPy's warnings name it. A ufunc
    op on NumPy scalars runs as their Python operator (`scalar_operators`), whose warnings
    eager gives for `a * b`.
    The ops of `quiet` nodes run with warnings ignored (their warnings were given).
    """
    placeholders = graph.placeholders
    if len(inputs) != len(placeholders):
        raise TypeError(f"graph takes {len(placeholders)} inputs, got {len(inputs)}")
    env: dict[Node, Any] = dict(zip(placeholders, inputs, strict=True))

    def read(value: Any) -> Any:
        return env[value] if isinstance(value, Node) else value

    locations = graph.locations
    dead_after = _dead_after(graph)
    for index, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        args = [read(value) for value in node.inputs]
        line = locations.get(node)
        impl = node.op.impl
        if node.op.name in SCALAR_OPERATORS and not node.params:
            impl = scalar_operator(node.op.name, args) or impl
        if node in quiet:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env[node] = impl(*args, **node.kwargs)
        elif line is None:
            env[node] = impl(*args, **node.kwargs)
        elif node.op.method:  # from the user's line, where NumPy's warnings point
            env[node] = line.call_method(node.op.method, args, node.kwargs)
        else:
            env[node] = line.call(impl, args, node.kwargs)
        for value in dead_after.get(index, ()):
            del env[value]  # as eager code drops its temporaries: NumPy reuses the memory
    return tree_map(read, graph.output)


# Per graph, the answer of _dead_after with what it was computed for (nodes, output).
_DEAD_AFTER: weakref.WeakKeyDictionary[
    Graph, tuple[tuple[Node, ...], Any, dict[int, list[Node]]]
] = weakref.WeakKeyDictionary()


def _dead_after(graph: Graph) -> dict[int, list[Node]]:
    # For each node position, the values last read there (outputs are never dead).
    nodes = tuple(graph.nodes)
    cached = _DEAD_AFTER.get(graph)
    if cached is not None and cached[0] == nodes and cached[1] is graph.output:
        return cached[2]
    last: dict[Node, int] = {}
    for index, node in enumerate(graph.nodes):
        for value in node.inputs:
            if isinstance(value, Node):
                last[value] = index
    for value in graph.output_nodes():
        last.pop(value, None)
    dead: dict[int, list[Node]] = {}
    for value, index in last.items():
        dead.setdefault(index, []).append(value)
    _DEAD_AFTER[graph] = (nodes, graph.output, dead)
    return dead
