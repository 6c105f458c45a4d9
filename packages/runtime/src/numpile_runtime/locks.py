"""Locks: one compile lock per code object, and every numpile lock reset in forked children.

Three rules keep a process that uses numpile from hanging where eager would not:

1. A compile takes the lock of its own code object only (`compile_lock_for`), so threads
   compiling different functions never wait on each other, and threads racing to compile
   the same function wait for the first, then re-check the cache (one compile serves all).
2. No user code runs under a numpile lock: the dispatcher decides under the lock what to run
   and runs it after releasing it (see `numpile_capture.dispatch`).
3. A fork taken while another thread holds a lock leaves that lock held forever in the
   child, whose copy of the thread is gone: every lock made here (`new_lock`, `new_rlock`,
   the compile locks) is re-initialised in the child (`os.register_at_fork`), and callbacks
   registered with `at_fork_reset` run there too.

`compiling()` also marks the current thread as compiling: a signal handler that calls a
compiled function while its thread is compiling (probing the toolchain, importing sympy)
must run that function eagerly (`compiling_in_this_thread`), never compile re-entrantly.

    >>> def f():
    ...     pass
    >>> compile_lock_for(f.__code__) is compile_lock_for(f.__code__)
    True
    >>> with compiling(f.__code__):
    ...     compiling_in_this_thread()
    True
    >>> compiling_in_this_thread()
    False
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "at_fork_reset",
    "compile_lock_for",
    "compiling",
    "compiling_in_this_thread",
    "new_lock",
    "new_rlock",
    "running_user_code",
]

# NOTE: every lock made by `new_lock`/`new_rlock`, re-initialised (unlocked) in a forked
# child. Weak: a lock dies with its owner (a `CodeCache`, a module global replaced).
_FORK_LOCKS: weakref.WeakSet[Any] = weakref.WeakSet()

# NOTE: the compile lock of each code object, weak on the code so that a function that dies
# takes its lock with it. Code objects that compare equal share one lock (harmless).
_COMPILE_LOCKS: weakref.WeakKeyDictionary[object, threading.RLock] = weakref.WeakKeyDictionary()
_COMPILE_LOCKS_GUARD = threading.Lock()

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


def compile_lock_for(code: object) -> threading.RLock:
    """The compile lock of `code` (a code object, or any weakly referenceable key).

    Re-entrant: the thread that holds it may compile the same code again (a function that
    graph-breaks into itself).

    >>> def g():
    ...     pass
    >>> compile_lock_for(g.__code__).acquire(blocking=False)
    True
    """
    lock = _COMPILE_LOCKS.get(code)
    if lock is None:
        with _COMPILE_LOCKS_GUARD:
            lock = _COMPILE_LOCKS.get(code)
            if lock is None:
                lock = threading.RLock()
                _COMPILE_LOCKS[code] = lock
    return lock


@contextlib.contextmanager
def compiling(code: object, *, give_way: bool = False) -> Iterator[bool]:
    """Hold the compile lock of `code` and mark this thread as compiling; yields True.

    With `give_way`, a thread that would wait for the lock while its holder runs user code
    (`running_user_code`: capture calling a user's `__hash__`, a user's backend) does not
    wait: it yields False without the lock, and the caller runs the function eagerly. That
    user code may itself wait on this thread, which would otherwise never return.

    >>> def h():
    ...     pass
    >>> with compiling(h.__code__) as held:
    ...     held
    True
    """
    lock = compile_lock_for(code)
    if give_way:
        while not lock.acquire(timeout=_GIVE_WAY_POLL_S):
            if _USER_CODE.get(code):
                yield False
                return
    else:
        lock.acquire()
    try:
        depth = getattr(_thread_state, "depth", 0)
        _thread_state.depth = depth + 1
        try:
            yield True
        finally:
            _thread_state.depth = depth
    finally:
        lock.release()


# NOTE: how often a thread waiting for a compile lock looks whether its holder runs user code.
_GIVE_WAY_POLL_S = 0.01
# NOTE: code objects whose compile lock's holder runs user code now (a count per code).
_USER_CODE: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def running_user_code(code: object) -> Iterator[None]:
    """Mark that the holder of `code`'s compile lock runs user code in the `with` block:
    threads that call the same function meanwhile run it eagerly (see `compiling`).

    >>> def k():
    ...     pass
    >>> with compiling(k.__code__), running_user_code(k.__code__):
    ...     pass
    """
    with _COMPILE_LOCKS_GUARD:
        _USER_CODE[code] = _USER_CODE.get(code, 0) + 1
    try:
        yield
    finally:
        with _COMPILE_LOCKS_GUARD:
            left = _USER_CODE.get(code, 1) - 1
            if left:
                _USER_CODE[code] = left
            else:
                _USER_CODE.pop(code, None)


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
    global _COMPILE_LOCKS_GUARD
    # The forking thread is the child's only thread: nothing can hold these locks now.
    _COMPILE_LOCKS_GUARD = threading.Lock()
    _COMPILE_LOCKS.clear()
    _USER_CODE.clear()
    for lock in list(_FORK_LOCKS):
        reinit = getattr(lock, "_at_fork_reinit", None)
        if reinit is not None:
            reinit()
    for callback in list(_AT_FORK):
        callback()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
