"""The collector pause: Python's cyclic garbage collector held off while a compile runs Python.

A cold compile allocates objects by the hundred thousand in a fraction of a second (sympy's
import, lowering, code generation) and frees few of them, so CPython's collector keeps
starting passes, now and then a full one over every object the process tracks, that find
next to nothing: a tenth or so of the compile's Python time on the loop workloads
(docs/performance_notes.md). A compile holds `collector_paused()` around the phases that
run Python, never around a wait for the C compiler (other threads go on allocating then).

Blocks in several threads at once share one pause: the collector resumes when the last one
ends, and only if it was enabled when the first began (a program that disabled it keeps it
disabled). A process forked inside a pause starts with the collector as the first block
found it.

What a pause held off is not lost: the first allocation after it starts a pass over every
object the pause allocated (75-100 ms after a cold compile's sympy import and code
generation), on the path to the compile's result. A thread about to wait for a child
process inside its own pause calls `collect_held_off`, which runs that pass now, while the
child (the C compiler) works: a pause held around a build moves the pass off the path.

    >>> import gc
    >>> enabled = gc.isenabled()
    >>> with collector_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled() == enabled
    True
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

from .locks import at_fork_reset, new_lock

__all__ = ["collect_held_off", "collector_paused"]

# NOTE: the process-wide pause (module globals by design: the collector is process-wide):
# how many `collector_paused` blocks are open now, and whether the first one found the
# collector enabled; both change under `_LOCK`. `_HELD` counts the open blocks per thread.
_LOCK = new_lock()
_OPEN: list[int] = [0]
_RESUME: list[bool] = [False]
_HELD = threading.local()


def _forget() -> None:
    # The forking thread may have been inside a block that no thread of the child will end.
    if _OPEN[0] and _RESUME[0]:
        gc.enable()
    _OPEN[0] = 0
    _RESUME[0] = False
    _HELD.depth = 0


at_fork_reset(_forget)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector inside the block (see the module's text).

    >>> with collector_paused(), collector_paused():
    ...     pass
    """
    with _LOCK:
        if _OPEN[0] == 0:
            _RESUME[0] = gc.isenabled()
            gc.disable()
        _OPEN[0] += 1
    _HELD.depth = _held() + 1
    try:
        yield
    finally:
        _HELD.depth = _held() - 1
        with _LOCK:
            _OPEN[0] -= 1
            if _OPEN[0] == 0 and _RESUME[0]:
                gc.enable()


def collect_held_off() -> None:
    """Run now the young collection that the current thread's pause holds off, if it holds
    one over a collector the program left enabled; else nothing. For a thread that is about
    to wait for a child process: the pass overlaps the wait (see the module's text).

    >>> with collector_paused():
    ...     collect_held_off()
    """
    if _held() == 0:
        return
    with _LOCK:
        due = _OPEN[0] > 0 and _RESUME[0]
    if due:
        gc.collect(0)


def _held() -> int:
    return int(getattr(_HELD, "depth", 0))
