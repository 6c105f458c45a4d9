"""Run a graph op by op with NumPy: the reference semantics of the IR.

>>> run_graph(graph, [np.ones(3)])  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from typing import Any

from .graph import Graph, Node
from .pytree import tree_map


def run_graph(graph: Graph, inputs: Sequence[Any], quiet: Collection[Node] = ()) -> Any:
    """Evaluate `graph` on concrete `inputs` (one per placeholder, in order).

    Views stay views and in-place ops write to their targets, so the result
    aliases and mutates exactly as the original NumPy program would; each op
    runs as if called from its `graph.locations` line, so NumPy's warnings name it.
    The ops of `quiet` nodes run with warnings ignored (their warnings were given).
    """
    placeholders = graph.placeholders
    if len(inputs) != len(placeholders):
        raise TypeError(f"graph takes {len(placeholders)} inputs, got {len(inputs)}")
    env: dict[Node, Any] = dict(zip(placeholders, inputs, strict=True))

    def read(value: Any) -> Any:
        return env[value] if isinstance(value, Node) else value

    locations = graph.locations
    for node in graph.nodes:
        if node.op is None:
            continue
        args = [read(value) for value in node.inputs]
        line = locations.get(node)
        if node in quiet:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env[node] = node.op.impl(*args, **node.kwargs)
        elif line is None:
            env[node] = node.op.impl(*args, **node.kwargs)
        elif node.op.method:  # from the user's line, where NumPy's warnings point
            env[node] = line.call_method(node.op.method, args, node.kwargs)
        else:
            env[node] = line.call(node.op.impl, args, node.kwargs)
    return tree_map(read, graph.output)
