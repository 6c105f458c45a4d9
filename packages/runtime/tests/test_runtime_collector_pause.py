from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import weakref
from collections.abc import Iterator

import pytest

import numpile_runtime as rt
from numpile_runtime import builder


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_inside_and_resumed_after() -> None:
    with rt.collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_exception_inside_resumes_the_collector() -> None:
    with pytest.raises(ValueError, match="boom"), rt.collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_the_program_disabled_stays_disabled() -> None:
    gc.disable()
    with rt.collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


@contextlib.contextmanager
def _pause_in_another_thread() -> Iterator[None]:
    # Another thread holds a pause for the duration of the block.
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with rt.collector_paused():
            inside.set()
            leave.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert inside.wait(30)
        yield
    finally:
        leave.set()
        thread.join(30)


def test_overlapping_pauses_resume_when_the_last_one_ends() -> None:
    with _pause_in_another_thread():
        with rt.collector_paused():
            pass
        assert not gc.isenabled(), "a block ended while another thread's was open"
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork")
def test_a_child_forked_inside_a_pause_has_its_collector_back() -> None:
    with rt.collector_paused():
        pid = os.fork()
        if pid == 0:  # the child: no thread of it will end the pause
            os._exit(0 if gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gc.isenabled()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def _garbage_cycle() -> weakref.ref[_Cycle]:
    # A cycle only the cyclic collector frees: alive until a collection runs.
    return weakref.ref(_Cycle())


def test_a_compiler_run_inside_a_pause_collects_what_the_pause_held_off() -> None:
    with rt.collector_paused():
        cycle = _garbage_cycle()
        assert cycle() is not None
        builder.run_compiler([sys.executable, "-c", "pass"], 60)
        assert cycle() is None, "the held-off collection did not run while the child ran"
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_compiler_run_outside_the_threads_pause_collects_nothing() -> None:
    with _pause_in_another_thread():
        cycle = _garbage_cycle()
        builder.run_compiler([sys.executable, "-c", "pass"], 60)
        assert cycle() is not None, "a thread collected during another thread's pause"
    gc.collect()
    assert cycle() is None


def test_a_compiler_run_keeps_a_collector_the_program_disabled_off() -> None:
    gc.disable()
    with rt.collector_paused():
        cycle = _garbage_cycle()
        builder.run_compiler([sys.executable, "-c", "pass"], 60)
        assert cycle() is not None
    gc.collect()
