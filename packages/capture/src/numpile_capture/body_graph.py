"""A traced body as the graph a loop (or `cond`) node holds.

A body is traced into a graph of its own that reads nodes of the enclosing graphs
directly; `lift_body` makes each of them a placeholder after the body's own (the node's
loop-invariant inputs), `peeled_first` lifts a loop's first-iteration body over the same
ones, and `written_inputs` finds the inputs a body writes in place (the node's
`mutates`).

    >>> from numpile_capture import ArrayMeta, Graph, get_op
    >>> outer = Graph()
    >>> x = outer.placeholder("x", ArrayMeta((3,), "float64"))
    >>> traced = Graph()
    >>> i = traced.placeholder("i", ArrayMeta((), "float64"))
    >>> traced.output = traced.call(get_op("add"), x, i)
    >>> body, invariants = lift_body(traced, 1)
    >>> [node.name for node in body.placeholders], [node.name for node in invariants]
    (['i', 'x'], ['x'])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .graph import Graph, Node
from .op import OpKind
from .pytree import tree_flatten, tree_map


def peeled_first(
    traced: tuple[Graph | None, Graph], own: int
) -> tuple[Graph | None, Graph, list[Node]]:
    """The first iteration's body (None when the types do not change) and the body, lifted
    over the same invariants. Carried values that start as Python scalars and become NumPy
    scalars (`s = 0.0; s = s * 0.5 - x[i]`) follow Python in the first iteration and NumPy
    after it, as eager does: the first body is traced on the initial types."""
    first, body = traced
    external = external_nodes(body)
    if first is not None:
        external += [node for node in external_nodes(first) if node not in external]
    lifted, invariants = lift_body(body, own, external)
    lifted_first = None if first is None else lift_body(first, own, external)[0]
    return lifted_first, lifted, invariants


def external_nodes(traced: Graph) -> list[Node]:
    """The nodes of enclosing graphs `traced` reads, in the order it first reads them."""
    inside = set(traced.nodes)
    external: list[Node] = []
    for node in traced.nodes:
        for value in _leaves((node.inputs, node.kwargs)):
            if value not in inside and value not in external:
                external.append(value)
    for value in _leaves(traced.output):
        if value not in inside and value not in external:
            external.append(value)
    return external


def lift_body(
    traced: Graph, own: int, external: list[Node] | None = None
) -> tuple[Graph, list[Node]]:
    """`traced` with every node of an enclosing graph it reads (or every node of
    `external`) made a placeholder after its first `own` placeholders; returns it with
    those nodes (the loop-invariant inputs)."""
    if external is None:
        external = external_nodes(traced)
    body = Graph()
    mapping: dict[Node, Node] = {}
    for placeholder in traced.placeholders[:own]:
        mapping[placeholder] = body.placeholder(placeholder.name, placeholder.meta)
    for value in external:
        mapping[value] = body.placeholder(value.name, value.meta)

    def rename(value: Any) -> Any:
        return mapping.get(value, value) if isinstance(value, Node) else value

    for node in traced.nodes:
        if node.op is None:
            continue
        inputs = tuple(tree_map(rename, list(node.inputs)))
        params = {key: tree_map(rename, value) for key, value in node.params}
        copy = body.add_node(node.op, inputs, params, node.meta)
        mapping[node] = copy
        line = traced.locations.get(node)
        if line is not None:
            body.locations[copy] = line
    body.output = tree_map(rename, traced.output)
    return body, external


def _leaves(tree: Any) -> Iterator[Node]:
    leaves, _ = tree_flatten(tree)
    for leaf in leaves:
        if isinstance(leaf, Node):
            yield leaf


def written_inputs(body: Graph, offset: int = 0) -> tuple[int, ...] | None:
    """The input positions (a body's placeholder k is input `offset + k`) of the arrays
    `body` writes in place, through views, selections and the writes of nested loops;
    None where a written array may be an input by a way not followed (an array a loop, a
    `cond` or an extern call handed back). An array the body made itself writes none.

    >>> written_inputs(Graph())
    ()
    """
    placeholders = body.placeholders
    written: set[int] = set()
    for node in body.nodes:
        if node.op is None:
            continue
        for position in node.op.mutates:
            if position >= len(node.inputs):
                return None
            root = node.inputs[position]
            while (
                isinstance(root, Node)
                and root.op is not None
                and root.op.kind in (OpKind.VIEW, OpKind.MUTATION, OpKind.INDEXING)
            ):
                root = root.inputs[0]
            if not isinstance(root, Node):
                return None
            if root.op is None and root in placeholders:
                written.add(offset + placeholders.index(root))
            elif not _fresh(root):
                return None
    return tuple(sorted(written))


# NOTE: the op kinds whose results are new arrays: a write into one writes no input.
_FRESH_KINDS = frozenset({OpKind.POINTWISE, OpKind.REDUCTION, OpKind.SCAN})


def _fresh(value: Node) -> bool:
    # An array made inside the graph: no input's memory. NOTE: `np.array(x, copy=False)`
    # may hand back `x` itself, so only a copying creation counts.
    if value.op is None:
        return False
    if value.op.name == "copy":
        return True
    if value.op.kind is OpKind.CREATION:
        return dict(value.params).get("copy", True) is True
    return value.op.kind in _FRESH_KINDS


def written_by(bodies: Iterable[Graph | None], offset: int) -> tuple[int, ...] | None:
    """The input positions of the arrays any of `bodies` (a loop's body and its first
    iteration's, None when it has none) writes in place, as in `written_inputs`; None
    where one of them may write an input by a way not followed."""
    slots: set[int] = set()
    for body in bodies:
        found = None if body is None else written_inputs(body, offset)
        if body is not None and found is None:
            return None
        slots.update(found or ())
    return tuple(sorted(slots))


#: Why a loop or `if` whose body may write an input by a way not followed is not kept.
UNFOLLOWED_WRITE = (
    "its body writes in place an array that may be an input by a way capture does not "
    "follow (one a loop, an if or an extern call handed back)"
)
