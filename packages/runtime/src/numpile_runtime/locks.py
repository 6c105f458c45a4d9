"""Locks: a compile turn per code object, no user code under any lock, every lock reset in
forked children.

Three rules keep a process that uses numpile from hanging where eager would not:

1. A compile owns the turn of its own code object only (`compiling`), so threads compiling
   different functions never wait on each other, and a thread that misses on a function
   another thread compiles waits for that compile, then re-checks the cache (one compile
   serves all; the cache gets one entry).
2. No user code runs under a numpile lock. Owning a turn holds no lock: the short lock
   `_TURNS_CHANGED` guards only who owns which turn. A thread waits for another's compile
   only while that compile runs numpile's own code to its end (`numpile_code_only`: a
   backend of numpile's, then adding the entry); while the owner runs anything of the
   user's (capture calling a `__hash__` or a property, guards, a user's backend, logging
   handlers), a caller of the same function does not wait: it runs the function eagerly.
   User code may therefore wait on any other thread that calls compiled functions.
3. A fork taken while another thread holds a lock leaves that lock held forever in the
   child, whose copy of the thread is gone: every lock made here (`new_lock`, `new_rlock`,
   the turns) is re-initialised in the child (`os.register_at_fork`), and callbacks
   registered with `at_fork_reset` run there too.

`compiling()` also marks the current thread as compiling: a signal handler that calls a
compiled function while its thread is compiling (probing the toolchain, importing sympy)
must run that function eagerly (`compiling_in_this_thread`), never compile re-entrantly.

    >>> def f():
    ...     pass
    >>> with compiling(f.__code__) as owned:
    ...     owned, compiling_in_this_thread(), compile_owner(f.__code__) is not None
    (True, True, True)
    >>> compiling_in_this_thread(), compile_owner(f.__code__)
    (False, None)
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import attrs

__all__ = [
    "at_fork_reset",
    "compile_owner",
    "compiling",
    "compiling_in_this_thread",
    "new_lock",
    "new_rlock",
    "numpile_code_only",
]

# NOTE: every lock made by `new_lock`/`new_rlock`, re-initialised (unlocked) in a forked
# child. Weak: a lock dies with its owner (a `CodeCache`, a module global replaced).
_FORK_LOCKS: weakref.WeakSet[Any] = weakref.WeakSet()


@attrs.define
class _Turn:
    # Who compiles one code object now (a thread id), and whether others may wait for it.
    owner: int | None = None
    waitable: bool = False


# NOTE: the compile turn of each code object, weak on the code so that a function that dies
# takes its turn with it (code objects that compare equal share one turn: harmless). One
# condition guards every turn: it is held only to read or change an owner, never while
# anything else runs, and waiters are woken when a turn ends or stops being waitable.
_TURNS: weakref.WeakKeyDictionary[object, _Turn] = weakref.WeakKeyDictionary()
_TURNS_CHANGED = threading.Condition(threading.Lock())

# NOTE: callbacks run in a forked child after the locks are reset (module state that a
# thread of the parent may have left half-done: a thread pool, a progress ticker).
_AT_FORK: list[Callable[[], None]] = []

_thread_state = threading.local()


def new_lock() -> threading.Lock:
    """A `threading.Lock` that a forked child gets back unlocked.

    >>> lock = new_lock()
    >>> with lock:
    ...     lock.locked()
    True
    """
    lock = threading.Lock()
    _FORK_LOCKS.add(lock)
    return lock


def new_rlock() -> threading.RLock:
    """A `threading.RLock` that a forked child gets back unlocked.

    >>> with new_rlock():
    ...     pass
    """
    lock = threading.RLock()
    _FORK_LOCKS.add(lock)
    return lock


def compile_owner(code: object) -> int | None:
    """The id of the thread that compiles `code` now (`threading.get_ident()`), or None.

    >>> def g():
    ...     pass
    >>> compile_owner(g.__code__) is None
    True
    """
    with _TURNS_CHANGED:
        turn = _TURNS.get(code)
        return None if turn is None else turn.owner


@contextlib.contextmanager
def compiling(code: object) -> Iterator[bool]:
    """Own the compile of `code` (a code object, or any weakly referenceable key) for the
    block, and mark this thread as compiling; yields True.

    No lock is held in the block: it may run user code. When another thread owns `code`'s
    compile and runs numpile's own code to its end (`numpile_code_only`), this waits for it
    to finish, then owns the turn (the caller re-checks its cache). When the owner runs
    anything else, or this thread owns the turn already, it yields False without owning
    anything: the caller runs the function eagerly, as the owner's user code may be waiting
    on this very thread.

    >>> def h():
    ...     pass
    >>> with compiling(h.__code__) as owned:
    ...     with compiling(h.__code__) as again:
    ...         owned, again
    (True, False)
    """
    me = threading.get_ident()
    with _TURNS_CHANGED:
        turn = _TURNS.get(code)
        if turn is None:
            turn = _TURNS[code] = _Turn()
        while turn.owner is not None and turn.owner != me and turn.waitable:
            _TURNS_CHANGED.wait()
        owned = turn.owner is None
        if owned:
            turn.owner = me
            turn.waitable = False
    if not owned:
        yield False
        return
    depth = getattr(_thread_state, "depth", 0)
    _thread_state.depth = depth + 1
    try:
        yield True
    finally:
        _thread_state.depth = depth
        with _TURNS_CHANGED:
            turn.owner = None
            turn.waitable = False
            _TURNS_CHANGED.notify_all()


@contextlib.contextmanager
def numpile_code_only(code: object, *, waitable: bool = True) -> Iterator[None]:
    """Mark that the compile of `code` this thread owns runs numpile's own code from here to
    its end: threads that miss on `code` meanwhile wait for its entry (see `compiling`).

    If the block raises, the mark is taken back (what handles the error may be user code)
    and waiting threads run eagerly; if it returns, the mark stays until the turn ends, so
    only numpile's code may follow it inside `compiling`. With `waitable=False` (a user's
    backend) it marks nothing.

    >>> def k():
    ...     pass
    >>> with compiling(k.__code__), numpile_code_only(k.__code__):
    ...     pass
    """
    if not waitable:
        yield
        return
    turn = _own_turn(code)
    if turn is None:
        yield
        return
    with _TURNS_CHANGED:
        turn.waitable = True
    try:
        yield
    except BaseException:
        with _TURNS_CHANGED:
            turn.waitable = False
            _TURNS_CHANGED.notify_all()
        raise


def _own_turn(code: object) -> _Turn | None:
    with _TURNS_CHANGED:
        turn = _TURNS.get(code)
        if turn is None or turn.owner != threading.get_ident():
            return None
        return turn


def compiling_in_this_thread() -> bool:
    """Whether this thread is inside `compiling()` (a signal handler may interrupt it).

    >>> compiling_in_this_thread()
    False
    """
    return bool(getattr(_thread_state, "depth", 0))


def at_fork_reset(callback: Callable[[], None]) -> None:
    """Run `callback` in every forked child, after numpile's locks are reset.

    >>> at_fork_reset(lambda: None)
    """
    _AT_FORK.append(callback)


def _reset_in_child() -> None:
    global _TURNS_CHANGED
    # The forking thread is the child's only thread: nothing can own a turn or hold a lock.
    _TURNS_CHANGED = threading.Condition(threading.Lock())
    _TURNS.clear()
    for lock in list(_FORK_LOCKS):
        reinit = getattr(lock, "_at_fork_reinit", None)
        if reinit is not None:
            reinit()
    for callback in list(_AT_FORK):
        callback()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
