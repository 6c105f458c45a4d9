from __future__ import annotations

import threading
import time

import pytest

import numpile_runtime as rt


def test_timed_accumulates_per_stage() -> None:
    with rt.timed("lowering"):
        time.sleep(0.01)
    with rt.timed("lowering"):
        time.sleep(0.01)
    with rt.timed("codegen"):
        pass
    times = rt.compile_times()
    assert list(times) == ["lowering", "codegen"]
    assert times["lowering"] >= 0.02
    assert times["codegen"] < times["lowering"]
    assert rt.compile_time_calls() == {"lowering": 2, "codegen": 1}


def test_timed_records_when_the_block_raises() -> None:
    with pytest.raises(ZeroDivisionError), rt.timed("failing"):
        _ = 1 / 0
    assert rt.compile_time_calls() == {"failing": 1}


def test_reset_compile_times_and_copies() -> None:
    with rt.timed("stage"):
        pass
    snapshot = rt.compile_times()
    snapshot["stage"] = 1e9
    assert rt.compile_times()["stage"] < 1.0
    rt.reset_compile_times()
    assert rt.compile_times() == {}
    assert rt.compile_time_calls() == {}


def test_timed_and_count_are_thread_safe() -> None:
    def work() -> None:
        for _ in range(500):
            with rt.timed("threaded"):
                rt.count("event")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert rt.compile_time_calls()["threaded"] == 2000
    assert rt.counters()["event"] == 2000


def test_counters_reset() -> None:
    rt.count("a", 3)
    rt.count("a")
    assert rt.counters() == {"a": 4}
    rt.reset_counters()
    assert rt.counters() == {}


def test_stage_spans_keep_each_block_with_its_thread_while_recording() -> None:
    with rt.timed("before"):
        pass
    rt.record_stage_spans()
    try:
        with rt.timed("outer"):
            with rt.timed("inner"):
                pass
            thread = threading.Thread(target=_timed_block, args=("probe",), name="queue")
            thread.start()
            thread.join()
    finally:
        rt.record_stage_spans(False)
    with rt.timed("after"):
        pass
    spans = rt.stage_spans()
    assert [(s.stage, s.thread) for s in spans] == [
        ("inner", "MainThread"),
        ("probe", "queue"),
        ("outer", "MainThread"),
    ]
    inner, probe, outer = spans
    assert outer.start <= inner.start <= inner.end <= probe.start <= probe.end <= outer.end
    assert all(span.seconds >= 0.0 for span in spans)


def _timed_block(stage: str) -> None:
    with rt.timed(stage):
        pass
