"""Subgraphs: copy the part of a graph that computes some outputs from some inputs.

`extract_graph` is how the partitioners cut a joint graph into a forward and
a backward graph, and `eliminate_dead_code` is the same copy with the graph's
own placeholders and output.

    >>> from numpile_capture import ArrayMeta, Graph, get_op
    >>> g = Graph()
    >>> x = g.placeholder("x", ArrayMeta((3,), "float64"))
    >>> dead = g.call(get_op("cos"), x)
    >>> g.output = g.call(get_op("sin"), x)
    >>> len(eliminate_dead_code(g))
    2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numpile_capture import Graph, Node, tree_map

__all__ = ["eliminate_dead_code", "extract_graph", "needed_nodes"]


def needed_nodes(outputs: Any, stop: Sequence[Node] = ()) -> set[Node]:
    """The nodes `outputs` (a pytree) depend on, not looking past the nodes in `stop`.

    >>> needed_nodes(None)
    set()
    """
    stops = set(stop)
    seen: set[Node] = set()
    pending = [leaf for leaf in _leaves(outputs) if isinstance(leaf, Node)]
    while pending:
        node = pending.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in stops:
            continue
        pending.extend(node.input_nodes())
    return seen


def _leaves(tree: Any) -> list[Any]:
    found: list[Any] = []
    tree_map(found.append, tree)
    return found


def extract_graph(
    graph: Graph, inputs: Sequence[Node], outputs: Any, *, names: Sequence[str] | None = None
) -> Graph:
    """A new graph whose placeholders are `inputs` and whose output is `outputs`.

    Nodes of `graph` between them are copied in order; a node that `outputs`
    needs but that is neither an input nor computable from the inputs raises
    ValueError. `names` renames the placeholders.

        >>> sub = extract_graph(graph, [v1], (v3,))  # doctest: +SKIP
    """
    result = Graph()
    mapping: dict[Node, Node] = {}
    for position, node in enumerate(inputs):
        name = names[position] if names is not None else node.name
        mapping[node] = result.placeholder(name, node.meta)
    needed = needed_nodes(outputs, inputs)
    for node in graph.nodes:
        if node not in needed or node in mapping:
            continue
        if node.op is None:
            raise ValueError(f"{node.name} is needed but is not an input of the subgraph")
        inputs_copy = tuple(mapping[v] if isinstance(v, Node) else v for v in node.inputs)
        mapping[node] = result.add_node(node.op, inputs_copy, node.kwargs, node.meta)
        if node in graph.locations:
            result.locations[mapping[node]] = graph.locations[node]
    result.output = tree_map(
        lambda leaf: mapping[leaf] if isinstance(leaf, Node) else leaf, outputs
    )
    return result


def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of `graph` without the nodes its output does not need (placeholders all stay).

    Only pure graphs: a mutation whose result is unused would be dropped.
    """
    return extract_graph(graph, graph.placeholders, graph.output)
