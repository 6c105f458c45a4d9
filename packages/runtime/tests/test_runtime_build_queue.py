"""The build queue: tasks one at a time in order, idle ones last and niced; the precompiled
header a build will name, built before it is asked for; the call gate built without
blocking its caller."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import numpile_runtime as rt
from numpile_runtime import builder, call_gate


@pytest.fixture(autouse=True)
def _empty_queue() -> Iterator[None]:
    assert rt.wait_for_queued_builds(timeout=120)
    yield
    assert rt.wait_for_queued_builds(timeout=120)


def _blocker() -> tuple[threading.Event, Callable[[], None]]:
    # A task that holds the queue until the event is set (so that what is queued after it
    # waits, observably).
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        assert release.wait(60)

    rt.queue_build("hold the queue", hold)
    assert started.wait(60)
    return release, hold


def test_tasks_run_one_at_a_time_in_order_with_idle_tasks_last() -> None:
    release, _ = _blocker()
    ran: list[str] = []
    running: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    def task(name: str) -> Callable[[], None]:
        def run() -> None:
            running.append(name)
            overlaps.append(tuple(running))
            ran.append(name)
            running.remove(name)

        return run

    assert rt.queue_build("idle", task("idle"), idle=True)
    assert rt.queue_build("first", task("first"))
    assert rt.queue_build("second", task("second"))
    assert rt.queued_builds() == ("hold the queue", "idle", "first", "second")
    release.set()
    assert rt.wait_for_queued_builds(timeout=60)
    assert ran == ["first", "second", "idle"]
    assert all(len(names) == 1 for names in overlaps)
    assert rt.queued_builds() == ()


def test_a_name_queued_or_running_is_not_queued_twice() -> None:
    release, hold = _blocker()
    calls: list[int] = []
    assert not rt.queue_build("hold the queue", hold)  # running
    assert rt.queue_build("once", lambda: calls.append(1))
    assert not rt.queue_build("once", lambda: calls.append(2))  # queued
    release.set()
    assert rt.wait_for_queued_builds(timeout=60)
    assert calls == [1]
    assert rt.queue_build("once", lambda: calls.append(3))  # done: queued again
    assert rt.wait_for_queued_builds(timeout=60)
    assert calls == [1, 3]


def test_a_task_that_raises_is_logged_and_the_queue_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    after: list[str] = []

    def broken() -> None:
        raise OSError("disk full")

    with caplog.at_level("DEBUG", logger="numpile.runtime.build"):
        rt.queue_build("broken", broken)
        rt.queue_build("after", lambda: after.append("ran"))
        assert rt.wait_for_queued_builds(timeout=60)
    assert after == ["ran"]
    assert "the queued build 'broken' failed: disk full" in caplog.text


# The builder lowers an idle compiler just after it started (`compiler_process`): the
# child reads its priority a moment later, as a compiler's work starts.
_PRIORITY = """
import os, time
time.sleep(0.3)
try:
    group = open("/proc/self/autogroup").read().rsplit(" ", 1)[-1].strip()
except OSError:
    group = "none"
