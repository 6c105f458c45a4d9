"""A light capture's graph with sympy sizes: the boundary between capture and its backends.

A capture that ran inside `numpile_guards.light_sizes()` holds its symbolic sizes as
`AffineSize` values (see `numpile_guards.affine_size`). They print exactly as their sympy
expressions, so the printed graph (the kernel cache's key) is the same either way, and the
inductor looks its cache up with the light graph: a hit needs no sympy, and a miss lowers
the light graph without sympy where its indices stay affine (the inductor's
`light_lowering`). Everything else that lowers or runs a graph (any other backend, a light
lowering that needs sympy, a loop body run op by op) takes `sympy_sizes(graph)`: the same
graph with every `AffineSize` in node inputs, params, metadata, loop bodies and the output
replaced by its sympy expression.

    >>> from numpile_guards import AffineSize
    >>> from numpile_capture.meta import ArrayMeta
    >>> g = Graph(); s0 = AffineSize.symbol("s0")
    >>> g.output = g.placeholder("x", ArrayMeta((s0, 4), "float64"))
    >>> has_light_sizes(g), has_light_sizes(sympy_sizes(g)), str(sympy_sizes(g)) == str(g)
    (True, False, True)
"""

from __future__ import annotations

from typing import Any

import attrs

from numpile_guards import AffineSize

from .graph import Graph, Node

__all__ = ["has_light_sizes", "sympy_sizes"]


def has_light_sizes(graph: Graph) -> bool:
    """Whether `graph` (or a loop body in it) holds a light capture's `AffineSize`.

    >>> has_light_sizes(Graph())
    False
    """
    return any(
        _holds(node.meta) or _holds(node.inputs) or _holds(node.params) for node in graph.nodes
    ) or _holds(graph.output)


def _holds(value: Any) -> bool:
    if isinstance(value, AffineSize):
        return True
    if isinstance(value, Node):
        return False
    if isinstance(value, Graph):
        return has_light_sizes(value)
    if isinstance(value, tuple | list):
        return any(_holds(item) for item in value)
    if isinstance(value, dict):
        return any(_holds(item) for item in value.values())
    if isinstance(value, slice):
        return _holds((value.start, value.stop, value.step))
    if attrs.has(type(value)):
        return any(_holds(getattr(value, field.name)) for field in attrs.fields(type(value)))
    return False


def sympy_sizes(graph: Graph) -> Graph:
    """`graph` with sympy expressions for its `AffineSize` values; `graph` itself if it has
    none. Node names, order, source locations and printed text are unchanged."""
    if not has_light_sizes(graph):
        return graph
    return _SympySizes().graph(graph)


class _SympySizes:
    # One conversion: old node -> new node across a graph and its bodies (a body may read
    # a node of the graph around it), and each body converted once.
    def __init__(self) -> None:
        self.nodes: dict[Node, Node] = {}
        self.graphs: dict[int, Graph] = {}

    def graph(self, graph: Graph) -> Graph:
        done = self.graphs.get(id(graph))
        if done is not None:
            return done
        new = Graph()
        self.graphs[id(graph)] = new
        for node in graph.nodes:
            copy = Node(
                node.name,
                node.op,
                self.value(node.inputs),
                self.value(node.params),
                self.value(node.meta),
            )
            new.nodes.append(copy)
            self.nodes[node] = copy
        new.output = self.value(graph.output)
        new.locations = {self.nodes.get(n, n): line for n, line in graph.locations.items()}
        new.adopt_names(graph)
        return new

    def value(self, value: Any) -> Any:
        if isinstance(value, AffineSize):
            return value.to_sympy()
        if isinstance(value, Node):
            return self.nodes.get(value, value)
        if isinstance(value, Graph):
            return self.graph(value)
        if type(value) is tuple:
            return tuple(self.value(item) for item in value)
        if type(value) is list:
            return [self.value(item) for item in value]
        if type(value) is dict:
            return {key: self.value(item) for key, item in value.items()}
        if type(value) is slice:
            return slice(self.value(value.start), self.value(value.stop), self.value(value.step))
        if attrs.has(type(value)) and _holds(value):
            changes = {
                field.alias: self.value(getattr(value, field.name))
                for field in attrs.fields(type(value))
                if field.init
            }
            return attrs.evolve(value, **changes)
        return value
