"""One forward loop where reverse mode made two: `share_forward_loops`.

The VJP of a `for_loop` (`vjp_loop`) adds a loop that computes what the forward loop does
and also writes each iteration's carried values into stacks for the reverse loop. Kept
beside the original, the forward would run twice. `share_forward_loops` replaces each
original loop by the loop that stands for it: that loop (and what it reads that was
computed after the original, such as its zero-filled stacks or a first iteration run
before it) moves to the original's place, and the original's carried outputs become its
first outputs. Both loops run the same iterations from the same values: the graph's
results do not change, only how often the loop runs.

    >>> joint = share_forward_loops(joint_graph, {forward_loop: stacking_loop})  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numpile_capture import Graph, Node

__all__ = ["share_forward_loops"]


def share_forward_loops(graph: Graph, shared: Mapping[Node, Node]) -> Graph:
    """`graph` with each loop node of `shared` replaced by the loop standing for it (see
    the module docstring); `graph` itself when there is nothing to share.

    A pair is left as it is where the standing loop reads a value computed after the
    original that is not its own to move (it cannot then run in the original's place).
    """
    position = {node: k for k, node in enumerate(graph.nodes)}
    moves: dict[Node, list[Node]] = {}
    for loop, twin in shared.items():
        if loop not in position or twin not in position:
            continue
        found = _moved_with(graph, twin, position[loop], position)
        if found is not None:
            moves[loop] = found
    if not moves:
        return graph
    # The twin's output standing for each carried output of an original loop.
    outputs = {loop: _loop_outputs(graph, shared[loop]) for loop in moves}
    skipped = {node for moved in moves.values() for node in moved}
    result = Graph()
    mapping: dict[Node, Any] = {}

    def copy(node: Node) -> None:
        if node.op is None:
            mapping[node] = result.placeholder(node.name, node.meta)
            return
        inputs = tuple(mapping[v] if isinstance(v, Node) else v for v in node.inputs)
        mapping[node] = result.add_node(node.op, inputs, node.kwargs, node.meta)
        if node in graph.locations:
            result.locations[mapping[node]] = graph.locations[node]

    for node in graph.nodes:
        if node in skipped:
            continue
        if node in moves:
            for each in moves[node]:
                copy(each)
            if node in graph.locations:  # warnings of the loop name the user's line
                result.locations.setdefault(mapping[shared[node]], graph.locations[node])
            mapping[node] = mapping[shared[node]]
            continue
        owner = node.inputs[0] if _is_loop_output(node) else None
        if isinstance(owner, Node) and owner in moves:
            mapping[node] = mapping[outputs[owner][node.kwargs["index"]]]
            continue
        copy(node)
    result.output = _map_tree(graph.output, mapping)
    return result


def _moved_with(
    graph: Graph, twin: Node, start: int, position: dict[Node, int]
) -> list[Node] | None:
    # The twin loop, its outputs and what it reads from after `start` (the original's
    # position), in graph order; None when one of them reads a value computed after
    # `start` that does not move with them (the original's results, say).
    moved: set[Node] = set()
    pending = [twin]
    while pending:
        node = pending.pop()
        if node in moved:
            continue
        moved.add(node)
        pending.extend(v for v in node.input_nodes() if position[v] > start)
    moved.update(_loop_outputs(graph, twin).values())
    for node in moved:
        if any(position[v] >= start and v not in moved for v in node.input_nodes()):
            return None
    return sorted(moved, key=position.__getitem__)


def _loop_outputs(graph: Graph, loop: Node) -> dict[int, Node]:
    return {
        node.kwargs["index"]: node
        for node in graph.nodes
        if _is_loop_output(node) and node.inputs[0] is loop
    }


def _is_loop_output(node: Node) -> bool:
    return node.op is not None and node.op.name == "loop_output"


def _map_tree(value: Any, mapping: dict[Node, Any]) -> Any:
    if isinstance(value, Node):
        return mapping[value]
    if isinstance(value, tuple | list):
        return type(value)(_map_tree(item, mapping) for item in value)
    if isinstance(value, dict):
        return {key: _map_tree(item, mapping) for key, item in value.items()}
    return value
