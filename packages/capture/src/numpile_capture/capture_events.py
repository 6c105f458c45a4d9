"""Capture events: what each compile produced, for `explain` and tests.

`recording_captures()` collects one `CaptureEvent` per capture on this
thread: the graph (None when there was nothing to compile), its guards and,
for a graph break or an eager fallback, the reason and the user's line.

    >>> with recording_captures() as events:
    ...     pass
    >>> events
    []
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import attrs

from numpile_guards import Guard

from .graph import Graph
from .loop_tiers import LoopTier

_events_state = threading.local()


@attrs.frozen
class CaptureEvent:
    """One capture seen by `recording_captures`: its graph (None if none), guards, break.

    `break_reason` is set when the capture ended at a graph break (`eager` False)
    or could not be captured at all (`eager` True: the function ran eagerly).
    """

    name: str
    graph: Graph | None
    guards: tuple[Guard, ...]
    break_reason: str | None = None
    filename: str | None = None
    lineno: int | None = None
    eager: bool = False
    # NOTE: True for resume functions and callees compiled at a graph break.
    internal: bool = False
    # How the backend runs the graph's loops (see `loop_tiers`), in the order it decided.
    loop_tiers: tuple[LoopTier, ...] = ()


@contextlib.contextmanager
def recording_captures() -> Iterator[list[CaptureEvent]]:
    """Collect a `CaptureEvent` for every capture on this thread inside the block.

    >>> with recording_captures() as events:
    ...     pass
    >>> events
    []
    """
    events: list[CaptureEvent] = []
    previous = getattr(_events_state, "events", None)
    _events_state.events = events
    try:
        yield events
    finally:
        _events_state.events = previous


def record_event(event: CaptureEvent) -> None:
    """Append `event` to the list of the innermost `recording_captures` block, if any."""
    events = getattr(_events_state, "events", None)
    if events is not None:
        events.append(event)


@attrs.frozen
class LoopNotKept:
    """A loop capture unrolled (or broke at) instead of keeping it as a loop, and why."""

    reason: str
    filename: str | None
    lineno: int | None

    def __str__(self) -> str:
        where = f" ({self.filename}:{self.lineno})" if self.filename is not None else ""
        return f"{self.reason}{where}"


@contextlib.contextmanager
def recording_loops() -> Iterator[list[LoopNotKept]]:
    """Collect a `LoopNotKept` for every loop capture did not keep inside the block.

    >>> with recording_loops() as loops:
    ...     pass
    >>> loops
    []
    """
    loops: list[LoopNotKept] = []
    previous = getattr(_events_state, "loops", None)
    _events_state.loops = loops
    try:
        yield loops
    finally:
        _events_state.loops = previous


def record_loop_not_kept(record: LoopNotKept) -> None:
    """Append `record` to the list of the innermost `recording_loops` block, if any."""
    loops = getattr(_events_state, "loops", None)
    if loops is not None:
        loops.append(record)


def loops_recorded() -> int:
    """How many records the innermost `recording_loops` block holds (0 outside one).

    >>> loops_recorded()
    0
    """
    loops = getattr(_events_state, "loops", None)
    return 0 if loops is None else len(loops)


def forget_loops_after(count: int) -> None:
    """Drop the records past the first `count` of the innermost `recording_loops` block: a
    capture that is run again records its loops again.

    >>> with recording_loops() as loops:
    ...     record_loop_not_kept(LoopNotKept("a while loop", None, None))
    ...     forget_loops_after(0)
    >>> loops
    []
    """
    loops = getattr(_events_state, "loops", None)
    if loops is not None:
        del loops[count:]
