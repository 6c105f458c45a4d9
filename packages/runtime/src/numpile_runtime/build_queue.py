"""The build queue: fixed-cost builds run ahead of need, one at a time, on a thread of their own.

A cold first call pays for more than its graph's module: probing the compiler, precompiling
the header every module includes, the support extensions (the buffer pool, the call gate).
None of them depends on the graph, so the layers above queue them here when a function is
compiled or first called (`queue_build`), and they run on the second core while the program
and capture run Python on the first. One worker runs them in order, never two at once, so
that they take one core and leave the other to the caller; tasks queued `idle` run after
every other task, and their compiler processes at a low CPU priority (`idle_compiles`,
`IDLE_NICE`), so they take little of a core something else wants. A build a caller waits
for lowers the queue's running compilers the same way (`yield_to_callers`), and while such
builds claim every core the queue starts no compiler (`core_claims`: the builder waits for
a free core before each compiler it runs for the queue, `on_build_queue`).

A task is a function of no arguments that does its work into the code cache or into its own
module's state; the caller that needs the result does not wait for the queue: it does the
work itself if it is not done yet (under the same locks), or goes without. A task that
raises is logged and forgotten (the caller that needs it will meet the error itself).

    >>> done = []
    >>> queue_build("example", lambda: done.append(1))
    True
    >>> wait_for_queued_builds(timeout=10.0)
    True
    >>> done
    [1]
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

import attrs

from .locks import at_fork_reset, new_lock

__all__ = [
    "IDLE_NICE",
    "compiler_ended",
    "compiler_started",
    "idle_compiles",
    "low_priority",
    "on_build_queue",
    "queue_build",
    "queued_builds",
    "wait_for_queued_builds",
    "yield_to_callers",
]

log = logging.getLogger("numpile.runtime.build")

#: The nice value of idle work's compilers. NOTE: low, not the lowest (19): against a busy
#: machine's other work a compile at 19 gets a hundredth of a core and waits for minutes,
#: and so does whatever waits for the queue (a benchmark's warm call, a test); at 10 it
#: gets about a tenth of a core that others want, and all of an idle one.
IDLE_NICE = 10


@attrs.frozen
class _Task:
    name: str
    run: Callable[[], object]
    idle: bool


# NOTE: the process-wide queue (module globals by design: one worker per process, started
# by the first task). `_TODO` holds the tasks not started, `_RUNNING` the name of the one
# the worker runs; both change under `_CHANGED`, which wakes the worker when a task is
# queued and the waiters of `wait_for_queued_builds` when one ends.
_LOCK = new_lock()
_CHANGED = threading.Condition(_LOCK)
_TODO: list[_Task] = []
_RUNNING: list[str] = []
_WORKER: list[threading.Thread] = []
_thread_state = threading.local()
# NOTE: the compiler processes (each the leader of its own process group) the worker runs
# for a task that is not idle: `yield_to_callers` lowers their priority.
_COMPILERS: set[int] = set()


def _forget() -> None:
    global _CHANGED
    _CHANGED = threading.Condition(_LOCK)
    _TODO.clear()
    _RUNNING.clear()
    _WORKER.clear()
    _COMPILERS.clear()


at_fork_reset(_forget)


def queue_build(name: str, task: Callable[[], object], *, idle: bool = False) -> bool:
    """Queue `task` under `name` unless a task of that name is queued or running; whether
    it was queued. `idle` tasks run after all others, their compilers at a low priority.

    >>> queue_build("nothing", lambda: None)
    True
    """
    with _CHANGED:
        if name in _RUNNING or any(queued.name == name for queued in _TODO):
            return False
        _TODO.append(_Task(name, task, idle))
        _CHANGED.notify_all()
        if not _WORKER:
            worker = threading.Thread(target=_work, name="numpile-build-queue", daemon=True)
            _WORKER.append(worker)
            worker.start()
    return True


def queued_builds() -> tuple[str, ...]:
    """The names of the tasks queued or running, the running one first.

    >>> wait_for_queued_builds(timeout=10.0); queued_builds()
    True
    ()
    """
    with _CHANGED:
        return (*_RUNNING, *(task.name for task in _TODO))


def wait_for_queued_builds(timeout: float | None = None) -> bool:
    """Wait until the queue is empty and its worker idle; False if `timeout` seconds passed
    first.

    >>> wait_for_queued_builds(timeout=10.0)
    True
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    with _CHANGED:
        while _TODO or _RUNNING:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            _CHANGED.wait(left)
    return True


def idle_compiles() -> bool:
    """Whether the current thread runs an idle task (its compilers then run niced).

    >>> idle_compiles()
    False
    """
    return bool(getattr(_thread_state, "idle", False))


def on_build_queue() -> bool:
    """Whether the current thread is the queue's worker: a compiler it starts is background
    work, which waits for a core no build a caller waits for claims (`core_claims`).

    >>> on_build_queue()
    False
    """
    return bool(_WORKER) and threading.current_thread() is _WORKER[0]


def compiler_started(pid: int) -> None:
    """Note a compiler process the current thread started (the builder calls it): one the
    worker runs for a task that is not idle is lowered by `yield_to_callers`.

    >>> compiler_started(0)
    """
    if on_build_queue() and not idle_compiles():
        with _LOCK:
            _COMPILERS.add(pid)


def compiler_ended(pid: int) -> None:
    """Forget a compiler process `compiler_started` noted.

    >>> compiler_ended(0)
    """
    with _LOCK:
        _COMPILERS.discard(pid)


def yield_to_callers() -> None:
    """Lower the compilers the queue runs now to a low CPU priority: a build a caller
    waits for has started, and the queued work (a precompiled header that was not ready
    in time, say) must not slow it down; it goes on with the cores the caller leaves.

    >>> yield_to_callers()
    """
    if on_build_queue():
        return
    with _LOCK:
        groups = list(_COMPILERS)
        _COMPILERS.clear()
    for group in groups:
        low_priority(group)


def low_priority(group: int = 0) -> None:
    """Give process group `group` (0: the calling process) a low CPU priority (`IDLE_NICE`),
    its scheduler autogroup too: on Linux each compiler the builder starts leads a session
    of its own, and autogroups share the CPU equally whatever the nice value of their
    processes. Never fails: where it cannot, the priority stays.

    >>> low_priority(-1)
    """
    if group < 0:
        return
    which = os.PRIO_PGRP if group else os.PRIO_PROCESS
    with contextlib.suppress(OSError):
        os.setpriority(which, group, max(IDLE_NICE, os.getpriority(which, group)))
    with contextlib.suppress(OSError), open(f"/proc/{group or 'self'}/autogroup", "r+") as file:
        now = int(file.read().rsplit(" ", 1)[-1])
        file.seek(0)
        file.write(str(max(IDLE_NICE, now)))


def _next() -> _Task:
    # Called under the lock, with a task queued: the first that is not idle, else the first.
    for position, task in enumerate(_TODO):
        if not task.idle:
            return _TODO.pop(position)
    return _TODO.pop(0)


def _work() -> None:
    # NOTE: the worker stays, waiting, once the queue is empty: a task queued during a call
    # (the call gate's, on a compiled function's second call) costs no thread start.
    while True:
        with _CHANGED:
            _RUNNING.clear()
            _CHANGED.notify_all()
            while not _TODO:
                _CHANGED.wait()
            task = _next()
            _RUNNING.append(task.name)
        _thread_state.idle = task.idle
        try:
            task.run()
        except Exception as error:  # the caller that needs the result meets it itself
            log.debug("the queued build %r failed: %s", task.name, error)
        finally:
            _thread_state.idle = False
