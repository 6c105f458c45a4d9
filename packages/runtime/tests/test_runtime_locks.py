"""numpile's locks: a compile turn per code object, every lock free again in a forked child."""

from __future__ import annotations

import os
import threading
import time
import warnings

import pytest

from numpile_runtime import (
    at_fork_reset,
    compile_owner,
    compiling,
    compiling_in_this_thread,
    new_lock,
    new_rlock,
    numpile_code_only,
)

TIMEOUT_S = 30


def test_one_compile_turn_per_code_object() -> None:
    def f() -> None:
        pass

    def g() -> None:
        pass

    with compiling(f.__code__) as owned:
        assert owned
        assert compile_owner(f.__code__) == threading.get_ident()
        assert compile_owner(g.__code__) is None
        seen: list[bool] = []

        def other() -> None:
            with compiling(g.__code__) as other_owned:
                seen.append(other_owned)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(TIMEOUT_S)
        assert seen == [True]  # another function's compile does not wait for f's
    assert compile_owner(f.__code__) is None


def _call_compiling(code: object, seen: list[tuple[bool, float]]) -> threading.Thread:
    def call() -> None:
        start = time.monotonic()
        with compiling(code) as owned:
            seen.append((owned, time.monotonic() - start))

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def test_a_miss_gives_way_while_the_owner_may_run_user_code() -> None:
    # The owner holds no lock: a second caller does not wait, it is told to run eagerly.
    def f() -> None:
        pass

    seen: list[tuple[bool, float]] = []
    with compiling(f.__code__):
        _call_compiling(f.__code__, seen).join(TIMEOUT_S)
    assert [owned for owned, _ in seen] == [False]


def test_a_miss_waits_while_the_owner_runs_numpile_code_only_then_takes_the_turn() -> None:
    def f() -> None:
        pass

    seen: list[tuple[bool, float]] = []
    with compiling(f.__code__):
        with numpile_code_only(f.__code__):
            thread = _call_compiling(f.__code__, seen)
            time.sleep(0.3)
            assert seen == []  # waiting for this compile's entry
        time.sleep(0.1)
        assert seen == []  # the mark stays to the end of the turn
    thread.join(TIMEOUT_S)
    assert len(seen) == 1
    owned, waited = seen[0]
    assert owned  # its turn now: it re-checks the cache
    assert waited >= 0.3


def test_an_error_in_numpile_code_lets_waiting_callers_go() -> None:
    # What handles the error may be user code: waiting callers run eagerly instead.
    def f() -> None:
        pass

    seen: list[tuple[bool, float]] = []
    with compiling(f.__code__):
        try:
            with numpile_code_only(f.__code__):
                thread = _call_compiling(f.__code__, seen)
                time.sleep(0.2)
                raise ValueError("backend failed")
        except ValueError:
            thread.join(TIMEOUT_S)
            assert [owned for owned, _ in seen] == [False]


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
            with compiling(f.__code__) as owned:
                took = [
                    lock.acquire(timeout=5),
                    rlock.acquire(timeout=5),
                    owned,
                    reset_ran == [os.getpid()],
                ]
            os._exit(0 if all(took) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0
