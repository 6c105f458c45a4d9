"""Loop reports: the inductor's records of how it runs each loop, at the loop's line.

Wherever the inductor decides how a `for_loop` or `while_loop` node runs (one C loop nest,
C calling the body's kernels, a host loop, op by op with NumPy, a first iteration apart),
it calls `report_loop(node, tier, reason)`. Inside a graph's compile (`noting_loops`,
opened by `backend._compile`) that makes a `LoopNote`, which names the node: the notes are
stored with the module in the graph cache, and `record_notes` turns them into
`numpile_capture.LoopTier` records at the lines of the graph at hand, on a build and on
a cache hit alike (one graph text may come from two functions). Outside a compile (the
Triton backend) `report_loop` records a `LoopTier` at once, at the line the open
`locating_loops` / `located_at` blocks give.

A C loop that hands a call to NumPy at run time (an int64 overflow, a failed check, a
flag its types need) calls its extern: `counting_numpy_runs` wraps that extern so each
such run is recorded, counted (`loop_c_handed_to_numpy` on `numpile_runtime.counters()`)
and said once per compiled graph on `numpile.perf_hints`.

    >>> with noting_loops() as notes:  # doctest: +SKIP
    ...     report_loop(node, C_LOOP)
    >>> record_notes(graph, notes)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

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
    "LoopNote",
    "counting_numpy_runs",
    "noting_loops",
    "record_notes",
    "report_notes",
    "located_at",
    "line_of",
    "locating_loops",
    "loop_kind",
    "report_every_loop",
    "report_loop",
]

perf_log = logging.getLogger("numpile.perf_hints")

_state = threading.local()


@contextlib.contextmanager
def locating_loops(graph: Graph) -> Iterator[None]:
    """Inside the block, `line_of` finds a loop node's line in `graph` (innermost block
    first)."""
    with _located(graph):
        yield


@contextlib.contextmanager
def located_at(line: SourceLine | None) -> Iterator[None]:
    """Inside the block, a loop node no graph of a `locating_loops` block inside it holds
    is at `line` (the loop of a graph made of one nested loop, see `nested_loops`)."""
    with _located(line):
        yield


@contextlib.contextmanager
def _located(entry: Graph | SourceLine | None) -> Iterator[None]:
    stack: list[Graph | SourceLine | None] = getattr(_state, "graphs", [])
    _state.graphs = [*stack, entry]
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


@attrs.frozen
class LoopNote:
    """A loop decision made while a graph compiles: the loop node by name and op, the tier,
    and why not faster (stored in the graph cache; `record_notes` locates it).

    >>> LoopNote("v1", "for_loop", "one C loop nest").node_name
    'v1'
    """

    node_name: str
    op_name: str
    tier: str
    reason: str | None = None


@contextlib.contextmanager
def noting_loops() -> Iterator[list[LoopNote]]:
    """Collect, as `LoopNote`s, the `report_loop` calls made on this thread inside the
    block (the innermost block), instead of recording them.

    >>> with noting_loops() as notes:
    ...     pass
    >>> notes
    []
    """
    notes: list[LoopNote] = []
    stack: list[list[LoopNote]] = getattr(_state, "notes", [])
    _state.notes = [*stack, notes]
    try:
        yield notes
    finally:
        _state.notes = stack


def report_loop(node: Node, tier: str, reason: str | None = None) -> None:
    """Report that the loop `node` runs as `tier`, because `reason` (None: nothing faster).

    >>> report_loop(node, OP_BY_OP, "its shapes follow the index")  # doctest: +SKIP
    """
    note = LoopNote(node.name, node.op.name if node.op is not None else "", tier, reason)
    stack: list[list[LoopNote]] = getattr(_state, "notes", [])
    if stack:
        stack[-1].append(note)
        return
    record_loop_tier(_located_tier(note, line_of(node)))


def report_notes(notes: Sequence[LoopNote]) -> None:
    """Report `notes` again (kept from an inner `noting_loops` block: a decision that held).

    >>> report_notes([])
    """
    stack: list[list[LoopNote]] = getattr(_state, "notes", [])
    if stack:
        stack[-1].extend(notes)


def record_notes(graph: Graph, notes: Sequence[LoopNote]) -> None:
    """Record each of `notes` as a `LoopTier` at the line of its node in `graph` (or the
    line an open `located_at` block gives).

    >>> record_notes(graph, [LoopNote("v1", "for_loop", C_LOOP)])  # doctest: +SKIP
    """
    by_name = {(node.name, node.op.name): node for node in graph.nodes if node.op is not None}
    with locating_loops(graph):
        for note in notes:
            node = by_name.get((note.node_name, note.op_name))
            record_loop_tier(_located_tier(note, None if node is None else line_of(node)))


def _located_tier(note: LoopNote, line: SourceLine | None) -> LoopTier:
    filename = None if line is None else line.filename
    lineno = None if line is None else line.lineno
    return LoopTier(loop_kind(note.op_name), filename, lineno, note.tier, note.reason)


def report_every_loop(graph: Graph, tier: str, reason: str) -> None:
    """Record that every loop node of `graph` (not those nested in bodies) runs as `tier`:
    the whole graph runs so (no C compiler, an input in foreign byte order).

    >>> report_every_loop(graph, OP_BY_OP, "no C compiler was found")  # doctest: +SKIP
    """
    with locating_loops(graph):
        for node in graph.nodes:
            if is_loop(node) or is_while_loop(node):
                report_loop(node, tier, reason)


def line_of(node: Node) -> SourceLine | None:
    """The line the loop `node` was captured from, as the open `locating_loops` and
    `located_at` blocks tell (None: unknown).

    >>> with locating_loops(graph):  # doctest: +SKIP
    ...     line_of(node).lineno
    5
    """
    stack: list[Graph | SourceLine | None] = getattr(_state, "graphs", [])
    for entry in reversed(stack):
        if not isinstance(entry, Graph):
            return entry
        line = entry.locations.get(node)
        if line is not None:
            return line
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
