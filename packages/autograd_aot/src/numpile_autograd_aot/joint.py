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

from .detached_floats import detached_float, detached_float_error
from .loop_sharing import share_forward_loops
from .loop_stacks import LoopStacks
from .vjp_table import VjpContext, differentiable, fit_cotangent, get_vjp, missing_rule_error

__all__ = ["JointGraph", "append_backward", "build_joint", "input_cotangent"]


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
            if node in graph.locations:  # NumPy's warnings name the forward's lines
                joint.locations[mapping[node]] = graph.locations[node]
    outputs = tuple(mapping[v] if isinstance(v, Node) else v for v in graph.output)
    primals = joint.placeholders
    targets = [primals[i] for i in diff_inputs]
    seeds: list[tuple[Any, Node]] = []
    for position in tangent_outputs:
        leaf = outputs[position]
        seeds.append((leaf, joint.placeholder(f"tangent_{position}", leaf.meta)))
    copied = set(mapping.values())
    forward_nodes = [n for n in joint.nodes if n.op is not None and n in copied]
    shared: dict[Node, Node] = {}
    cotangents = append_backward(joint, forward_nodes, targets, seeds, shared_loops=shared)
    results = [input_cotangent(joint, cotangents, primals[index]) for index in diff_inputs]
    joint.output = (outputs, tuple(results))
    # A loop whose VJP stacks its carried values runs once: the stacking loop stands for it.
    share_forward_loops(joint, shared)
    return JointGraph(joint, len(primals), len(outputs), tuple(tangent_outputs), tuple(diff_inputs))


def append_backward(
    graph: Graph,
    forward_nodes: Sequence[Node],
    targets: Sequence[Node],
    seeds: Sequence[tuple[Any, Node]],
    *,
    shared_loops: dict[Node, Node] | None = None,
    stacked_loops: dict[Node, LoopStacks] | None = None,
) -> dict[Node, Node]:
    """Append to `graph` the reverse sweep over `forward_nodes` (in topological order) from
    `seeds` (pairs of a forward value and its cotangent) back to `targets`; return the
    cotangent of every value reached (`input_cotangent` reads a target's).

    `shared_loops` collects the forward loops a backward loop also computes (forward loop
    -> that loop, see `VjpContext.shared_loops`) for `share_forward_loops`, and
    `stacked_loops` the stacks of each such loop, which a sweep through it reads.

    Raises NotImplementedError naming the op when a needed VJP rule is missing.

        >>> cotangents = append_backward(graph, graph.nodes, [x], [(loss, one)])  # doctest: +SKIP
    """
    wanted_targets = {node for node in targets if differentiable(node.meta)}
    active = _active_nodes(forward_nodes, wanted_targets)
    cotangents: dict[Node, Node] = {}
    # NOTE: a tuple-valued node (np.linalg.svd) -> item index -> the cotangent of that item
    # (its `result_item` nodes pass theirs on; the tuple's rule reads them as `items`).
    items: dict[Node, dict[int, Node]] = {}
    for leaf, seed in seeds:
        if isinstance(leaf, Node) and leaf in active and differentiable(leaf.meta):
            _accumulate(graph, cotangents, leaf, seed)
    for node in reversed(forward_nodes):
        cotangent = cotangents.get(node)
        if cotangent is not None and _is_item(node) and node.inputs[0] in active:
            slot = items.setdefault(node.inputs[0], {})
            _accumulate(graph, slot, node.kwargs["index"], cotangent)
            continue
        if cotangent is None and node in items:
            cotangent = next(iter(items[node].values()))
        if cotangent is None:
            continue
        wanted = tuple(
            isinstance(v, Node) and v in active and differentiable(v.meta) for v in node.inputs
        )
        for value in node.inputs:
            conversion = detached_float(value, active) if isinstance(value, Node) else None
            if conversion is not None:
                raise detached_float_error(graph, conversion, node)
        if not any(wanted):
            continue
        assert node.op is not None
        rule = get_vjp(node.op)
        if rule is None and node.op.name in _LOOPS:
            # Late import: vjp_loop registers the for_loop rule and imports this module.
            from .vjp_loop import loop_error

            raise loop_error(graph, node, f"no VJP for a {node.op.name} of this kind")
        if rule is None:
            raise missing_rule_error(node, "reverse")
        shared = {} if shared_loops is None else shared_loops
        stacked = {} if stacked_loops is None else stacked_loops
        context = VjpContext(graph, node, cotangent, wanted, items.get(node, {}), shared, stacked)
        grads = rule(context)
        for value, want, grad in zip(node.inputs, wanted, grads, strict=False):
            if want and grad is not None:
                meta = value.meta
                assert isinstance(meta, ArrayMeta)
                _accumulate(graph, cotangents, value, fit_cotangent(graph, grad, meta))
    return cotangents


def input_cotangent(graph: Graph, cotangents: dict[Node, Node], target: Node) -> Node | None:
    """The cotangent of `target` after `append_backward`: None for an integer or bool value,
    zeros (added to `graph`) when no seed depends on it.

        >>> input_cotangent(graph, cotangents, x)  # doctest: +SKIP
    """
    if not differentiable(target.meta):
        return None
    found = cotangents.get(target)
    if found is not None:
        return found
    meta = target.meta
    assert isinstance(meta, ArrayMeta)
    return graph.call(get_op("zeros"), shape=meta.shape, dtype=meta.dtype)


def _active_nodes(nodes: Sequence[Node], targets: set[Node]) -> set[Node]:
    # Nodes whose value depends on a differentiated input.
    active = set(targets)
    for node in nodes:
        if any(v in active for v in node.input_nodes()):
            active.add(node)
    return active


def _is_item(node: Node) -> bool:
    # An item of a tuple-valued node (its cotangent goes to the tuple's rule): a loop's
    # carried values are the items of the loop node.
    return node.op is not None and node.op.name in ("result_item", "loop_output")


# NOTE: control-flow ops; one without a VJP rule (a while loop, a for loop writing its
# inputs in place) is an error naming the loop (vjp_loop.loop_error).
_LOOPS = ("for_loop", "while_loop", "cond")


def _accumulate(graph: Graph, cotangents: dict[Any, Node], node: Any, value: Node) -> None:
    previous = cotangents.get(node)
    cotangents[node] = value if previous is None else graph.call(get_op("add"), previous, value)
