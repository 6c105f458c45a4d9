"""Background builds: graph compiles that run on one worker thread while calls go on.

Tiered compilation (`tiered_graph.py`) hands the slow part of a new graph's compile
(lowering, code generation, the C compiler) to this worker and keeps answering calls
with NumPy until the build is done. A build is a `BuildTicket`: `submit(work)` queues
it, the worker runs `work()` and stores its value or its exception, and the caller polls
`ticket.done()` without ever blocking a call on it.

Lifetime rules, each kept here so that no caller has to:

- one daemon worker, started on the first submit; builds run in submission order (the
  builder parallelizes inside one build, and the machine's cores are the C compiler's);
- `cancel_pending()` (called by `numpile.reset()`) drops the builds not started yet:
  their tickets end cancelled, and a caller that still wants one submits it again;
- in a forked child the worker does not exist: tickets the parent left pending are
  `orphaned()` there, and their callers submit them again (`os.register_at_fork`);
- at interpreter exit the queue is dropped and a build already running is waited for
  up to `EXIT_WAIT_S`, so the C compiler finishes and leaves no temporary file in the
  cache; exit never waits longer than that.

    >>> ticket = submit(lambda: 6 * 7)
    >>> ticket.wait(10.0) and ticket.value
    42
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

import numpile_runtime as rt

__all__ = [
    "EXIT_WAIT_S",
    "BuildTicket",
    "cancel_pending",
    "generation",
    "submit",
    "wait_idle",
]

log = logging.getLogger("numpile.inductor.background_build")

# How long interpreter exit waits for a build that is running (a small graph's C build
# takes about a second; a wedged compiler must not keep the process alive).
EXIT_WAIT_S = 10.0


@attrs.define(eq=False)
class BuildTicket:
    """One background build: its work, then its value or its exception.

    `generation` is the worker generation it was queued in (`cancel_pending()` and a
    fork start a new one); `cancelled` says it never ran and never will.

        >>> t = BuildTicket(lambda: 1, generation=generation())
        >>> t.done()
        False
    """

    work: Callable[[], Any] = attrs.field(repr=False)
    generation: int
    value: Any = attrs.field(default=None, repr=False)
    error: BaseException | None = None
    cancelled: bool = False
    _finished: threading.Event = attrs.field(factory=threading.Event, repr=False)
    # The worker state it was queued on: after a fork the child's state is another object.
    _owner: object = attrs.field(default=None, repr=False)

    def done(self) -> bool:
        """Whether the build ended: with a value, an exception, or cancelled."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build ends (for tests and exit); whether it did."""
        return self._finished.wait(timeout)

    def orphaned(self) -> bool:
        """Pending in a worker that no longer exists (the ticket came through a fork)."""
        return not self.done() and self._owner is not _STATE

    def _run(self) -> None:
        try:
            self.value = self.work()
        except BaseException as error:  # stored and re-raised by the caller that reads it
            self.error = error
        finally:
            self.work = _spent
            self._finished.set()

    def _cancel(self) -> None:
        self.cancelled = True
        self.work = _spent
        self._finished.set()


def _spent() -> None:
    # What a ticket holds once its work ran: the closure (graph, config) is released.
    return None


@attrs.define
class _WorkerState:
    # NOTE: the process-wide worker: its queue, thread and generation, guarded by `lock`.
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    ready: threading.Condition = attrs.field(default=None)
    queue: collections.deque[BuildTicket] = attrs.field(factory=collections.deque)
    thread: threading.Thread | None = None
    running: BuildTicket | None = None
    generation: int = 0
    closing: bool = False

    def __attrs_post_init__(self) -> None:
        self.ready = threading.Condition(self.lock)


_STATE = _WorkerState()


def generation() -> int:
    """The worker's generation: it changes on `cancel_pending()` and in a forked child.

    >>> isinstance(generation(), int)
    True
    """
    return _STATE.generation


def submit(work: Callable[[], Any]) -> BuildTicket:
    """Queue `work` for the worker thread; its ticket.

    After interpreter exit began, the ticket comes back cancelled.

    >>> submit(lambda: "built").wait(10.0)
    True
    """
    state = _STATE
    with state.lock:
        ticket = BuildTicket(work, generation=state.generation, owner=state)
        if state.closing:
            ticket._cancel()
            return ticket
        state.queue.append(ticket)
        if state.thread is None or not state.thread.is_alive():
            state.thread = threading.Thread(
                target=_work, args=(state,), name="numpile-background-build", daemon=True
            )
            state.thread.start()
        state.ready.notify()
    return ticket


def cancel_pending() -> int:
    """Cancel every queued build not started yet; how many. A running build finishes.

    >>> cancel_pending() >= 0
    True
    """
    state = _STATE
    with state.lock:
        state.generation += 1
        dropped = list(state.queue)
        state.queue.clear()
    for ticket in dropped:
        ticket._cancel()
    if dropped:
        log.debug("cancelled %d background builds", len(dropped))
    return len(dropped)


def wait_idle(timeout: float | None = None) -> bool:
    """Block until no build is queued or running (benchmarks, tests); whether that happened.
    The runtime's build queue counts too (`numpile_runtime.wait_for_queued_builds`: the
    precompiled header, the buffer pool and the call gate a first compile queued there).

    >>> wait_idle(10.0)
    True
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    state = _STATE
    with state.lock:
        idle = state.ready.wait_for(
            lambda: not state.queue and state.running is None, timeout=timeout
        )
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    return idle and rt.wait_for_queued_builds(left)


def _work(state: _WorkerState) -> None:
    while True:
        with state.lock:
            while not state.queue and not state.closing:
                state.ready.wait()
            if state.closing:
                return
            ticket = state.queue.popleft()
            state.running = ticket
        try:
            ticket._run()
        finally:
            with state.lock:
                state.running = None
                state.ready.notify_all()


def _at_exit() -> None:
    state = _STATE
    with state.lock:
        state.closing = True
        dropped = list(state.queue)
        state.queue.clear()
        running = state.running
        state.ready.notify_all()
    for ticket in dropped:
        ticket._cancel()
    if running is not None and not running.wait(EXIT_WAIT_S):
        log.warning("a background build still ran after %.0f s at exit; not waiting", EXIT_WAIT_S)


def _after_fork_in_child() -> None:
    # The worker thread did not come through the fork: a fresh state, a new generation, so
    # tickets the parent left pending read as orphaned here.
    global _STATE
    _STATE = _WorkerState(generation=_STATE.generation + 1)


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
