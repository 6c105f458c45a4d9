"""Core claims: a build a caller waits for runs its compilers first; the build queue's
compilers start on the cores it leaves; the cores are the process's, within its quota."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import numpile_runtime as rt
from numpile_runtime import builder, core_claims
from numpile_runtime.build_queue import on_build_queue


@pytest.fixture(autouse=True)
def _empty_queue() -> Iterator[None]:
    assert rt.wait_for_queued_builds(timeout=120)
    yield
    assert rt.wait_for_queued_builds(timeout=120)


class _Starts:
    """A stand-in for `subprocess.Popen` that notes who starts each compiler (the caller or
    the build queue) and holds the caller's unit compilers until `release` is set."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.release = threading.Event()
        self.units_started = threading.Semaphore(0)
        real = subprocess.Popen
        starts = self

        class Noting(real):  # type: ignore[misc, valid-type]
            def __init__(self, command: list[str], *args: Any, **kwargs: Any) -> None:
                who = "queue" if on_build_queue() else "caller"
                starts.log.append(who)
                if who == "caller" and "-c" in command:
                    starts.units_started.release()
                    assert starts.release.wait(60)
                super().__init__(command, *args, **kwargs)

        self.popen = Noting


def _two_units(tag: str) -> rt.BuildJob:
    return rt.BuildJob(
        f"int {tag}_a(void);\nint {tag}_b(void) {{ return {tag}_a() + 1; }}\n",
        numpy_headers=False,
        more_sources=(f"int {tag}_a(void) {{ return 41; }}\n",),
    )


def _queue_compiler(asked: threading.Event) -> None:
    def compile_for_later() -> None:
        asked.set()
        builder.run_compiler([sys.executable, "-c", "pass"], 60)

    assert rt.queue_build("for later", compile_for_later)


def _while_units_compile(
    monkeypatch: pytest.MonkeyPatch, cores: int, tag: str
) -> tuple[list[str], list[str]]:
    # A caller's build of two units is held with both its compilers starting; meanwhile the
    # queue asks to start a compiler. Who started a compiler before the units were let go,
    # and in all, in order.
    rt.find_toolchain()  # its probe's compilers, if any, before any is noted
    monkeypatch.setattr(core_claims, "usable_cores", lambda: cores)
    starts = _Starts()
    monkeypatch.setattr(subprocess, "Popen", starts.popen)
    built: list[Any] = []
    caller = threading.Thread(target=lambda: built.extend(rt.build_many([_two_units(tag)])))
    caller.start()
    try:
        for _ in range(2):
            assert starts.units_started.acquire(timeout=60)
        asked = threading.Event()
        _queue_compiler(asked)
        assert asked.wait(60)
        threading.Event().wait(0.3)  # time enough for a compiler that need not wait to start
        before_release = list(starts.log)
    finally:
        starts.release.set()
        caller.join(60)
    assert rt.wait_for_queued_builds(timeout=60)
    assert getattr(built[0], f"{tag}_b")() == 42
    return before_release, starts.log


def test_the_queues_compiler_waits_while_a_waited_build_takes_every_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two cores, two units: the queue's compiler starts once a unit is done, not beside both
    # (then beside the other or the link, on the core the done one left).
    before, in_all = _while_units_compile(monkeypatch, 2, "two_cores")
    assert before == ["caller", "caller"]
    assert sorted(in_all[2:]) == ["caller", "queue"]


def test_the_queues_compiler_starts_at_once_on_a_core_the_build_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three cores, two units: nothing waits (a machine with more cores is not slowed).
    before, in_all = _while_units_compile(monkeypatch, 3, "three_cores")
    assert before == ["caller", "caller", "queue"]
    assert in_all == ["caller", "caller", "queue", "caller"]


def test_the_queues_compiler_starts_on_the_first_core_a_claim_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two cores claimed (two units compiling): the queue's compiler waits; one unit done,
    # it starts beside the other.
    monkeypatch.setattr(core_claims, "usable_cores", lambda: 2)
    starts = _Starts()
    monkeypatch.setattr(subprocess, "Popen", starts.popen)
    asked = threading.Event()
    with core_claims.claim_cores(1):
        with core_claims.claim_cores(1):
            _queue_compiler(asked)
            assert asked.wait(60)
            threading.Event().wait(0.3)
            assert starts.log == []
            assert core_claims.free_cores() == 1
        assert rt.wait_for_queued_builds(timeout=60)
        assert starts.log == ["queue"]
        assert core_claims.claimed_cores() == 1
    assert core_claims.claimed_cores() == 0


def test_the_queue_compiles_its_builds_and_their_units_one_after_the_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Background work takes one core at a time: its jobs and their units do not run at
    # once, and it claims no core (a caller's build is never held for it).
    running: list[int] = []
    most: list[int] = [0]
    lock = threading.Lock()
    real_run = builder.run_compiler

    def noting(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        try:
            threading.Event().wait(0.1)
            return real_run(command, timeout)
        finally:
            with lock:
                running.pop()

    monkeypatch.setattr(builder, "run_compiler", noting)
    claims: list[int] = []
    built: list[Any] = []

    def build() -> None:
        claims.append(core_claims.claimed_cores())
        alone = rt.BuildJob("int queued_c(void) { return 7; }\n", numpy_headers=False)
        built.extend(rt.build_many([_two_units("queued"), alone]))

    rt.queue_build("two builds", build)
    assert rt.wait_for_queued_builds(timeout=60)
    assert (built[0].queued_b(), built[1].queued_c()) == (42, 7)
    assert most == [1]
    assert claims == [0]


def test_usable_cores_are_the_affinity_within_the_cgroup_quota(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {core_claims._CGROUP2_MAX: "150000 100000"}
    monkeypatch.setattr(core_claims, "_read", lambda path: files.get(path, ""))
    monkeypatch.setattr(core_claims.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    assert core_claims.usable_cores.__wrapped__() == 2
    files[core_claims._CGROUP2_MAX] = "max 100000"
    assert core_claims.usable_cores.__wrapped__() == 6
    files.update({core_claims._CGROUP1_QUOTA: "400000", core_claims._CGROUP1_PERIOD: "100000"})
    assert core_claims.usable_cores.__wrapped__() == 4
    files[core_claims._CGROUP1_QUOTA] = "-1"
    assert core_claims.usable_cores.__wrapped__() == 6
