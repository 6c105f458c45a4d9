"""Partitioners: cut a joint graph into a forward graph and a backward graph.

The forward graph maps the primals to the forward outputs followed by the
*saved* values; the backward graph maps the saved values and the tangents to
the input cotangents. What is not saved but needed backward is recomputed
there from saved values.

- `default_partition` saves every forward value the backward reads.
- Values of a `checkpoint`ed call are recomputed in the backward by both (see
  `checkpoint.split_checkpoints`).
- `min_cut_partition` chooses what to save by a minimum cut (networkx max
  flow): each node costs its size in bytes to save; cheap ops (pointwise,
  views, creation) may be recomputed in the backward, while reductions,
  scans, indexing and extern calls (matmul, ...) are computed once in the
  forward. `memory_budget` below 1 lets it recompute those too when the
  saved bytes exceed that fraction of the default partition's.

    >>> part = min_cut_partition(joint)  # doctest: +SKIP
    >>> saved_bytes(part) < saved_bytes(default_partition(joint))  # doctest: +SKIP
    True
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import attrs

from numpile_capture import ArrayMeta, Graph, Node, OpKind

from .checkpoint import split_checkpoints
from .joint import JointGraph
from .subgraph import extract_graph, needed_nodes

log = logging.getLogger("numpile.autograd_aot")

__all__ = ["Partition", "default_partition", "min_cut_partition", "saved_bytes"]

# NOTE: ops of these kinds are cheap enough to recompute in the backward.
RECOMPUTABLE_KINDS = frozenset({OpKind.POINTWISE, OpKind.VIEW, OpKind.CREATION})
# NOTE: with a memory budget below 1, these become recomputable too (extern calls never).
BUDGET_RECOMPUTABLE_KINDS = RECOMPUTABLE_KINDS | {OpKind.REDUCTION, OpKind.SCAN, OpKind.INDEXING}

# Bytes assumed for a dimension whose size is symbolic.
_SYMBOLIC_DIM_HINT = 4096


@attrs.frozen(eq=False)
class Partition:
    """A forward graph `primals -> (fw outputs..., saved...)` and a backward graph
    `(saved..., tangents...) -> input cotangents`.
    """

    forward: Graph
    backward: Graph
    num_fw_outputs: int
    saved: tuple[Node, ...]

    @property
    def saved_names(self) -> tuple[str, ...]:
        return tuple(node.name for node in self.saved)

    def __str__(self) -> str:
        return f"# forward\n{self.forward}\n# backward\n{self.backward}"


def node_bytes(node: Node) -> int:
    """The size in bytes of a node's value (8 for a Python scalar).

    >>> from numpile_capture import Graph
    >>> g = Graph()
    >>> node_bytes(g.placeholder("x", ArrayMeta((2, 3), "float32")))
    24
    """
    meta = node.meta
    if not isinstance(meta, ArrayMeta):
        return 8
    dims = [d if isinstance(d, int) else _SYMBOLIC_DIM_HINT for d in meta.shape]
    return math.prod(dims) * meta.dtype.itemsize


def saved_bytes(partition: Partition) -> int:
    """Bytes the forward keeps alive for the backward (the saved values).

    >>> saved_bytes(default_partition(joint))  # doctest: +SKIP
    """
    return sum(node_bytes(node) for node in partition.saved)


@attrs.frozen
class _Roles:
    forward_needed: set[Node]
    backward_needed: set[Node]
    tangent_dependent: set[Node]
    grads: tuple[Any, ...]
    fw_outputs: tuple[Any, ...]


def _roles(joint: JointGraph) -> _Roles:
    fw_outputs, grads = joint.graph.output
    dependent = set(joint.tangents)
    for node in joint.graph.nodes:
        if any(v in dependent for v in node.input_nodes()):
            dependent.add(node)
    return _Roles(
        needed_nodes(fw_outputs), needed_nodes(grads), dependent, tuple(grads), tuple(fw_outputs)
    )


def _build(joint: JointGraph, roles: _Roles, saved: Sequence[Node]) -> Partition:
    order = {node: i for i, node in enumerate(joint.graph.nodes)}
    ordered = tuple(sorted(set(saved), key=order.__getitem__))
    forward = extract_graph(joint.graph, joint.primals, (*roles.fw_outputs, *ordered))
    backward = extract_graph(joint.graph, [*ordered, *joint.tangents], roles.grads)
    log.debug("partition saves %s", [node.name for node in ordered])
    return Partition(forward, backward, len(roles.fw_outputs), ordered)


def default_partition(joint: JointGraph) -> Partition:
    """Save every value of the forward (and every primal) that the backward reads.

    >>> default_partition(joint).saved_names  # doctest: +SKIP
    ('x', 'v0')
    """
    joint, recompute = split_checkpoints(joint)
    roles = _roles(joint)
    # Checkpointed values the backward reads are recomputed there, not saved.
    backward_part = (roles.backward_needed - roles.forward_needed) | (
        recompute & roles.backward_needed
    )
    grad_leaves = {leaf for leaf in roles.grads if isinstance(leaf, Node)}
    primals = set(joint.primals)
    saved = []
    for node in joint.graph.nodes:
        if node in backward_part and node not in primals:
            continue
        if node in roles.tangent_dependent:
            continue
        read_backward = any(node in user.input_nodes() for user in backward_part)
        if read_backward or (node in grad_leaves and node in roles.forward_needed):
            saved.append(node)
    return _build(joint, roles, saved)


def min_cut_partition(joint: JointGraph, *, memory_budget: float = 1.0) -> Partition:
    """Save what a minimum cut chooses: recompute cheap ops in the backward, save the rest.

    `memory_budget` (0..1): when the cut saves more than this fraction of the
    default partition's bytes, reductions, scans and indexing become
    recomputable too, then every op but extern calls.

    >>> min_cut_partition(joint, memory_budget=0.5)  # doctest: +SKIP
    """
    joint, recompute = split_checkpoints(joint)
    roles = _roles(joint)
    partition = _min_cut(joint, roles, RECOMPUTABLE_KINDS, recompute)
    if memory_budget < 1.0:
        limit = memory_budget * saved_bytes(default_partition(joint))
        if saved_bytes(partition) > limit:
            partition = _min_cut(joint, roles, BUDGET_RECOMPUTABLE_KINDS, recompute)
    return partition


def _min_cut(
    joint: JointGraph,
    roles: _Roles,
    recomputable: frozenset[OpKind],
    recompute: set[Node],
) -> Partition:
    import networkx as nx  # late import: only training graphs need it, and it is slow to load

    flow = nx.DiGraph()
    primals = set(joint.primals)
    candidates = [
        node
        for node in joint.graph.nodes
        if node not in roles.tangent_dependent
        and (node in roles.forward_needed or node in roles.backward_needed)
    ]
    candidate_set = set(candidates)
    users = joint.graph.users()
    grad_leaves = {leaf for leaf in roles.grads if isinstance(leaf, Node)}
    # NOTE: bytes first; among cuts saving equal bytes, prefer primals (the caller keeps them
    # alive anyway, and nothing extra runs in the forward), then fewer saved values.
    scale = len(candidates) + 1
    for node in candidates:
        name = node.name
        tie_break = 0 if node in primals else 1
        if node in recompute:
            flow.add_edge(f"{name}_in", f"{name}_out")  # checkpointed: never saved
        else:
            capacity = node_bytes(node) * scale + tie_break
            flow.add_edge(f"{name}_in", f"{name}_out", capacity=capacity)
        banned = node.op is not None and node.op.kind not in recomputable and node not in recompute
        if node in primals or (banned and node in roles.forward_needed):
            flow.add_edge("source", f"{name}_in")
        for user in users[node]:
            if user in candidate_set:
                flow.add_edge(f"{name}_out", f"{user.name}_in")
            elif user in roles.backward_needed:
                flow.add_edge(f"{name}_out", "sink")
        if node in grad_leaves:
            flow.add_edge(f"{name}_out", "sink")
    if "sink" not in flow or "source" not in flow:
        return _build(joint, roles, [])
    _, (reachable, _) = nx.minimum_cut(flow, "source", "sink")
    saved = [
        node
        for node in candidates
        if f"{node.name}_in" in reachable and f"{node.name}_out" not in reachable
    ]
    return _build(joint, roles, saved)
