"""`LoopGraphs` (codegen/triton/loop_graphs.py): when a kept loop of kernels records a CUDA
graph, when it replays one, and when it stays a host loop, with stand-ins for CuPy.

A stand-in device array holds a NumPy array and a fake pointer; a stand-in "kernel launch"
runs at once outside a capture and is appended to the graph being recorded inside one
(as CUDA stream capture does: nothing runs until the graph is launched). The real GPU
runs the same checks in integration_tests/test_gpu_loops.py.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

import numpile_runtime as rt
from numpile_inductor import TritonOptions
from numpile_inductor.codegen.triton import loop_graphs as module
from numpile_inductor.codegen.triton.loop_graphs import LoopGraphs, loop_graphs

_POINTERS = iter(range(1 << 20, 1 << 40, 1 << 20))


class FakeArray:
    # A device array: NumPy memory at a made-up device pointer.
    def __init__(self, host: np.ndarray[Any, Any]) -> None:
        self.host = host
        self.data = types.SimpleNamespace(ptr=next(_POINTERS))
        self.device = types.SimpleNamespace(id=0)
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype
        self.size, self.itemsize = host.size, host.itemsize

    def copy(self) -> FakeArray:
        copy = FakeArray(np.empty_like(self.host))
        _launch(lambda: copy.host.__setitem__(Ellipsis, self.host))
        return copy


@attrs.define
class FakeGraph:
    kernels: list[Callable[[], None]]

    def launch(self, stream: Any) -> None:
        for kernel in self.kernels:
            kernel()


_RECORDING: list[list[Callable[[], None]]] = []


def _launch(kernel: Callable[[], None]) -> None:
    if _RECORDING:
        _RECORDING[-1].append(kernel)
    else:
        kernel()


def _capture(fn: Callable[..., Any], args: tuple[Any, ...], pool: Any = None) -> Any:
    _RECORDING.append([])
    try:
        result = fn(*args)
    except Exception as error:
        message = f"CUDA graph capture failed: {type(error).__name__}: {error}"
        raise rt.GraphCaptureError(message) from error
    finally:
        kernels = _RECORDING.pop()
    return rt.CapturedGraph(FakeGraph(kernels), None, result)


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rt, "is_device_array", lambda value: isinstance(value, FakeArray))
    monkeypatch.setattr(rt, "capture_graph", _capture)
    stream = types.SimpleNamespace(ptr=1)
    monkeypatch.setattr(module, "_current_stream", lambda: stream)
    monkeypatch.setattr(module, "_is_capturing", lambda: bool(_RECORDING))
    monkeypatch.setattr(module, "_device_module", lambda: np)  # slot buffers in NumPy
    rt.reset_counters()


@attrs.define
class Stencil:
    # The host loop of `for i in r: a[1:] += a[:-1] * i; b[:] = a[i]` as launches; counts
    # its Python calls, raises IndexError where `a[i]` is out of bounds (before launching).
    calls: int = 0

    def __call__(self, indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        self.calls += 1
        a, b = values[carried:]
        for i in indices:
            _launch(lambda i=i: a.host.__setitem__(slice(1, None), a.host[1:] + a.host[:-1] * i))
            if i >= a.shape[0]:
                raise IndexError(f"index {i} is out of bounds for axis 0 with size {a.shape[0]}")
            _launch(lambda i=i: b.host.__setitem__(Ellipsis, a.host[i]))
        return values[:carried]


def _eager(n: int, size: int = 6) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], Any]:
    a, b = np.arange(size, dtype=np.float64), np.zeros(size)
    try:
        for i in range(n):
            a[1:] += a[:-1] * i
            b[:] = a[i]
    except IndexError as error:
        return a, b, error
    return a, b, None


def _fresh(size: int = 6) -> tuple[FakeArray, FakeArray]:
    return FakeArray(np.arange(size, dtype=np.float64)), FakeArray(np.zeros(size))


def _run(runner: LoopGraphs, n: int, arrays: tuple[FakeArray, FakeArray]) -> Any:
    a, b = arrays
    a.host[:] = np.arange(a.shape[0])
    b.host[:] = 0.0
    want_a, want_b, want_error = _eager(n, a.shape[0])
    if want_error is None:
        assert runner(range(n), arrays, 0) == ()
    else:
        with pytest.raises(IndexError, match=str(want_error)):
            runner(range(n), arrays, 0)
    np.testing.assert_array_equal(a.host, want_a)
    np.testing.assert_array_equal(b.host, want_b)


def test_first_call_runs_the_host_loop_second_records_later_calls_replay() -> None:
    host = Stencil()
    runner = LoopGraphs(host, "f.py:3")
    arrays = _fresh()
    for call in range(4):
        _run(runner, 5, arrays)
        assert runner.skip_reason == ("warming up" if call == 0 else "")
    assert host.calls == 2  # the warm-up and the capture: replays call no Python body
    assert rt.counters()["triton_loop_graph_records"] == 1
    assert rt.counters()["triton_loop_graph_replays"] == 3


def test_new_trip_counts_buffers_and_scalars_never_replay_another_calls_graph() -> None:
    host = Stencil()
    runner = LoopGraphs(host, "f.py:3")
    first = _fresh()
    for arrays, n in [(first, 5), (first, 5), (first, 6), (_fresh(), 5), (first, 6)]:
        _run(runner, n, arrays)
    assert rt.counters()["triton_loop_graph_records"] == 2  # (first, 5) and (first, 6)
    assert rt.counters()["triton_loop_graph_replays"] == 2
    scaled: list[Any] = []

    def with_scalar(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        scaled.append(values[1])
        return ()

    by_scalar = LoopGraphs(with_scalar, "f.py:3")
    for scale in (0.5, 0.5, 0.25, 0.25, 0.25):
        by_scalar(range(3), (first[0], scale), 0)
    assert scaled == [0.5, 0.5, 0.25, 0.25]  # 0.25 warms up and records: not 0.5's graph


def test_slot_scalars_replay_one_graph_for_every_value_and_a_new_type_records_another() -> None:
    # The body reads argument 1 from a slot: a 0-d view, read when the launch runs.
    def scale(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        array, factor = values
        assert isinstance(factor, np.ndarray) and factor.shape == ()
        for _ in indices:
            _launch(lambda: array.host.__setitem__(Ellipsis, array.host * factor[()]))
        return ()

    runner = LoopGraphs(scale, "f.py:3", slots={1: np.dtype("float64")})
    array = FakeArray(np.ones(3))
    for factor in (0.5, 0.25, 2.0, -1.5, 3, 4, 5):  # int: another key
        array.host[:] = 1.0
        assert runner(range(3), (array, factor), 0) == ()
        np.testing.assert_array_equal(array.host, np.full(3, float(factor) ** 3))
    assert rt.counters()["triton_loop_graph_records"] == 2
    assert rt.counters()["triton_loop_graph_replays"] == 5  # 0.25, 2.0, -1.5; 4, 5


def test_an_index_error_in_the_body_keeps_eagers_writes_and_stays_a_host_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = Stencil()
    runner = LoopGraphs(host, "f.py:3")
    arrays = _fresh(size=4)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for _ in range(3):
            _run(runner, 7, arrays)  # iteration 4 reads a[4]: IndexError after four steps
    assert "IndexError" in runner.skip_reason
    assert "triton_loop_graph_replays" not in rt.counters()
    assert host.calls == 4  # warm-up, the failed capture, its host loop, then host loops
    hints = [r.getMessage() for r in caplog.records if "f.py:3" in r.getMessage()]
    assert len(hints) == 1 and "not as a CUDA graph" in hints[0]


def test_carried_values_from_the_pool_are_copied_and_arguments_given_back() -> None:
    def carry(indices: range, values: tuple[Any, ...], carried: int) -> tuple[Any, ...]:
        _, same, source = values
        fresh = FakeArray(np.empty(3))
        for i in indices:
            _launch(lambda i=i: fresh.host.__setitem__(Ellipsis, source.host * i))
        return fresh, same

    runner = LoopGraphs(carry, "f.py:3")
    source, same = FakeArray(np.arange(3.0)), FakeArray(np.zeros(1))
    results = [runner(range(4), (None, same, source), 2) for _ in range(4)]
    for fresh, given in results:
        np.testing.assert_array_equal(fresh.host, np.arange(3.0) * 3)
        assert given is same
    assert len({id(fresh) for fresh, _ in results}) == 4  # a later replay overwrites no result


def test_a_carried_view_of_an_argument_is_not_recorded() -> None:
    source = FakeArray(np.arange(4.0))
    view = FakeArray(source.host[1:])
    view.data.ptr = source.data.ptr + 8

    runner = LoopGraphs(lambda indices, values, carried: (view,), "f.py:3")
    for _ in range(3):
        assert runner(range(2), (None, source), 1) == (view,)
    assert runner.skip_reason == "a carried value is a view of an argument"


def test_host_arrays_long_loops_too_many_graphs_and_outer_captures_run_the_host_loop() -> None:
    on_host = LoopGraphs(lambda indices, values, carried: (), "f.py:3")
    assert on_host(range(3), (np.arange(6.0), 2.0), 0) == ()
    assert on_host.skip_reason == "argument 0 of the loop is a NumPy array on the host"
    assert on_host(range(3), (2.0,), 0) == ()
    assert on_host.skip_reason == "no argument of the loop is a CuPy array"
    runner = LoopGraphs(Stencil(), "f.py:3", max_graphs=1, max_iterations=10)
    arrays = _fresh(size=40)
    for _ in range(2):
        _run(runner, 11, arrays)
    assert "11 iterations, above the 10" in runner.skip_reason
    for n in (3, 3, 4, 4):
        _run(runner, n, arrays)
    assert runner.skip_reason.startswith("more than 1 graphs")
    _RECORDING.append([])
    try:
        runner(range(5), arrays, 0)
        assert runner.skip_reason == "the caller's stream is being captured"
    finally:
        _RECORDING.pop()
    assert rt.counters()["triton_loop_graph_records"] == 1


def test_break_loops_and_loop_graphs_0_keep_the_host_loop() -> None:
    host = Stencil()
    plain = types.SimpleNamespace(kwargs={})
    breaking = types.SimpleNamespace(kwargs={"breaks": True})
    options = TritonOptions()
    assert isinstance(loop_graphs(plain, None, host, "f.py:3", options), LoopGraphs)  # type: ignore[arg-type]
    assert loop_graphs(breaking, None, host, "f.py:3", options) is host  # type: ignore[arg-type]
    off = TritonOptions(loop_graphs=0)
    assert loop_graphs(plain, None, host, "f.py:3", off) is host  # type: ignore[arg-type]
    no_graphs = TritonOptions.from_mode("max-autotune-no-cudagraphs", interpret=False)
    assert no_graphs.loop_graphs == 0
