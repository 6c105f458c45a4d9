"""The unroll budget: how many graph nodes a loop run at capture time may add.

A loop that capture does not keep as one loop node (see `loop_capture`: a graph break in
its body, a guard on the index its bounds do not prove, a carried array whose shape
changes), a `for` over a list or tuple, and a `while` on values known now all run at
capture time: each iteration adds its nodes to the graph. The trip count alone does not
bound what that costs: 300 iterations of a forward substitution unrolled into a graph of
5,000 nodes, whose C module took GCC minutes and gigabytes. So each frame counts the
nodes (with those of loop bodies in them) a loop adds from its first backward jump on;
past `MAX_UNROLLED_NODES` capture raises `UnrollBudgetExceeded` there, which breaks the
graph at the loop's head (`Frame.jump`): the graph holds the code before the loop, and the
loop runs in Python with its body compiled once as a resume function whose loop index is
a run-time input (see `graph_breaks`). `explain` and the `graph_breaks` log name the loop,
its line and the count.

    >>> budget = UnrollBudget()
    >>> from numpile_capture.graph import Graph
    >>> budget.back_jump(Graph(), source=9, head=2) is None
    True
"""

from __future__ import annotations

from typing import Any

import attrs

from .capture_result import Unsupported
from .graph import Graph, Node

# NOTE: GCC's time grows faster than the graph: an unrolled loop of 50 extern-heavy
# nodes made a 995-line `call` function and 3.8 s of GCC, 114 nodes 2,083 lines and
# 16.8 s (docs/status.md, issue 23). A kept loop is one node, so this bounds only loops
# that capture could not keep; a short unrolled loop (a few layers, a 3-step stencil)
# stays one graph.
MAX_UNROLLED_NODES = 128


class UnrollBudgetExceeded(Unsupported):
    """A loop run at capture time added more than `MAX_UNROLLED_NODES` nodes."""


@attrs.define
class UnrollBudget:
    """Per frame: the graph's weight at each loop head's first backward jump."""

    _entries: dict[int, tuple[Graph, int]] = attrs.field(factory=dict)
    # head -> (`Tracer.array_work` at its first backward jump, backward jumps since)
    _work: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    _weights: dict[int, tuple[Graph, int, int]] = attrs.field(factory=dict)
    _reasons: dict[int, str] = attrs.field(factory=dict)

    def not_kept(self, head: int, reason: str) -> None:
        """Remember why the loop at `head` was not kept (for the message past the budget)."""
        self._reasons[head] = reason

    def reason(self, head: int) -> str:
        """`(why it was not kept) ` for the loop at `head`, or ""."""
        why = self._reasons.get(head)
        return f"({why}) " if why else ""

    def back_jump(self, graph: Graph, *, source: int, head: int, work: int = 0) -> int | None:
        """Note a backward jump from instruction `source` to `head` while tracing into
        `graph` (`work`: `Tracer.array_work` now): the nodes the loop added since its first
        backward jump when that is past the budget, else None. Loops nested inside this one
        start counting again."""
        for inner in [h for h in self._entries if head < h <= source]:
            del self._entries[inner]
            self._work.pop(inner, None)
        weight = self._weight(graph)
        entry = self._entries.get(head)
        if entry is None or entry[0] is not graph or weight < entry[1]:
            self._entries[head] = (graph, weight)
            self._work[head] = (work, 0)
            return None
        first, jumps = self._work.get(head, (work, 0))
        self._work[head] = (first, jumps + 1)
        added = weight - entry[1]
        return added if added > MAX_UNROLLED_NODES else None

    def work_per_iteration(self, head: int, work: int) -> int:
        """The array work (`body_work`) an unrolled iteration of the loop at `head` traced
        on average since its first backward jump, `work` being `Tracer.array_work` now.

            >>> budget = UnrollBudget()
            >>> g = Graph()
            >>> budget.back_jump(g, source=9, head=2, work=10)
            >>> budget.back_jump(g, source=9, head=2, work=50)
            >>> budget.work_per_iteration(2, 50)
            40
        """
        first, jumps = self._work.get(head, (work, 0))
        return (work - first) // max(jumps, 1)

    def _weight(self, graph: Graph) -> int:
        # Counted once per node: graphs only grow while traced (a fallback that drops
        # nodes shrinks the list, and the count starts over).
        counted, weight = 0, 0
        known = self._weights.get(id(graph))
        if known is not None and known[0] is graph and known[1] <= len(graph.nodes):
            counted, weight = known[1], known[2]
        for node in graph.nodes[counted:]:
            weight += node_weight(node)
        self._weights[id(graph)] = (graph, len(graph.nodes), weight)
        return weight


def node_weight(node: Node) -> int:
    """1 for a node, plus the nodes of the subgraphs (loop bodies, branches) it holds.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> g = Graph()
    >>> node_weight(g.call(get_op("sin"), g.placeholder("a", ArrayMeta((2,), "float64"))))
    1
    """
    return 1 + sum(_subgraph_weight(value) for _, value in node.params)


def _subgraph_weight(value: Any) -> int:
    if isinstance(value, Graph):
        return sum(node_weight(node) for node in value.nodes)
    if isinstance(value, tuple):
        return sum(_subgraph_weight(item) for item in value)
    return 0