print(os.nice(0), group)
"""


def test_compilers_of_idle_tasks_run_at_a_low_priority() -> None:
    # Niced, and so is their autogroup where the kernel has them (a compiler leads a
    # session of its own: its nice value alone would not lower its share of the CPU).
    priority: dict[str, list[str]] = {}
    command = [sys.executable, "-c", _PRIORITY]

    def measure(name: str) -> Callable[[], None]:
        def run() -> None:
            priority[name] = builder.run_compiler(command, 60).stdout.split()

        return run

    rt.queue_build("normal", measure("normal"))
    rt.queue_build("idle", measure("idle"), idle=True)
    assert rt.wait_for_queued_builds(timeout=60)
    here = os.nice(0)
    low = str(max(here, rt.IDLE_NICE))
    assert priority["normal"][0] == str(here)
    assert priority["idle"][0] == low
    # The compiler's own session starts a fresh autogroup (nice 0), lowered to IDLE_NICE
    # whatever this process's nice value is.
    assert priority["idle"][1] in (str(rt.IDLE_NICE), "none")
    assert priority["normal"][1] in ("0", "none")


_HEADER = "#include <math.h>\nstatic inline double half(double v) { return v / 2; }\n"


def _job(tag: int) -> rt.BuildJob:
    return rt.BuildJob(f"double f{tag}(double v) {{ return half(v); }}\n", header=_HEADER)


def test_a_prepared_header_is_precompiled_before_the_first_build_asks_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first build of a fresh cache folder finds the header `prepare_header` queued
    # (from a job of the same command and header, whatever its source) and uses it.
    monkeypatch.setattr(builder, "_PREPARED", set())
    rt.prepare_header(rt.BuildJob("", header=_HEADER))
    assert rt.wait_for_queued_builds(timeout=120)
    assert rt.counters().get("pch_build") == 1
    (library,) = rt.build_many([_job(1)])
    assert isinstance(library, ctypes.CDLL)
    library.f1.restype = ctypes.c_double
    library.f1.argtypes = [ctypes.c_double]
    assert library.f1(3.0) == 1.5
    counts = rt.counters()
    assert counts.get("pch_use") == 1
    assert counts.get("pch_build") == 1  # not built again after the build
    rt.prepare_header(rt.BuildJob("", header=_HEADER))  # asked once per process
    assert rt.queued_builds() == ()


def test_preparing_a_header_without_a_compiler_does_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CC", "numpile-no-such-compiler")
    rt.prepare_header(rt.BuildJob("", header="/* no compiler */\n"))
    assert rt.wait_for_queued_builds(timeout=60)
    assert "pch_build" not in rt.counters()
    with pytest.raises(rt.CompilerNotFoundError):
        rt.find_toolchain()  # and a build still says why


def test_the_call_gate_is_built_on_the_queue_without_blocking_its_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A process that has not loaded the gate yet: asking without waiting answers None at
    # once and queues the build as idle work; once loaded, the callbacks run. (Loaded for
    # the process first, as it stays once loaded: a gate's library is never unloaded.)
    rt.find_toolchain()
    process_gate = rt.gate_module()
    monkeypatch.setattr(call_gate, "_LOADED", [])
    monkeypatch.setattr(call_gate, "_ON_LOADED", [])
    announced: list[Any] = []
    rt.on_gate_loaded(lambda: announced.append(rt.gate_module(wait=False)))
    release, _ = _blocker()
    assert rt.gate_module(wait=False) is None
    assert rt.queued_builds() == ("hold the queue", "call gate")
    assert announced == []
    release.set()
    assert rt.wait_for_queued_builds(timeout=120)
    module = rt.gate_module(wait=False)
    assert isinstance(module, types.ModuleType) and hasattr(module, "Gate")
    assert announced == [module]
    assert module is process_gate


def test_a_call_gate_that_cannot_build_leaves_the_python_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(call_gate, "_LOADED", [])
    monkeypatch.setattr(call_gate, "_ON_LOADED", [])
    monkeypatch.setattr(call_gate, "_SOURCE", "#error the gate does not compile here\n")
    rt.find_toolchain()
    announced: list[str] = []
    rt.on_gate_loaded(lambda: announced.append("loaded"))
    assert rt.gate_module(wait=False) is None
    assert rt.wait_for_queued_builds(timeout=120)
    assert rt.gate_module(wait=False) is None
    assert rt.gate_module() is None  # not built again, waiting or not
    assert announced == []
    assert rt.queued_builds() == ()


def test_a_build_a_caller_waits_for_lowers_the_queues_running_compilers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The queue's compiler (a precompiled header that was not ready in time, say) yields
    # its core to a build a caller waits for: it goes on at a low priority.
    started = threading.Event()
    pids: list[int] = []
    niceness: list[int] = []
    real_popen = subprocess.Popen

    def slow_compiler() -> None:
        command = [sys.executable, "-c", "import os, time; time.sleep(2); print(os.nice(0))"]
        done = builder.run_compiler(command, 60)
        niceness.append(int(done.stdout))

    class Noting(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            pids.append(self.pid)
            started.set()

    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "Popen", Noting)
        rt.queue_build("slow", slow_compiler)
        assert started.wait(60)
    assert os.getpriority(os.PRIO_PROCESS, pids[0]) == os.nice(0)
    rt.build_many([rt.BuildJob("int caller_waits(void) { return 1; }\n", numpy_headers=False)])
    assert rt.wait_for_queued_builds(timeout=60)
    assert niceness == [max(os.nice(0), rt.IDLE_NICE)]
