"""Kept loops of kernels as CUDA graphs on a real GPU (issue 28, item 2).

A loop whose body launches kernels runs its first call with a key (trip count, buffers,
scalars) as a host loop of launches, records the whole loop into one CUDA graph on the
second and replays it on later calls (`numpile_inductor/codegen/triton/loop_graphs.py`).
Every call is compared with NumPy eager on host copies: values, dtypes, and the inputs
the loop writes in place. Marked `gpu`; skipped without CuPy and a device:

    python -m pytest -q -m gpu integration_tests/test_gpu_loops.py
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from loop_nests import NESTS

import numpile
import numpile_runtime as rt
from benchmarks.loop_programs import mandelbrot

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        rt.triton_status().mode != "gpu", reason=f"no GPU: {rt.triton_status().reason}"
    ),
]


def jacobi_1d(A: Any, B: Any, steps: int) -> Any:
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A.sum()


def rows_recurrence(A: Any, steps: int) -> Any:
    s = np.zeros(A.shape[1])
    for i in range(steps):
        s = s * 0.5 + np.sin(A[i]) * i
    return s


def rows_update(A: Any, s: Any, steps: int) -> Any:
    for t in range(steps):
        s[:] = s * 0.5 + A[t]
    return s.sum()


@pytest.fixture(autouse=True)
def fresh_compiles() -> None:
    # Each test's loops start with no graphs recorded (at most `loop_graphs` per loop).
    numpile.reset()


def _cupy() -> Any:
    import cupy

    return cupy


def _hints(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not as a CUDA graph" in r.getMessage()]


def _differential(
    fn: Callable[..., Any], compiled: Callable[..., Any], host: tuple[Any, ...]
) -> Any:
    # `compiled` on device copies of `host`, `fn` on `host`: the same result and writes.
    cupy = _cupy()
    device = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host)
    return _compare(fn, compiled, host, device)


def _compare(
    fn: Callable[..., Any], compiled: Callable[..., Any], host: tuple[Any, ...], device: Any
) -> Any:
    want_error = got_error = None
    try:
        want = fn(*host)
    except IndexError as error:
        want_error = error
    try:
        got = compiled(*device)
    except IndexError as error:
        got_error = error
    if want_error is not None:
        assert str(got_error) == str(want_error)
    else:
        assert got_error is None
        got_host = got.get() if hasattr(got, "get") else got
        assert np.asarray(got_host).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got_host, want, rtol=1e-12, atol=1e-12)
    for before, after in zip(host, device, strict=True):
        if isinstance(before, np.ndarray):
            np.testing.assert_allclose(after.get(), before, rtol=1e-12, atol=1e-12)
    return got if want_error is None else None


@pytest.mark.parametrize("steps", [0, 1, 7, 1000])
def test_stencil_replays_one_graph_per_trip_count_and_matches_eager(
    steps: int, caplog: pytest.LogCaptureFixture
) -> None:
    cupy = _cupy()
    compiled = numpile.compile(jacobi_1d, fullgraph=True, dynamic=True)
    rng = np.random.default_rng(steps)
    A0 = rng.random(4096)
    A, B = cupy.asarray(A0), cupy.asarray(A0)
    rt.reset_counters()
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for _ in range(4):  # host loop, record, replay, replay: new values, same buffers
            host = (rng.random(4096), rng.random(4096), steps)
            A[...], B[...] = cupy.asarray(host[0]), cupy.asarray(host[1])
            _compare(jacobi_1d, compiled, host, (A, B, steps))
    if steps:
        assert rt.counters().get("triton_loop_graph_replays", 0) == 3, _hints(caplog)
        assert rt.counters().get("triton_loop_graph_records", 0) == 1


def test_new_trip_counts_and_new_buffers_never_replay_a_stale_graph() -> None:
    compiled = numpile.compile(jacobi_1d, fullgraph=True, dynamic=True)
    rng = np.random.default_rng(1)
    for steps in (5, 5, 5, 6, 6, 6, 5):
        host = (rng.random(300), rng.random(300), steps)
        _differential(jacobi_1d, compiled, host)  # new device buffers every call
    cupy = _cupy()
    A, B = cupy.asarray(rng.random(300)), cupy.asarray(rng.random(300))
    for steps in (9, 9, 9, 10, 9):
        host = (A.get(), B.get(), steps)
        _compare(jacobi_1d, compiled, host, (A, B, steps))
        C = cupy.asarray(rng.random(300))  # a third buffer in B's place: not B's graph
        _compare(jacobi_1d, compiled, (A.get(), C.get(), steps), (A, C, steps))


def test_carried_arrays_are_fresh_copies_a_later_replay_does_not_overwrite() -> None:
    cupy = _cupy()
    compiled = numpile.compile(rows_recurrence, fullgraph=True, dynamic=True)
    host = np.random.default_rng(2).random((20, 64))
    device = cupy.asarray(host)
    results = [compiled(device, 12) for _ in range(4)]
    for got in results:
        np.testing.assert_allclose(got.get(), rows_recurrence(host, 12), rtol=1e-12)
    device *= 2.0  # same buffer, new values: the replay reads them
    np.testing.assert_allclose(
        compiled(device, 12).get(), rows_recurrence(host * 2.0, 12), rtol=1e-12
    )
    np.testing.assert_allclose(results[0].get(), rows_recurrence(host, 12), rtol=1e-12)


def test_an_index_error_in_the_body_raises_with_eagers_earlier_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cupy = _cupy()
    compiled = numpile.compile(rows_update, fullgraph=True, dynamic=True)
    rng = np.random.default_rng(4)
    A, s = cupy.empty((4, 32)), cupy.empty(32)  # the same buffers every call: one key
    rt.reset_counters()
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for steps in (6, 6, 6, 4, 4, 4):  # A[4] is out of bounds at 6 steps, not at 4
            host = (rng.random((4, 32)), rng.random(32), steps)
            A[...], s[...] = cupy.asarray(host[0]), cupy.asarray(host[1])
            _compare(rows_update, compiled, host, (A, s, steps))
    # 6 steps: host loop, then a capture that NumPy's IndexError ends before any kernel
    # ran (no copy to the host inside it), then host loops; 4 steps: host loop, record,
    # replay.
    messages = [record.getMessage() for record in caplog.records]
    assert any("IndexError: index 4 is out of bounds" in hint for hint in _hints(caplog)), messages
    assert not any("runs in NumPy on the host" in message for message in messages), messages
    assert rt.counters().get("triton_loop_graph_records", 0) == 1, messages
    assert rt.counters().get("triton_loop_graph_replays", 0) == 2, messages


def test_host_loop_option_gives_the_same_results() -> None:
    compiled = numpile.compile(jacobi_1d, fullgraph=True, dynamic=True, options={"loop_graphs": 0})
    rng = np.random.default_rng(6)
    rt.reset_counters()
    for _ in range(3):
        _differential(jacobi_1d, compiled, (rng.random(500), rng.random(500), 20))
    assert "triton_loop_graph_replays" not in rt.counters()


def heat_1d(u: Any, v: Any, dt: Any, steps: int) -> Any:
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


def test_a_new_time_step_every_call_replays_one_graph(caplog: pytest.LogCaptureFixture) -> None:
    # `dt` is read by the kernels from the graph's slot buffer, written before each replay:
    # five values, one graph. A float32 array times a Python float stays float32 (NEP 50);
    # np.float32 time steps are another type: a graph of their own.
    cupy = _cupy()
    compiled = numpile.compile(heat_1d, fullgraph=True, dynamic=True)
    u0 = np.random.default_rng(10).random(4096).astype(np.float32)
    U, V = cupy.asarray(u0), cupy.asarray(u0)
    rt.reset_counters()
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for dt in (0.1, 0.2, 1 / 3, 0.05, 0.45, np.float32(0.25), np.float32(0.125)):
            want_u, want_v = u0.copy(), u0.copy()
            heat_1d(want_u, want_v, dt, 200)
            U[...], V[...] = cupy.asarray(u0), cupy.asarray(u0)
            got = compiled(U, V, dt, 200)
            assert got.dtype == np.float32 and U.dtype == np.float32
            # (a fused multiply-add rounds once where NumPy rounds twice)
            np.testing.assert_allclose(U.get(), want_u, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(V.get(), want_v, rtol=1e-5, atol=1e-6)
    assert rt.counters().get("triton_loop_graph_records", 0) == 2, _hints(caplog)
    assert rt.counters().get("triton_loop_graph_replays", 0) == 5, _hints(caplog)


def test_a_carried_scalar_the_host_updates_keys_its_graphs_by_value() -> None:
    # `alpha` only kernels read (a slot); `t + dt` runs on the host between iterations, so
    # each (t0, dt) bakes its own values into a graph of its own.
    cupy = _cupy()
    compiled = numpile.compile(forced, fullgraph=True, dynamic=True)
    u0 = np.random.default_rng(11).random(512)
    U = cupy.asarray(u0)
    rt.reset_counters()
    calls = [(0.5, 0.0, 0.25), (0.1, 0.0, 0.25), (-2.0, 0.0, 0.25)]  # (alpha, t0, dt)
    calls += [(0.5, 1.0, 0.25), (0.7, 1.0, 0.25), (0.7, 1.0, 0.5)]
    for alpha, t0, dt in calls:
        want_u = u0.copy()
        want_t = forced(want_u, alpha, t0, dt, 20)
        U[...] = cupy.asarray(u0)
        got_t = compiled(U, alpha, t0, dt, 20)
        assert type(got_t) is type(want_t) and got_t == want_t
        np.testing.assert_allclose(U.get(), want_u, rtol=1e-12, atol=1e-12)
    assert rt.counters().get("triton_loop_graph_records", 0) == 2
    assert rt.counters().get("triton_loop_graph_replays", 0) == 3


def rows_of_numpy_scalars(A: Any, steps: int) -> Any:
    for i in range(steps):
        A[np.int64(i)] = A[i] * np.float64(i) + np.float32(i)
    return A.sum()


def test_numpy_scalars_of_the_index_are_kernel_casts_that_replay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # np.float64(i), np.float32(i) and np.int64(i) are casts in the body's kernel (the
    # index by value), not a NumPy call and a host-to-device copy per iteration: the loop
    # records and replays as one CUDA graph.
    cupy = _cupy()
    compiled = numpile.compile(rows_of_numpy_scalars, fullgraph=True, dynamic=True)
    rng = np.random.default_rng(8)
    A = cupy.empty((64, 256))
    rt.reset_counters()
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for _ in range(4):  # host loop, record, replay, replay
            host = (rng.random((64, 256)), 64)
            A[...] = cupy.asarray(host[0])
            _compare(rows_of_numpy_scalars, compiled, host, (A, 64))
    assert rt.counters().get("triton_loop_graph_replays", 0) == 3, _hints(caplog)


def numpy_scalars_in_one_program(x: Any, out: Any, k: int) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[np.int64(i)] * np.float64(i)
        out[i] = np.uint8(k + i) + 250  # np.uint8(256) raises OverflowError
    return s


def test_numpy_scalars_in_a_scalar_loop_run_on_the_device_and_raise_as_numpy() -> None:
    cupy = _cupy()
    compiled = numpile.compile(numpy_scalars_in_one_program, fullgraph=True, dynamic=True)
    rng = np.random.default_rng(9)
    for k in (0, 200, 240):  # 240: np.uint8(256) at i = 16, after 16 iterations' writes
        x, out = rng.random(40), np.zeros(40, dtype=np.uint8)
        device = (cupy.asarray(x), cupy.asarray(out), k)
        rt.reset_counters()
        want = got = None
        try:
            want = numpy_scalars_in_one_program(x, out, k)
        except OverflowError as error:
            want = repr(error)
        try:
            got = compiled(*device)
        except OverflowError as error:
            got = repr(error)
        if isinstance(want, str):
            assert got == want
        else:
            assert float(got) == pytest.approx(float(want), rel=1e-12)
        np.testing.assert_array_equal(device[1].get(), out)
        assert rt.counters().get("loop_device_program_runs", 0) == 1


def crc32(data: Any) -> Any:
    crc = np.uint32(0xFFFFFFFF)
    poly = np.uint32(0xEDB88320)
    one = np.uint32(1)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]  # a CuPy 0-d array from the first iteration on
        for _ in range(8):
            crc = (crc >> one) ^ ((crc & one) * poly)
    return crc ^ np.uint32(0xFFFFFFFF)


@pytest.mark.parametrize("options", [None, {"loop_graphs": 0}])
def test_a_host_scalar_carried_onto_the_device_keeps_the_loop(
    options: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # `crc` starts as np.uint32 and becomes a CuPy 0-d array: the loop carries it on the
    # device (not unrolled, no resume function), with either option.
    cupy = _cupy()
    compiled = numpile.compile(crc32, options=options)
    with caplog.at_level(logging.INFO):
        for n in (0, 1, 2, 9):
            data = np.random.default_rng(n).integers(0, 256, n).astype(np.uint32)
            want = crc32(data)
            got = compiled(cupy.asarray(data))
            assert type(got) is type(crc32(cupy.asarray(data)))
            assert int(got) == int(want)
    messages = [record.getMessage() for record in caplog.records]
    assert not any("not kept as a loop" in message for message in messages), messages


@pytest.mark.parametrize("name", sorted(NESTS))
def test_loop_nests_with_views_of_the_index_are_one_program_on_the_device(name: str) -> None:
    # The whole nest (`A[i, :j] @ A[:j, j]`, nested loops, `y[:k] = ...`) in one launch.
    cupy = _cupy()
    fn, inputs = NESTS[name]
    compiled = numpile.compile(fn)
    for n in (1, 24):  # 0 and others: interpreted, in test_loops_triton.py
        host = inputs(n)
        rt.reset_counters()
        got = compiled(*(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host))
        want = fn(*host)
        got_host = got.get() if hasattr(got, "get") else got
        assert np.asarray(got_host).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got_host, want, rtol=1e-9, atol=1e-12)
        if n == 24:
            assert rt.counters().get("loop_device_program_runs", 0) >= 1, rt.counters()
            assert "loop_op_by_op_runs" not in rt.counters(), rt.counters()


@pytest.mark.parametrize("n", [1, 7, 300])
def test_mandelbrot_is_one_device_program_on_the_gpu(n: int) -> None:
    # The `while` of each point inside the `for` over the points: one launch, eager's counts.
    cupy = _cupy()
    compiled = numpile.compile(mandelbrot)
    cr, ci = np.linspace(-2.0, 0.6, n), np.linspace(-1.2, 1.2, n)
    cr[0] = 3.0  # escapes at the first step
    rt.reset_counters()
    got = compiled(cupy.asarray(cr), cupy.asarray(ci))
    want = mandelbrot(cr, ci)
    got_host = got.get() if hasattr(got, "get") else got
    assert got_host.dtype == want.dtype
    np.testing.assert_array_equal(got_host, want)
    assert rt.counters().get("loop_device_program_runs", 0) == 1, rt.counters()
    assert "loop_op_by_op_runs" not in rt.counters(), rt.counters()


def bounded_powers(steps: Any, out: Any) -> Any:
    # A carried Python int past int64 after about 40 steps: the program flags it, NumPy reruns.
    for p in range(steps.shape[0]):
        acc = 1
        k = 0
        while k < steps[p]:
            acc = acc * 3 + 100_000_000_003
            k += 1
        out[p] = acc % 1000
    return out


@pytest.mark.parametrize("most", [12, 45])
def test_a_carried_python_int_past_int64_on_the_gpu_gives_eagers_value(most: int) -> None:
    cupy = _cupy()
    compiled = numpile.compile(bounded_powers)
    steps = np.array([0, 1, most, 5])
    want = bounded_powers(steps, np.full(4, -1))
    out = cupy.full(4, -1)
    rt.reset_counters()
    got = compiled(cupy.asarray(steps), out)
    np.testing.assert_array_equal(out.get(), want)
    np.testing.assert_array_equal(got.get() if hasattr(got, "get") else got, want)
    assert rt.counters().get("loop_device_program_runs", 0) >= 1, rt.counters()


def jacobi_until(b: Any, tol: float, maxit: int) -> Any:
    # A `while_loop` of array work (issue 23): its body is compiled per iteration on the
    # host; on CuPy arrays the carried arrays keep it op by op, with eager's values.
    u = b * 0.0
    err = tol + 1.0
    it = 0
    while err > tol and it < maxit:
        new = u.copy()
        new[1:-1] = 0.5 * (u[:-2] + u[2:] + b[1:-1])
        err = abs(new - u).max()
        u = new
        it += 1
    return u


@pytest.mark.parametrize("maxit", [0, 1, 30])
def test_a_while_loop_of_array_work_matches_eager(maxit: int) -> None:
    compiled = numpile.compile(jacobi_until, dynamic=True)
    host = (np.random.default_rng(maxit).random(257), 1e-6, maxit)
    _differential(jacobi_until, compiled, host)
