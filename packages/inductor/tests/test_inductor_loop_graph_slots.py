"""Loop graphs that replay across scalar values (`codegen/triton/loop_graphs.py`, slot
scalars), with the body's real kernels under Triton's interpreter.

Stand-ins for the GPU: `DeviceArray` is NumPy memory that the loop takes for a CuPy array
(a pointer, a device id); a "capture" runs the whole loop once on copies of every device
array's contents and puts them back (a CUDA capture runs nothing), and its graph re-runs
the recorded loop, with the very arguments it recorded, on each launch: the pointers a
real graph bakes in. A replay with new numbers is right only where the recorded kernels
read them from the slot buffer the replay writes. The real GPU runs the same checks in
integration_tests/test_gpu_loops.py.
Run alone or in the `tests-triton-interpret` nox session (the interpreter is chosen at import).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
import triton_interpreter  # noqa: F401 - first: it chooses Triton's interpreter

import numpile_runtime as rt
from numpile_capture import capture_function
from numpile_capture.dynamic_shapes import DynamicPolicy, capturing_with
from numpile_inductor import TritonOptions
from numpile_inductor.codegen.triton import loop_graphs as module
from numpile_inductor.codegen.triton.backend import compile_triton


class DeviceArray(np.ndarray):  # type: ignore[type-arg]
    # NumPy memory the loop takes for a device array: `data.ptr` and `device.id`.
    @property
    def data(self) -> Any:  # type: ignore[override]
        return types.SimpleNamespace(ptr=self.ctypes.data)

    @property
    def device(self) -> Any:  # type: ignore[override]
        return types.SimpleNamespace(id=0)


_DEVICE: list[DeviceArray] = []  # every device array of the running test


def _device(array: np.ndarray[Any, Any]) -> DeviceArray:
    moved = np.array(array).view(DeviceArray)
    _DEVICE.append(moved)
    return moved


@attrs.define
class FakeGraph:
    # The recorded loop, re-run on its recorded arguments; its results written into the
    # arrays the capture returned (the graph's pool).
    run: Callable[[], Any]
    result: Any

    def launch(self, stream: Any) -> None:
        for old, new in zip(self.result, self.run(), strict=True):
            if isinstance(old, np.ndarray):
                old[...] = new


def _capture(fn: Callable[..., Any], args: tuple[Any, ...], pool: Any = None) -> Any:
    saved = [(array, array.copy()) for array in _DEVICE]
    try:
        result = fn(*args)
    except Exception as error:
        raise rt.GraphCaptureError(f"CUDA graph capture failed: {error}") from error
    finally:
        for array, contents in saved:
            array[...] = contents
    return rt.CapturedGraph(FakeGraph(lambda: fn(*args), result), None, result)


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = types.SimpleNamespace(ptr=1)
    monkeypatch.setattr(rt, "is_device_array", lambda value: isinstance(value, DeviceArray))
    monkeypatch.setattr(rt, "capture_graph", _capture)
    monkeypatch.setattr(module, "_current_stream", lambda: stream)
    monkeypatch.setattr(module, "_is_capturing", lambda: False)
    monkeypatch.setattr(module, "_device_module", lambda: np)
    _DEVICE.clear()
    rt.reset_counters()


def heat(u: Any, v: Any, dt: Any, steps: int) -> Any:
    for _ in range(steps):
        v[1:-1] = u[1:-1] + dt * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u[1:-1] = v[1:-1]
    return u


def forced(u: Any, alpha: Any, t0: Any, dt: Any, steps: int) -> Any:
    t = t0
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * np.sin(t) * (u[:-2] - u[1:-1])
        t = t + dt  # on the host, between iterations
    return t


def _compiled(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    # The compiled graph, called with `fn`'s arguments (its inputs in order of first use).
    with capturing_with(DynamicPolicy(True)):
        graph = capture_function(fn, args, {}).graph
    compiled = compile_triton(graph, options=TritonOptions.for_interpreter()).fn
    signature = inspect.signature(fn)
    names = [node.name for node in graph.placeholders]

    def call(*given: Any) -> Any:
        arguments = signature.bind(*given).arguments
        return compiled(*(arguments[name] for name in names))

    return call


def _counts() -> tuple[int, int]:
    counters = rt.counters()
    return counters["triton_loop_graph_records"], counters["triton_loop_graph_replays"]


@pytest.mark.parametrize("kind", [float, np.float32])
def test_five_time_steps_record_one_graph_that_replays_each_with_numpys_rounding(
    kind: type,
) -> None:
    # float32 arrays times a Python float: NEP 50 keeps float32, and the float64 slot
    # rounds as NumPy does (equal to the last bit). A NumPy float32 time step is a 0-d
    # input the kernels read through a pointer: a float32 slot.
    u0 = np.random.default_rng(3).random(48).astype(np.float32)
    compiled = _compiled(heat, u0.copy(), u0.copy(), kind(0.1), 3)
    u, v = _device(u0), _device(u0)
    for dt in map(kind, (0.1, 0.2, 1 / 3, 0.05, -0.3)):
        want_u, want_v = u0.copy(), u0.copy()
        heat(want_u, want_v, dt, 3)
        u[...], v[...] = u0, u0
        got = compiled(u, v, dt, 3)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(u, want_u)
        np.testing.assert_array_equal(v, want_v)
    assert _counts() == (1, 4)  # warm-up, record (and launch), three replays


def test_a_carried_scalar_the_host_updates_stays_a_key_by_value() -> None:
    # `alpha` only kernels read: a slot. `t` is carried and `t + dt` is computed on the
    # host: each (t0, dt) bakes its own iterations' values into a graph of its own.
    u0 = np.random.default_rng(4).random(40)
    compiled = _compiled(forced, u0.copy(), 0.5, 0.0, 0.25, 3)
    u = _device(u0)
    calls = [(0.5, 0.0, 0.25), (0.1, 0.0, 0.25), (-2.0, 0.0, 0.25)]  # (alpha, t0, dt)
    calls += [(0.5, 1.0, 0.25), (0.7, 1.0, 0.25), (0.7, 1.0, 0.5)]
    for alpha, t0, dt in calls:
        want_u = u0.copy()
        want_t = forced(want_u, alpha, t0, dt, 3)
        u[...] = u0
        got_t = compiled(u, alpha, t0, dt, 3)
        assert type(got_t) is type(want_t) and got_t == want_t
        np.testing.assert_array_equal(u, want_u)
    assert _counts() == (2, 3)  # (0.0, 0.25): record, 2 replays; (1.0, 0.25): record
