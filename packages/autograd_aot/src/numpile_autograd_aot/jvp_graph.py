"""The tangent graph: a pure graph and its forward-mode derivative, built by JVP rules.

`build_jvp(graph, diff_inputs)` copies a pure graph (whose output is a
tuple), appends one tangent placeholder per input in `diff_inputs` (shaped
like it) and, after each node a differentiated input reaches, the node's
tangent: its JVP rule (`jvp_table`), or the transpose of its VJP rule. The
result is `(primals..., tangents...) -> (outputs, output tangents)`; an
output no differentiated input reaches gets zeros, an integer or bool output
None.

    >>> import numpy as np
    >>> from numpile_capture import capture_function, run_graph
    >>> graph = capture_function(lambda x: (np.sin(x),), (np.zeros(2),), {}).graph
    >>> tangent_graph = build_jvp(graph, (0,))
    >>> run_graph(tangent_graph.graph, [np.zeros(2), np.ones(2)])
    ((array([0., 0.]),), (array([1., 1.]),))
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from numpile_capture import ArrayMeta, Graph, Node, ScalarMeta, extern_row, get_op

from .joint import JointGraph
from .jvp_table import JvpContext, fit_tangent, get_jvp, transposed_vjp_jvp
from .subgraph import eliminate_dead_code
from .vjp_table import differentiable

__all__ = ["JvpGraph", "append_tangents", "build_jvp", "output_tangent"]


@attrs.frozen(eq=False)
class JvpGraph:
    """A graph `(primals..., tangents...) -> (outputs, output tangents)`.

    `diff_inputs[i]` is the primal that tangent placeholder `i` belongs to (the
    differentiated inputs of float or complex dtype).
    """

    graph: Graph
    num_primals: int
    diff_inputs: tuple[int, ...]
    num_outputs: int

    @property
    def joint(self) -> JointGraph:
        """The same graph as a `JointGraph`, for the partitioners: the forward half computes
        the outputs and the residuals the tangents need (what `linearize` keeps), the other
        half maps residuals and input tangents to the output tangents. (Its
        `tangent_outputs` are the primals the tangent placeholders belong to.)"""
        outputs = tuple(range(self.num_outputs))
        return JointGraph(self.graph, self.num_primals, self.num_outputs, self.diff_inputs, outputs)

    def __str__(self) -> str:
        return str(self.graph)


def build_jvp(graph: Graph, diff_inputs: Sequence[int]) -> JvpGraph:
    """The tangent graph of the pure graph `graph` (see the module docstring).

    Raises NotImplementedError naming the op when an op has neither a JVP nor a VJP rule.
    """
    result = Graph()
    mapping: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.op is None:
            mapping[node] = result.placeholder(node.name, node.meta)
    primals = result.placeholders
    tangents: dict[Node, Node] = {}
    with_tangent = tuple(i for i in diff_inputs if differentiable(primals[i].meta))
    for index in with_tangent:
        primal = primals[index]
        tangents[primal] = result.placeholder(f"tangent_{primal.name}", primal.meta)
    for node in graph.nodes:
        if node.op is None:
            continue
        inputs = tuple(mapping[v] if isinstance(v, Node) else v for v in node.inputs)
        copied = result.add_node(node.op, inputs, node.kwargs, node.meta)
        if node in graph.locations:  # NumPy's warnings name the forward's lines
            result.locations[copied] = graph.locations[node]
        mapping[node] = copied
        _add_tangent(result, copied, tangents)
    outputs = tuple(mapping[v] if isinstance(v, Node) else v for v in graph.output)
    output_tangents = tuple(output_tangent(result, tangents, leaf) for leaf in outputs)
    result.output = (outputs, output_tangents)
    # The transposed VJP rules leave nodes of their stand-in cotangent behind: dead code.
    pruned = eliminate_dead_code(result)
    return JvpGraph(pruned, len(primals), with_tangent, len(outputs))


def append_tangents(graph: Graph, nodes: Sequence[Node], tangents: dict[Node, Node]) -> None:
    """Append to `graph` the tangent of each of `nodes` (in topological order) that a value
    in `tangents` reaches, and record it in `tangents`.

        >>> append_tangents(graph, region_nodes, {x: tangent_of_x})  # doctest: +SKIP
    """
    for node in nodes:
        _add_tangent(graph, node, tangents)


def output_tangent(graph: Graph, tangents: dict[Node, Node], leaf: object) -> Node | None:
    """The tangent of an output leaf: None for an integer or bool value or a constant, zeros
    (added to `graph`) when no differentiated input reaches it.

        >>> output_tangent(graph, tangents, out)  # doctest: +SKIP
    """
    if not isinstance(leaf, Node) or not differentiable(leaf.meta):
        return None
    found = tangents.get(leaf)
    if found is not None:
        return found
    meta = leaf.meta
    assert isinstance(meta, ArrayMeta)
    return graph.call(get_op("zeros"), shape=meta.shape, dtype=meta.dtype)


def _differentiable_items(node: Node) -> bool:
    # Whether `node` is a tuple-valued extern op with an item that carries a tangent.
    if not (isinstance(node.meta, ScalarMeta) and node.meta.type is tuple):
        return False
    try:
        row = extern_row(node.op.name)  # type: ignore[union-attr]
    except KeyError:
        return False
    metas = row.meta_of_node(
        *(v.meta if isinstance(v, Node) else v for v in node.inputs), **node.kwargs
    )
    return any(differentiable(meta) for meta in metas)  # type: ignore[union-attr]


def _add_tangent(graph: Graph, node: Node, tangents: dict[Node, Node]) -> None:
    inputs = tuple(tangents.get(v) if isinstance(v, Node) else None for v in node.inputs)
    if not any(t is not None for t in inputs):
        return
    if _differentiable_items(node):
        # A tuple-valued op (np.linalg.svd): its items' tangents are not modelled; an
        # error, never a zero tangent.
        raise NotImplementedError(
            f"forward mode through the tuple-valued op {node.op} (in `{node.format()}`) is "
            "not supported yet; reverse mode (grad, vjp) is"
        )
    if not differentiable(node.meta):
        return
    assert node.op is not None
    context = JvpContext(graph, node, inputs)
    rule = get_jvp(node.op)
    tangent = rule(context) if rule is not None else transposed_vjp_jvp(context)
    if tangent is not None:
        meta = node.meta
        assert isinstance(meta, ArrayMeta)
        tangents[node] = fit_tangent(graph, tangent, meta)
