"""The stacks of a loop VJP: one row per iteration, as many rows as the loop's trip count.

The loop VJP (`vjp_loop`) writes the carried values entering iteration k of a loop over
`range(start, stop, step)` into `stack[k]` and reads them back in reverse. The trip count
is `len(range(start, stop, step))`: a Python int when the bounds are ints, else an int node
computed in the graph from the bounds (`ceil((stop - start) / step)`, clamped at 0; `step`
an int, so that `range`'s own `ValueError` for a zero step stays the loop's). Such stacks
are allocated by a `zeros` node whose first size is that node (a `ScalarSlot`) and whose
symbolic length is a fresh size symbol `u<k>` (`0 <= u`, no upper bound) that the compiled
code binds from the allocation: one graph serves every trip count.

    >>> from numpile_capture import ScalarMeta
    >>> graph = Graph()
    >>> n = graph.placeholder("n", ScalarMeta(int))
    >>> count = trip_count(graph, (0, n, 1))
    >>> [str(meta) for meta in stack_metas(count, [ArrayMeta((4,), "float64")])]
    ['float64[u3, 4]']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from numpile_capture import ArrayMeta, Graph, Node, ScalarSlot, get_op
from numpile_capture.ops.extern import unbacked_size

__all__ = [
    "LoopStacks",
    "TripCount",
    "forward_index",
    "iteration_of",
    "read_row",
    "stack_metas",
    "trip_count",
    "write_row",
    "zero_stacks",
]


@attrs.frozen(eq=False)
class TripCount:
    """A loop's trip count: `value` (an int, or an int node of the graph) and `size`, the
    same as a stack's first size (the int, or the size symbol the stacks' allocation binds).

        >>> TripCount(3, 3).value
        3
    """

    value: int | Node
    size: Any


@attrs.frozen(eq=False)
class LoopStacks:
    """What the reverse loop of a loop VJP reads, kept with the loop that stacked it: the
    forward body, the loop's bounds and trip count, the stacks (the stacking loop's outputs
    after the carried values) and how many invariants the forward body reads (the stacking
    loop's inputs after its carried values and stacks). A sweep through a stacking loop
    that has it appends the reverse loop alone (`vjp` in compiled code, whose forward loop
    is that stacking loop).
    """

    body: Graph
    bounds: tuple[Any, Any, int]
    trips: TripCount
    stacks: tuple[Node, ...]
    invariants: int

    def mapped(self, mapping: Mapping[Node, Any]) -> LoopStacks:
        """The same with each node of `mapping` replaced by what stands for it."""

        def each(value: Any) -> Any:
            return mapping.get(value, value) if isinstance(value, Node) else value

        start, stop, step = self.bounds
        trips = TripCount(each(self.trips.value), self.trips.size)
        stacks = tuple(each(stack) for stack in self.stacks)
        return LoopStacks(
            self.body, (each(start), each(stop), step), trips, stacks, self.invariants
        )


def trip_count(graph: Graph, bounds: tuple[Any, Any, Any]) -> TripCount:
    """`len(range(*bounds))`: an int for int bounds, else int nodes appended to `graph`.

    `bounds[2]` (the step) must be a nonzero int.

        >>> trip_count(Graph(), (7, -1, -2)).value
        4
    """
    start, stop, step = bounds
    if type(step) is not int or step == 0:
        raise ValueError(f"a loop VJP needs a nonzero int step, got {step}")
    if type(start) is int and type(stop) is int:
        count = len(range(start, stop, step))
        return TripCount(count, count)
    # ceil(d / step) of d = stop - start is (d + step - 1) // step for step > 0 and
    # (-d - step - 1) // -step for step < 0; a negative result (an empty range) becomes 0.
    if step > 0:
        span = _py(graph, "sub", stop, start)
        numerator = _py(graph, "add", span, step - 1)
    else:
        span = _py(graph, "sub", start, stop)
        numerator = _py(graph, "add", span, -step - 1)
    count = _py(graph, "floordiv", numerator, abs(step))
    clamped = _py(graph, "mul", count, _py(graph, "gt", count, 0))
    assert isinstance(clamped, Node)
    return TripCount(clamped, unbacked_size(f"u{len(graph.nodes)}", 0, None))


def _py(graph: Graph, operator: str, left: Any, right: Any) -> Any:
    # A Python operator on ints: folded where both are ints or `right` leaves `left` as
    # it is, else a `py_binary` node.
    if type(left) is int and type(right) is int:
        return get_op("py_binary").impl(left, right, operator=operator)
    if (operator, right) in _IDENTITIES:
        return left
    return graph.call(get_op("py_binary"), left, right, operator=operator)


# NOTE: (operator, right operand) pairs that leave the left operand as it is.
_IDENTITIES = {("add", 0), ("sub", 0), ("floordiv", 1), ("mul", 1)}


def stack_metas(trips: TripCount, metas: Sequence[Any]) -> list[ArrayMeta]:
    """The metadata of the stacks of values of `metas` (arrays): `(trips, *shape)`."""
    return [ArrayMeta((trips.size, *meta.shape), meta.dtype) for meta in metas]


def zero_stacks(graph: Graph, trips: TripCount, metas: Sequence[ArrayMeta]) -> list[Node]:
    """One zero-filled stack per meta of `stack_metas`, appended to `graph`."""
    if type(trips.value) is int:
        return [graph.call(get_op("zeros"), shape=meta.shape, dtype=meta.dtype) for meta in metas]
    rows = ScalarSlot(0, trips.size)
    return [
        graph.call(get_op("zeros"), trips.value, shape=(rows, *meta.shape[1:]), dtype=meta.dtype)
        for meta in metas
    ]


def iteration_of(graph: Graph, index: Node, start: Any, step: int) -> Any:
    """The iteration number of loop index `index`: `(index - start) // step` (nodes of
    `graph`, a loop body; `start` an int or a placeholder of the body)."""
    if (start, step) == (0, 1):
        return index
    shifted = graph.call(get_op("py_binary"), index, start, operator="sub")
    return graph.call(get_op("py_binary"), shifted, step, operator="floordiv")


def forward_index(graph: Graph, position: Node, start: Any, step: int) -> Any:
    """The loop index of iteration `position`: `start + position * step`."""
    if (start, step) == (0, 1):
        return position
    scaled = graph.call(get_op("py_binary"), position, step, operator="mul")
    return graph.call(get_op("py_binary"), scaled, start, operator="add")


def read_row(graph: Graph, stack: Node, position: Any) -> Node:
    """`stack[position]`: a view of the row, or the element of a stack of 0-d values."""
    meta = stack.meta
    assert isinstance(meta, ArrayMeta)
    name = "element_at" if len(meta.shape) == 1 else "getitem_at"
    return graph.call(get_op(name), stack, position, index=(ScalarSlot(0),))


def write_row(graph: Graph, stack: Node, value: Node, position: Any) -> Node:
    """`stack[position] = value`, in place."""
    return graph.call(get_op("setitem_at"), stack, value, position, index=(ScalarSlot(0),))
