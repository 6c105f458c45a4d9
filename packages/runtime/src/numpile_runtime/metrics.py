"""Metrics: seconds spent per compile stage, and counts of runtime events.

Every layer times its stages with `timed`; `compile_times()` reports the
totals, the way `torch._dynamo.utils.compile_times()` does. Event counters
record what the runtime did (compiler invocations, cache hits), which is
how tests check that a warm cache skips the compiler.

    >>> reset_compile_times()
    >>> with timed("lowering"):
    ...     pass
    >>> sorted(compile_times())
    ['lowering']
    >>> reset_counters()
    >>> count("cache_hit")
    >>> counters()["cache_hit"]
    1

Both tables are process-wide and thread-safe: compile workers running in
threads add to the same totals. Between `record_stage_spans()` and
`record_stage_spans(False)` each timed block is also kept as a `StageSpan` (its
thread, start and end), the timeline of a compile: which stage waited for which,
and what ran on the build queue's thread meanwhile (`stage_spans()`).

    >>> record_stage_spans()
    >>> with timed("capture"):
    ...     pass
    >>> record_stage_spans(False)
    >>> [(span.stage, span.thread) for span in stage_spans()]
    [('capture', 'MainThread')]
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import attrs

from .locks import new_lock
from .progress import set_stage

__all__ = [
    "StageSpan",
    "compile_time_calls",
    "compile_times",
    "count",
    "counters",
    "record_stage_spans",
    "reset_compile_times",
    "reset_counters",
    "stage_spans",
    "timed",
]

# NOTE: module globals on purpose (STYLE.md rule 10): the two process-wide
# metric tables. Insertion-ordered, so reports list stages in the order they
# first ran. Guarded by _LOCK because build workers update them from threads.
_LOCK = new_lock()
_STAGE_SECONDS: dict[str, float] = {}
_STAGE_CALLS: dict[str, int] = {}
_COUNTERS: dict[str, int] = {}
# NOTE: the timed blocks kept while `_RECORDING[0]` is set (`record_stage_spans`), in the
# order they ended; under _LOCK too.
_SPANS: list[StageSpan] = []
_RECORDING: list[bool] = [False]


@attrs.frozen
class StageSpan:
    """One timed block: its stage, the name of the thread that ran it, and its start and
    end in `time.perf_counter()` seconds.

        >>> StageSpan("capture", "MainThread", 1.0, 1.25).seconds
        0.25
    """

    stage: str
    thread: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        """The block's wall time."""
        return self.end - self.start


@contextlib.contextmanager
def timed(stage: str) -> Iterator[None]:
    """Add the wall time spent inside the block to `stage`'s total.

    Nested and concurrent blocks each count their own wall time, so the
    totals of nested stages overlap (as in PyTorch's compile_times).

        >>> with timed("cpp_build"):
        ...     pass
        >>> compile_times()["cpp_build"] >= 0.0
        True
    """
    set_stage(stage)
    start = time.perf_counter()
    try:
        yield
    finally:
        end = time.perf_counter()
        elapsed = end - start
        with _LOCK:
            _STAGE_SECONDS[stage] = _STAGE_SECONDS.get(stage, 0.0) + elapsed
            _STAGE_CALLS[stage] = _STAGE_CALLS.get(stage, 0) + 1
            if _RECORDING[0]:
                _SPANS.append(StageSpan(stage, threading.current_thread().name, start, end))


def record_stage_spans(on: bool = True) -> None:
    """Start keeping each timed block as a `StageSpan` (forgetting those kept before), or
    stop (`on=False`; what was kept stays readable).

    >>> record_stage_spans(); record_stage_spans(False); stage_spans()
    []
    """
    with _LOCK:
        if on:
            _SPANS.clear()
        _RECORDING[0] = on


def stage_spans() -> list[StageSpan]:
    """The spans kept since the last `record_stage_spans()`, in the order they ended (a copy).

    >>> record_stage_spans(False); isinstance(stage_spans(), list)
    True
    """
    with _LOCK:
        return list(_SPANS)


def compile_times() -> dict[str, float]:
    """Seconds accumulated per stage since the last reset (a copy).

    >>> reset_compile_times()
    >>> compile_times()
    {}
    """
    with _LOCK:
        return dict(_STAGE_SECONDS)


def compile_time_calls() -> dict[str, int]:
    """How many timed blocks ran per stage since the last reset (a copy).

    >>> reset_compile_times()
    >>> with timed("probe"):
    ...     pass
    >>> compile_time_calls()
    {'probe': 1}
    """
    with _LOCK:
        return dict(_STAGE_CALLS)


def reset_compile_times() -> None:
    """Forget all stage totals.

    >>> reset_compile_times(); compile_times()
    {}
    """
    with _LOCK:
        _STAGE_SECONDS.clear()
        _STAGE_CALLS.clear()


def count(event: str, n: int = 1) -> None:
    """Add `n` to the counter named `event`.

    >>> reset_counters(); count("cache_miss", 2); counters()
    {'cache_miss': 2}
    """
    with _LOCK:
        _COUNTERS[event] = _COUNTERS.get(event, 0) + n


def counters() -> dict[str, int]:
    """The event counters since the last reset (a copy).

    Events the runtime counts: `compiler_invocation` (one per compiler
    process), `cache_hit` / `cache_miss` (compiled artifacts found or not on
    disk), `cache_corrupt` (an entry that failed its checksum and was
    rebuilt), `module_load` (shared objects loaded into this process).

        >>> reset_counters(); counters()
        {}
    """
    with _LOCK:
        return dict(_COUNTERS)


def reset_counters() -> None:
    """Set every event counter back to zero.

    >>> count("x"); reset_counters(); counters()
    {}
    """
    with _LOCK:
        _COUNTERS.clear()
