"""Loop reports: the inductor's records of how it runs each loop, at the loop's line.

Wherever the inductor decides how a `for_loop` or `while_loop` node runs (one C loop nest,
C calling the body's kernels, a host loop, op by op with NumPy, a first iteration apart),
it calls `report_loop(node, tier, reason)`: a `numpile_capture.LoopTier` located at the
line the node was captured from, found in the graph being compiled (`locating_loops`,
opened by `backend._compile`). The records of a graph are stored with its module in the
graph cache and recorded again on a cache hit, so `explain` shows them either way.

A C loop that hands a call to NumPy at run time (an int64 overflow, a failed check, a
flag its types need) calls its extern: `counting_numpy_runs` wraps that extern so each
such run is recorded, counted (`loop_c_handed_to_numpy` on `numpile_runtime.counters()`)
and said once per compiled graph on `numpile.perf_hints`.

    >>> with locating_loops(graph):  # doctest: +SKIP
    ...     report_loop(node, C_LOOP)
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpile_runtime as rt
from numpile_capture import (
    NUMPY_AT_RUN_TIME,
    Graph,
    LoopTier,
    Node,
    SourceLine,
    is_loop,
    is_while_loop,
    record_loop_tier,
)

__all__ = [
    "counting_numpy_runs",
    "locating_loops",
    "loop_kind",
    "report_every_loop",
    "report_loop",
]

perf_log = logging.getLogger("numpile.perf_hints")

_state = threading.local()


@contextlib.contextmanager
def locating_loops(graph: Graph) -> Iterator[None]:
    """Inside the block, `report_loop` finds a loop node's line in `graph` (innermost
    block first), by the node itself or by its name (functionalization keeps names)."""
    stack: list[Graph] = getattr(_state, "graphs", [])
    _state.graphs = [*stack, graph]
    try:
        yield
    finally:
        _state.graphs = stack


def loop_kind(op_name: str) -> str:
    """The kind of loop a node's op runs, as `explain` names it: "for" or "while".

    >>> loop_kind("while_loop"), loop_kind("for_loop")
    ('while', 'for')
    """
    return "while" if op_name.startswith("while") else "for"


def report_loop(node: Node, tier: str, reason: str | None = None) -> None:
    """Record that the loop `node` runs as `tier`, because `reason` (None: nothing faster).

    >>> report_loop(node, OP_BY_OP, "its shapes follow the index")  # doctest: +SKIP
    """
    line = _line_of(node)
    kind = loop_kind(node.op.name if node.op is not None else "")
    filename = None if line is None else line.filename
    lineno = None if line is None else line.lineno
    record_loop_tier(LoopTier(kind, filename, lineno, tier, reason))


def report_every_loop(graph: Graph, tier: str, reason: str) -> None:
    """Record that every loop node of `graph` (not those nested in bodies) runs as `tier`:
    the whole graph runs so (no C compiler, an input in foreign byte order).

    >>> report_every_loop(graph, OP_BY_OP, "no C compiler was found")  # doctest: +SKIP
    """
    with locating_loops(graph):
        for node in graph.nodes:
            if is_loop(node) or is_while_loop(node):
                report_loop(node, tier, reason)


def _line_of(node: Node) -> SourceLine | None:
    graphs: list[Graph] = getattr(_state, "graphs", [])
    for graph in reversed(graphs):
        line = graph.locations.get(node)
        if line is not None:
            return line
    for graph in reversed(graphs):
        for other in graph.nodes:
            if other.name == node.name and other.op is node.op:
                return graph.locations.get(other)
    return None


def counting_numpy_runs(
    fn: Callable[..., Any], kind: str, line: SourceLine | None
) -> Callable[..., Any]:
    """`fn`, the extern a C loop calls to hand a call to NumPy, recording each such run.

    >>> counting_numpy_runs(print, "for", None)  # doctest: +SKIP
    """
    filename = None if line is None else line.filename
    lineno = None if line is None else line.lineno
    reason = "a check of its C loop failed (an int64 overflow, a bound, a type or a flag)"
    record = LoopTier(kind, filename, lineno, NUMPY_AT_RUN_TIME, reason)
    said: list[bool] = []

    def run(*args: Any) -> Any:
        rt.count("loop_c_handed_to_numpy")
        record_loop_tier(record)
        if not said:
            said.append(True)
            perf_log.info("%s; later runs are counted, not logged", record)
        return fn(*args)

    return run
