"""The joint graph: a pure forward graph and its backward, built by reverse-mode VJP rules.

`build_joint(graph, diff_inputs, tangent_outputs)` copies a pure graph
(whose output is a tuple) and appends one placeholder per differentiated
output (its tangent, or cotangent) and the backward nodes of every VJP rule
on the way back to the inputs in `diff_inputs`. The joint graph's output is
`(forward outputs, input cotangents)`; an input whose dtype carries no
gradient (integer, bool) gets None, an input the outputs do not depend on
gets zeros.

    >>> joint = build_joint(pure_graph, diff_inputs=(0,), tangent_outputs=(0,))  # doctest: +SKIP
    >>> print(joint.graph)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from numpile_capture import ArrayMeta, Graph, Node, get_op

from .vjp import VjpContext, differentiable, fit_cotangent, get_vjp

__all__ = ["JointGraph", "build_joint"]


@attrs.frozen(eq=False)
class JointGraph:
    """A graph `(primals..., tangents...) -> (forward outputs, input cotangents)`.

    `tangent_outputs[i]` is the forward output that tangent placeholder `i`
    belongs to; `diff_inputs[j]` the primal that cotangent output `j` is for.
    """

    graph: Graph
    num_primals: int
    num_fw_outputs: int
    tangent_outputs: tuple[int, ...]
    diff_inputs: tuple[int, ...]

    @property
    def primals(self) -> list[Node]:
        return self.graph.placeholders[: self.num_primals]

    @property
    def tangents(self) -> list[Node]:
        return self.graph.placeholders[self.num_primals :]

    def __str__(self) -> str:
        return str(self.graph)


def build_joint(
    graph: Graph, diff_inputs: Sequence[int], tangent_outputs: Sequence[int]
) -> JointGraph:
    """The joint forward/backward graph of the pure graph `graph` (see the module docstring).

    Raises NotImplementedError naming the op when a needed VJP rule is missing.
    """
    joint = Graph()
    mapping: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.op is None:
            mapping[node] = joint.placeholder(node.name, node.meta)
        else:
            inputs = tuple(mapping[v] if isinstance(v, Node) else v for v in node.inputs)
            mapping[node] = joint.add_node(node.op, inputs, node.kwargs, node.meta)
    outputs = tuple(mapping[v] if isinstance(v, Node) else v for v in graph.output)
    primals = joint.placeholders
    targets = {primals[i] for i in diff_inputs if differentiable(primals[i].meta)}
    active = _active_nodes(joint, targets)

    cotangents: dict[Node, Node] = {}
    for position in tangent_outputs:
        leaf = outputs[position]
        tangent = joint.placeholder(f"tangent_{position}", leaf.meta)
        if isinstance(leaf, Node) and leaf in active and differentiable(leaf.meta):
            _accumulate(joint, cotangents, leaf, tangent)
    forward_nodes = [n for n in joint.nodes if n.op is not None and n in mapping.values()]
    for node in reversed(forward_nodes):
        cotangent = cotangents.get(node)
        if cotangent is None:
            continue
        wanted = tuple(
            isinstance(v, Node) and v in active and differentiable(v.meta) for v in node.inputs
        )
        if not any(wanted):
            continue
        assert node.op is not None
        rule = get_vjp(node.op)
        if rule is None:
            raise NotImplementedError(
                f"no VJP rule for op {node.op.name!r} (in `{node.format()}`); "
                "it cannot be differentiated yet"
            )
        grads = rule(VjpContext(joint, node, cotangent, wanted))
        for value, want, grad in zip(node.inputs, wanted, grads, strict=False):
            if want and grad is not None:
                meta = value.meta
                assert isinstance(meta, ArrayMeta)
                _accumulate(joint, cotangents, value, fit_cotangent(joint, grad, meta))
    results: list[Any] = []
    for index in diff_inputs:
        primal = primals[index]
        if not differentiable(primal.meta):
            results.append(None)
        elif primal in cotangents:
            results.append(cotangents[primal])
        else:
            meta = primal.meta
            assert isinstance(meta, ArrayMeta)
            results.append(joint.call(get_op("zeros"), shape=meta.shape, dtype=meta.dtype))
    joint.output = (outputs, tuple(results))
    return JointGraph(joint, len(primals), len(outputs), tuple(tangent_outputs), tuple(diff_inputs))


def _active_nodes(graph: Graph, targets: set[Node]) -> set[Node]:
    # Nodes whose value depends on a differentiated input.
    active = set(targets)
    for node in graph.nodes:
        if any(v in active for v in node.input_nodes()):
            active.add(node)
    return active


def _accumulate(graph: Graph, cotangents: dict[Node, Node], node: Node, value: Node) -> None:
    previous = cotangents.get(node)
    cotangents[node] = value if previous is None else graph.call(get_op("add"), previous, value)
