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
threads add to the same totals.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from .locks import new_lock
from .progress import set_stage

__all__ = [
    "compile_time_calls",
    "compile_times",
    "count",
    "counters",
    "reset_compile_times",
    "reset_counters",
    "timed",
]

# NOTE: module globals on purpose (STYLE.md rule 10): the two process-wide
# metric tables. Insertion-ordered, so reports list stages in the order they
# first ran. Guarded by _LOCK because build workers update them from threads.
_LOCK = new_lock()
_STAGE_SECONDS: dict[str, float] = {}
_STAGE_CALLS: dict[str, int] = {}
_COUNTERS: dict[str, int] = {}


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
        elapsed = time.perf_counter() - start
        with _LOCK:
            _STAGE_SECONDS[stage] = _STAGE_SECONDS.get(stage, 0.0) + elapsed
            _STAGE_CALLS[stage] = _STAGE_CALLS.get(stage, 0) + 1


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
