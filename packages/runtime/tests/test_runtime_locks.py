"""numpile's locks: one compile lock per code object, every lock free again in a forked child."""

from __future__ import annotations

import os
import threading
import warnings

import pytest

from numpile_runtime import (
    at_fork_reset,
    compile_lock_for,
    compiling,
    compiling_in_this_thread,
    new_lock,
    new_rlock,
)


def test_one_compile_lock_per_code_object() -> None:
    def f() -> None:
        pass

    def g() -> None:
        pass

    assert compile_lock_for(f.__code__) is compile_lock_for(f.__code__)
    assert compile_lock_for(f.__code__) is not compile_lock_for(g.__code__)


def test_compiling_marks_this_thread_only() -> None:
    def f() -> None:
        pass

    seen: list[bool] = []
    with compiling(f.__code__):
        assert compiling_in_this_thread()
        thread = threading.Thread(target=lambda: seen.append(compiling_in_this_thread()))
        thread.start()
        thread.join()
    assert seen == [False]
    assert not compiling_in_this_thread()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_locks_held_by_another_thread_are_free_in_a_forked_child() -> None:
    def f() -> None:
        pass

    lock = new_lock()
    rlock = new_rlock()
    held = threading.Event()
    release = threading.Event()
    reset_ran: list[int] = []
    at_fork_reset(lambda: reset_ran.append(os.getpid()))

    def hold() -> None:
        with lock, rlock, compiling(f.__code__):
            held.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with a thread running
            pid = os.fork()
        if pid == 0:
            took = [
                lock.acquire(timeout=5),
                rlock.acquire(timeout=5),
                compile_lock_for(f.__code__).acquire(timeout=5),
                reset_ran == [os.getpid()],
            ]
            os._exit(0 if all(took) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0
