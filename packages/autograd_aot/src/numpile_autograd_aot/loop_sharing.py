"""One forward loop where reverse mode made two: `share_forward_loops`.

The VJP of a `for_loop` (`vjp_loop`) adds a loop that computes what the forward loop does
and also writes each iteration's carried values into stacks for the reverse loop. Kept
beside the original, the forward would run twice. `share_forward_loops` replaces each
original loop by the loop that stands for it: that loop (and what it reads that was
computed after the original, such as its zero-filled stacks or a first iteration run
before it) moves to the original's place, and the original's carried outputs become its
first outputs. Both loops run the same iterations from the same values: the graph's
results do not change, only how often the loop runs.

    >>> replaced = share_forward_loops(joint_graph, {forward_loop: stacking_loop})  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numpile_capture import Graph, Node

__all__ = ["map_tree", "share_forward_loops"]


def share_forward_loops(graph: Graph, shared: Mapping[Node, Node]) -> dict[Node, Any]:
    """Replace, in `graph` itself, each loop node of `shared` by the loop standing for it
    (see the module docstring); return what stands for each node it removed or rebuilt
    (empty when there is nothing to share), for values held outside the graph.

    In place, so that a graph being traced (a transform's region in its caller's graph)
    shares its loops too: the nodes before the first moved loop, and every node whose
    inputs do not change, stay the same objects. A pair is left as it is where the
    standing loop reads a value computed after the original that is not its own to move
    (it cannot then run in the original's place).

        >>> share_forward_loops(graph, {})  # doctest: +SKIP
        {}
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
        return {}
    # The twin's output standing for each carried output of an original loop.
    outputs = {loop: _loop_outputs(graph, shared[loop]) for loop in moves}
    skipped = {node for moved in moves.values() for node in moved}
    nodes: list[Node] = []
    mapping: dict[Node, Any] = {}

    def place(node: Node) -> None:
        inputs = tuple(mapping.get(v, v) if isinstance(v, Node) else v for v in node.inputs)
        if any(new is not old for new, old in zip(inputs, node.inputs, strict=True)):
            # Same name, op and meta: only where its operands come from changes.
            rebuilt = Node(node.name, node.op, inputs, node.params, node.meta)
            mapping[node] = rebuilt
            if node in graph.locations:
                graph.locations[rebuilt] = graph.locations.pop(node)
            node = rebuilt
        nodes.append(node)

    for node in list(graph.nodes):
        if node in skipped:
            continue
        if node in moves:
            for each in moves[node]:
                place(each)
            twin = mapping.get(shared[node], shared[node])
            location = graph.locations.pop(node, None)
            if location is not None:  # warnings of the loop name the user's line
                graph.locations.setdefault(twin, location)
            mapping[node] = twin
            continue
        owner = node.inputs[0] if _is_loop_output(node) else None
        if isinstance(owner, Node) and owner in moves:
            standing = outputs[owner][node.kwargs["index"]]
            mapping[node] = mapping.get(standing, standing)
            graph.locations.pop(node, None)
            continue
        place(node)
    graph.nodes[:] = nodes
    graph.output = map_tree(graph.output, mapping)
    return mapping


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


def map_tree(value: Any, mapping: Mapping[Node, Any]) -> Any:
    """`value` (a tree of graph values) with each node of `mapping` replaced by what
    stands for it (`share_forward_loops`'s result).

        >>> map_tree((1, [2.0]), {})
        (1, [2.0])
    """
    if isinstance(value, Node):
        return mapping.get(value, value)
    if isinstance(value, tuple | list):
        return type(value)(map_tree(item, mapping) for item in value)
    if isinstance(value, dict):
        return {key: map_tree(item, mapping) for key, item in value.items()}
    return value
