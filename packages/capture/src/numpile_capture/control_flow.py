"""Structured control flow: loops that stay loops in the graph.

A `for_loop` node runs its body subgraph once per value of a Python `range`; every
backend reads the same node (the eager interpreter runs the body per iteration):

    graph(x: float64[5]):
      v0 = for_loop(0, 5, 1, 0.0, x, body=<graph>, carried=1)  # tuple
        body(i: int, s: float, x: float64[5]):
          v0 = element_at(x, i, index=(scalars[0],))  # float64[]
          v1 = multiply(v0, v0)  # float64[]
          v2 = add(s, v1)  # float64[]
          return (v2,)
      v1 = loop_output(v0, index=0)  # float64[]
      return v1

Inputs of a `for_loop` node: `start`, `stop`, `step` (ints or int nodes: a trip count is
a run-time value, never a guard), the initial carried values, then the loop-invariant
inputs. The body's placeholders are the index, the carried values and the invariants,
in that order; its output is the tuple of the new carried values, whose metadata equals
the carried placeholders' (capture iterates the types to a fixpoint). Arrays the body
writes in place are inputs the node declares in its op's `mutates`: they stay in place,
never copied per iteration. The node's value is the tuple of the final carried values
(the initial ones, untouched, for an empty range); `loop_output` projects one of them.

Invariants: a body reads only its own placeholders and nodes; the structural hash and
the printed graph cover bodies (they print as indented blocks).
"""

from __future__ import annotations

from typing import Any

import attrs

from .graph import Graph, Node
from .meta import ArrayMeta, ScalarMeta
from .op import Op, OpKind, register_op


def _for_loop_meta(*inputs: Any, body: Graph, carried: int) -> ScalarMeta:
    if len(body.placeholders) != 1 + len(inputs) - 3:
        raise ValueError(
            f"for_loop: the body takes {len(body.placeholders)} inputs, "
            f"the node gives {1 + len(inputs) - 3}"
        )
    return ScalarMeta(tuple)


def _for_loop_impl(
    start: Any, stop: Any, step: Any, *values: Any, body: Graph, carried: int
) -> Any:
    # Late import: the interpreter runs graphs, this module only describes them.
    from .interpreter import run_graph

    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    state = tuple(values[:carried])
    invariants = values[carried:]
    for index in range(start, stop, step):
        state = tuple(run_graph(body, (index, *state, *invariants)))
    return state


for_loop = register_op(
    Op(
        "for_loop",
        OpKind.EXTERN,
        _for_loop_meta,
        _for_loop_impl,
        doc="a Python for loop over range(start, stop, step) with a body subgraph",
    )
)

# NOTE: one op per set of written input positions (they differ per loop); all share the
# name, meta rule and implementation of the registered `for_loop`.
_WRITING_FOR_LOOPS: dict[tuple[int, ...], Op] = {(): for_loop}


def for_loop_op(mutates: tuple[int, ...]) -> Op:
    """The `for_loop` op of a loop that writes its inputs at `mutates` in place.

    >>> for_loop_op((4,)).mutates, for_loop_op(()) is for_loop
    ((4,), True)
    """
    found = _WRITING_FOR_LOOPS.get(mutates)
    if found is None:
        found = attrs.evolve(for_loop, mutates=mutates)
        _WRITING_FOR_LOOPS[mutates] = found
    return found


def _loop_output_meta(loop: Any, *, index: int) -> ArrayMeta | ScalarMeta:
    raise TypeError("loop_output's metadata comes from its loop's body (see add_loop)")


def _loop_output_impl(results: tuple[Any, ...], *, index: int) -> Any:
    return results[index]


loop_output = register_op(
    Op(
        "loop_output",
        OpKind.EXTERN,
        _loop_output_meta,
        _loop_output_impl,
        doc="one final carried value of a loop",
    )
)


def is_loop(node: Node) -> bool:
    """Whether `node` applies a `for_loop` (whichever inputs it writes)."""
    return node.op is not None and node.op.name == "for_loop"


def has_loops(graph: Graph) -> bool:
    """Whether `graph` holds a loop node (backends that lower op by op check this first).

    >>> has_loops(Graph())
    False
    """
    return any(is_loop(node) for node in graph.nodes)


def add_loop(
    graph: Graph,
    bounds: tuple[Any, Any, Any],
    carried: list[Any],
    invariants: list[Any],
    body: Graph,
    mutates: tuple[int, ...],
) -> list[Node]:
    """Add a `for_loop` node and one `loop_output` per carried value; return the outputs.

    `body`'s output metadata gives the outputs' (the carried placeholders' equal them).
    """
    inputs = (*bounds, *carried, *invariants)
    meta = _for_loop_meta(*inputs, body=body, carried=len(carried))
    params = {"body": body, "carried": len(carried)}
    node = graph.add_node(for_loop_op(mutates), inputs, params, meta)
    metas = [value.meta for value in body.placeholders[1 : 1 + len(carried)]]
    return [
        graph.add_node(loop_output, (node,), {"index": k}, meta) for k, meta in enumerate(metas)
    ]
