"""Loops on the Triton backend (issue 23, item 5), under Triton's CPU interpreter.

A loop whose body does array work runs as a host loop of kernel launches: the body is
compiled once and each iteration launches its kernels with the index as an argument. A
loop of 0-d work runs as one Triton program: one launch for the whole loop. Each program
runs at several trip counts (0 and 1 among them) and is compared with eager: values,
dtypes, result types, the inputs afterwards (in-place writes) and exceptions; the launches
are counted through `numpile_runtime.TritonLauncher`.

Skipped when triton is not installed. The interpreter is switched on before triton is
imported (it reads the variable at import); under a process that imported triton
without it, the module skips (run it alone, as `nox -s tests-triton-interpret` does).
On a GPU (`pytest -m gpu`), `test_loops_on_a_gpu` runs the same programs on the device.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt

if "triton" not in sys.modules and not rt.cupy_available():
    # NOTE: not on a GPU machine, where the GPU tests of the same process need real kernels.
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton", reason="triton is not installed (pip install triton)")

from loop_nests import NESTS

import numpile

_MODE = rt.triton_status().mode


def rows_recurrence(A: Any, n: int) -> Any:
    s = np.zeros(A.shape[1])
    for i in range(n):
        s = s * 0.5 + np.sin(A[i]) * i
    return s


def columns_in_place(A: Any, n: int) -> Any:
    for i in range(1, n):
        A[:, i] += A[:, i - 1] * 0.5
    return A.sum()


def rows_with_break(A: Any, n: int) -> Any:
    s = np.ones(A.shape[1], dtype=np.float32)
    for i in range(n):
        s = s * A[i] + 1.0
        if i == 3:
            break
    return s


def rows_of_numpy_scalars_of_the_index(A: Any, n: int) -> Any:
    # np.float64(i) and np.float32(i) are casts in the body's kernel; np.uint8(i) (which
    # raises at 256 in NumPy) is NumPy's call per iteration.
    for i in range(n):
        A[np.int64(i)] = A[i] * np.float64(i) + np.float32(i) - np.uint8(i)
    return A


def sum_of_squares(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
    return s


def float32_recurrence(x: Any, n: int) -> Any:
    acc = np.float32(1.0) * x[0]
    for i in range(1, n):
        acc = acc * np.float32(0.75) + x[i] * i
    return acc


def backward_sweep(x: Any, n: int) -> Any:
    for i in range(n - 1, 0, -2):
        x[i] = np.sqrt(x[i]) + x[i - 1] * 0.5
    return x


def branch_and_break(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(1, n):
        if i % 3 == 1:
            x[i] = x[i - 1] * 0.5 + x[i]
        else:
            s = s + x[i] * i
        if i == 9:
            break
    return s


def mixed_dtypes(x: Any, n: int) -> Any:
    w = (np.arange(x.shape[0]) % 5).astype(np.int64)
    t = 0.0
    for i in range(n):
        t = t + np.exp(-x[i]) * w[i] - np.maximum(x[i], 0.5)
    return t


def two_term_recurrence(x: Any, n: int) -> Any:
    # `a, b = b, ...`: every new value is read before any carried value changes.
    a = x[0] * 1.0
    b = x[1] * 1.0
    for _ in range(n):
        a, b = b, a + b * 0.5
    return a, b


def out_of_bounds(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        x[i] = x[i] + 1.0
        s = s + x[i + 2]
    return s


ARRAY_BODIES: dict[str, Callable[..., Any]] = {
    "rows_recurrence": rows_recurrence,
    "columns_in_place": columns_in_place,
    "rows_with_break": rows_with_break,
    "rows_of_numpy_scalars_of_the_index": rows_of_numpy_scalars_of_the_index,
}
SCALAR_BODIES: dict[str, Callable[..., Any]] = {
    "sum_of_squares": sum_of_squares,
    "float32_recurrence": float32_recurrence,
    "backward_sweep": backward_sweep,
    "branch_and_break": branch_and_break,
    "mixed_dtypes": mixed_dtypes,
    "two_term_recurrence": two_term_recurrence,
    "out_of_bounds": out_of_bounds,
}
TRIPS = (0, 1, 2, 7, 23)
# How many times each array body runs at trip count n.
ITERATIONS: dict[str, Callable[[int], int]] = {
    "rows_recurrence": lambda n: n,
    "columns_in_place": lambda n: max(n - 1, 0),
    "rows_with_break": lambda n: min(n, 4),
    "rows_of_numpy_scalars_of_the_index": lambda n: n,
}


def _inputs(name: str, n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    if name in ARRAY_BODIES:
        dtype = np.float32 if name == "rows_with_break" else np.float64
        return (rng.random((max(n, 1), max(n, 1) + 2)).astype(dtype), n)
    dtype = np.float32 if name == "float32_recurrence" else np.float64
    return (rng.random(max(n, 1) + 1).astype(dtype), n)


class _Launches:
    # The kernel launches of compiled calls: each kernel's name, and how often each kernel
    # (the jitted function object) was launched.
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        self.per_kernel: dict[int, int] = {}
        original = rt.TritonLauncher.__call__

        def counting(launcher: Any, *args: Any, **kwargs: Any) -> Any:
            self.names.append(getattr(launcher.fn, "__name__", "?"))
            key = id(launcher.fn)
            self.per_kernel[key] = self.per_kernel.get(key, 0) + 1
            return original(launcher, *args, **kwargs)

        monkeypatch.setattr(rt.TritonLauncher, "__call__", counting)

    def clear(self) -> None:
        self.names.clear()
        self.per_kernel.clear()


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, Any]:
    try:
        return fn(*args), None
    except Exception as error:
        return None, error


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray | np.generic):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def _check(name: str, fn: Callable[..., Any], n: int, compiled: Callable[..., Any]) -> None:
    eager_args, compiled_args = _inputs(name, n), _inputs(name, n)
    want, want_error = _outcome(fn, eager_args)
    got, got_error = _outcome(compiled, compiled_args)
    if want_error is not None:
        assert type(got_error) is type(want_error) and str(got_error) == str(want_error)
    else:
        assert got_error is None, got_error
        if type(want) is float and type(got) is np.float64:
            # A loop whose iterations left its initial Python float unchanged gives it as the
            # NumPy scalar the loop carries (docs/status.md, "Loops that stay loops").
            assert got == want
        else:
            _same(got, want)
    for before, after in zip(eager_args, compiled_args, strict=True):
        if isinstance(before, np.ndarray):
            np.testing.assert_array_equal(after, before)  # the same in-place writes


pytestmark = pytest.mark.skipif(
    _MODE != "interpret",
    reason="needs TRITON_INTERPRET=1 set before triton is imported: run this file alone",
)


@pytest.mark.parametrize("name", list(ARRAY_BODIES))
def test_array_body_is_a_host_loop_of_one_compiled_body(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn = ARRAY_BODIES[name]
    compiled = numpile.compile(fn, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    for n in TRIPS:
        launches.clear()
        _check(name, fn, n, compiled)
        # One launch of the body's kernel per iteration, the same kernel every time (the
        # index is a kernel argument); the code around the loop launches its own kernels.
        most = max(launches.per_kernel.values(), default=0)
        iterations = ITERATIONS[name](n)
        assert most == iterations if iterations >= 2 else most <= 1, launches.names
        assert "loop_program" not in launches.names


@pytest.mark.parametrize("name", list(SCALAR_BODIES))
def test_scalar_body_is_one_device_program(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fn = SCALAR_BODIES[name]
    compiled = numpile.compile(fn, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    for n in TRIPS:
        launches.clear()
        _check(name, fn, n, compiled)
        programs = launches.names.count("loop_program")
        # Iterations after the first run in one program (the first runs on the host when
        # it carries a Python float that NEP 50 turns into the loop's NumPy scalar).
        assert programs == (1 if n >= 3 else programs), launches.names
        assert programs <= 1


def test_a_new_trip_count_launches_the_same_program(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = numpile.compile(sum_of_squares, backend="triton", dynamic=True)
    x = np.random.default_rng(0).random(400)
    launches = _Launches(monkeypatch)
    rt.reset_counters()
    for n in (5, 50, 400):
        assert compiled(x, n) == pytest.approx(sum_of_squares(x, n), rel=1e-12)
    assert launches.names == ["loop_program"] * 3
    assert rt.counters().get("triton_loop_program", 0) <= 1  # generated at most once
    assert rt.counters().get("loop_device_program_runs") == 3  # the path, for benchmarks
    assert "loop_host_runs" not in rt.counters()


def test_loop_not_expressible_as_one_program_still_matches_eager() -> None:
    # `int(i)` of a run-time value is not captured: the loop runs in Python (a carried
    # Python int alone is one program: test_loops_triton_while.py).
    def collatz_steps(x: Any, n: int) -> Any:
        k = 1
        for i in range(n):
            k = k * 3 + int(i)
        return k + x[0]

    compiled = numpile.compile(collatz_steps, backend="triton", dynamic=True)
    x = np.ones(3)
    for n in (0, 1, 40):
        assert compiled(x, n) == collatz_steps(x, n)


def jacobi_1d(A: Any, B: Any, steps: int) -> Any:
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A.sum()


def test_loop_of_kernels_on_host_arrays_stays_a_host_loop_with_a_hint(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # On a GPU the loop replays as one CUDA graph (integration_tests/test_gpu_loops.py);
    # NumPy arrays (the interpreter) keep the host loop, and a perf hint says why.
    compiled = numpile.compile(jacobi_1d, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    rng = np.random.default_rng(3)
    rt.reset_counters()
    with caplog.at_level("INFO", logger="numpile.perf_hints"):
        for steps in (0, 1, 7, 7):
            launches.clear()
            A = rng.random(40)
            A2, B, B2 = A.copy(), A.copy(), A.copy()
            assert compiled(A, B, steps) == pytest.approx(jacobi_1d(A2, B2, steps), rel=1e-12)
            np.testing.assert_array_equal(A, A2)
            np.testing.assert_array_equal(B, B2)
            most = max(launches.per_kernel.values(), default=0)  # `A.sum()` launches once
            assert most == steps if steps >= 2 else most <= 1, launches.names
    hints = [r.getMessage() for r in caplog.records if "not as a CUDA graph" in r.getMessage()]
    assert len(hints) == 1 and "is a NumPy array on the host" in hints[0], hints
    assert rt.counters().get("loop_host_runs") == 4  # the path, for benchmarks


def test_grad_through_a_loop_is_one_graph_for_every_trip_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The loop VJP (a loop stacking the carried values into stacks of run-time length,
    # then a reverse loop) runs as host loops of launches, one graph for every trip count.
    from numpile_capture.capture_events import recording_captures

    def pendulums(x: Any, n: int) -> Any:
        p, v = x, x * 0.0
        for _ in range(n):
            v = v - 0.05 * np.sin(p)
            p = p + 0.05 * v
        return (p * p).sum()

    compiled = numpile.compile(numpile.grad(pendulums), backend="triton")
    launches = _Launches(monkeypatch)
    x = np.linspace(-1.0, 1.0, 5)
    with recording_captures() as events:
        for n in (0, 1, 2, 7):
            launches.clear()
            want = numpile.grad(pendulums, compiler="eager")(x, n)
            np.testing.assert_allclose(compiled(x, n), want, rtol=1e-10, atol=1e-12)
            assert max(launches.per_kernel.values(), default=0) >= n  # per iteration
    assert sum(1 for event in events if event.graph is not None) == 1


# NumPy scalar constructors of run-time Python scalars (`numpy_scalar` nodes) in one program:
# NumPy's exact values in range; where NumPy raises (an int or a truncated float out of the
# target's range, NaN) or warns (a float that overflows float32) the program flags it and
# the loop runs again with NumPy, which raises or warns from the user's line.
def sum_at_an_int64_of_the_index(x: Any, n: int) -> Any:
    s = 0.0
    for i in range(n):
        s = s + x[np.int64(i)] * np.float64(i) - np.float32(n - i)
    return s


def uint8_of_the_index_wraps_in_arithmetic(x: Any, n: int) -> Any:
    out = np.zeros(n, dtype=np.uint8)
    for i in range(n):
        out[i] = np.uint8(i * 20) + 250  # np.uint8(260) raises OverflowError (i = 13)
        x[i] = x[i] + np.int8(3 - i)
    return out


def int16_of_a_float_truncates(x: Any, y: float, n: int) -> Any:
    s = 0.0
    for i in range(n):
        s = s + np.int16(y * i) * x[i]
        x[i] = s
    return s


def uint32_of_a_float(x: Any, y: float, n: int) -> Any:
    for i in range(n):
        x[i] = np.uint32(y - i) + np.float32(y * i)
    return x


def int64_of_a_float_stored(x: Any, y: float, n: int) -> Any:
    for i in range(n):
        x[i] = np.int64(y * i) + 1
    return x


NUMPY_SCALAR_BODIES: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "int64_index_float64_float32_of_ints": (sum_at_an_int64_of_the_index, ()),
    "uint8_and_int8_of_the_index": (uint8_of_the_index_wraps_in_arithmetic, ()),
    "int16_of_a_negative_float": (int16_of_a_float_truncates, (-2.75,)),
    "int16_of_a_float_past_int16": (int16_of_a_float_truncates, (2900.5,)),
    "int64_of_a_float": (int64_of_a_float_stored, (1e17,)),
    "int64_of_a_float_past_int64": (int64_of_a_float_stored, (1e18,)),
    "int64_of_nan": (int64_of_a_float_stored, (float("nan"),)),
    "int64_of_inf": (int64_of_a_float_stored, (float("inf"),)),
    "uint32_of_a_float_below_zero": (uint32_of_a_float, (4.5,)),
}


def _numpy_scalar_inputs(extra: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    return (np.random.default_rng(n).random(max(n, 1) + 1), *extra, n)


@pytest.mark.parametrize("name", list(NUMPY_SCALAR_BODIES))
def test_numpy_scalars_of_run_time_values_are_one_program(
    name: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fn, extra = NUMPY_SCALAR_BODIES[name]
    compiled = numpile.compile(fn, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    programs = []
    with caplog.at_level("INFO", logger="numpile.perf_hints"), np.errstate(over="ignore"):
        for n in (*TRIPS, 14):
            launches.clear()
            eager_args = _numpy_scalar_inputs(extra, n)
            compiled_args = _numpy_scalar_inputs(extra, n)
            want, want_error = _outcome(fn, eager_args)
            got, got_error = _outcome(compiled, compiled_args)
            assert repr(got_error) == repr(want_error)
            if want_error is None:
                assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
                np.testing.assert_array_equal(got, want)
            for before, after in zip(eager_args, compiled_args, strict=True):
                if isinstance(before, np.ndarray):
                    np.testing.assert_array_equal(after, before)  # earlier writes kept
            programs.append(launches.names.count("loop_program"))
    # One launch at most per call (an error flagged runs NumPy after it), and the loop is one
    # program: no perf hint says its body runs with NumPy per iteration.
    assert max(programs) == 1, programs
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def float32_of_a_float(x: Any, y: float, n: int) -> Any:
    s = np.float32(0.0)
    for i in range(n):
        x[i] = x[i] * 2.0
        s = s + np.float32(y * i)
    return s


@pytest.mark.parametrize("over", ["warn", "raise"])
def test_float32_overflow_warns_or_raises_as_numpy(
    over: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # np.float32(1e38 * 4) overflows: NumPy warns (or raises under errstate); the program
    # flags it and NumPy runs the loop again from its first iteration.
    compiled = numpile.compile(float32_of_a_float, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    for y in (1e37, 1e38):
        launches.clear()
        eager_args, compiled_args = _numpy_scalar_inputs((y,), 7), _numpy_scalar_inputs((y,), 7)
        with np.errstate(over=over), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            want, want_error = _outcome(float32_of_a_float, eager_args)
            eager_warnings = {str(w.message) for w in caught}
            caught.clear()
            got, got_error = _outcome(compiled, compiled_args)
            compiled_warnings = {str(w.message) for w in caught}
        assert repr(got_error) == repr(want_error)
        assert repr(got) == repr(want)
        assert compiled_warnings == eager_warnings
        np.testing.assert_array_equal(compiled_args[0], eager_args[0])
        assert launches.names.count("loop_program") == 1


# Loop nests of scalar work with 1-d views whose bounds follow the index (issue 28 item 2,
# `loop_nests.py`): nested `for` loops and `A[i, :j] @ A[:j, j]`, `x[:k] = ...` as masked
# tiles, all in one program. Compared with eager at trip counts 0, 1 and a few (sums in
# another order: a tolerance of 1e-10).
def _close(fn: Callable[..., Any], compiled: Callable[..., Any], args: tuple[Any, ...]) -> None:
    # `compiled` on copies of `args`, `fn` on `args`: values, dtypes, errors, in-place writes.
    mine = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    want, want_error = _outcome(fn, args)
    got, got_error = _outcome(compiled, mine)
    assert repr(got_error) == repr(want_error)
    if want_error is None:
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for before, after in zip(args, mine, strict=True):
        if isinstance(before, np.ndarray):
            np.testing.assert_allclose(after, before, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(NESTS))
def test_loop_nest_with_views_of_the_index_is_one_program(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn, inputs = NESTS[name]
    compiled = numpile.compile(fn, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    for n in (0, 1, 5):
        launches.clear()
        rt.reset_counters()
        _close(fn, compiled, inputs(n))
        if n == 5:  # smaller sizes specialize and unroll
            # Each loop nest is one launch (triangular_solves has two), none op by op.
            programs = launches.names.count("loop_program")
            assert programs == rt.counters().get("loop_device_program_runs") >= 1
            assert "loop_op_by_op_runs" not in rt.counters(), rt.counters()
            assert "loop_host_runs" not in rt.counters(), rt.counters()


def row_past_the_end(A: Any, x: Any, n: int) -> Any:
    for i in range(n):
        x[i] = x[i] + A[i + 1, :i] @ x[:i]  # A[n] is out of bounds (IndexError)
    return x


def reversed_update(x: Any, n: int) -> Any:
    for k in range(n, n + 2):
        x[:k] = x[:k] + 0.5 * x[k - 1 :: -1]
    return x


def test_an_index_error_in_a_view_raises_after_eagers_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    launches = _Launches(monkeypatch)
    rng = np.random.default_rng(3)
    compiled = numpile.compile(row_past_the_end, backend="triton", dynamic=True)
    _close(row_past_the_end, compiled, (rng.random((4, 4)), rng.random(4), 4))
    assert launches.names.count("loop_program") == 1, launches.names


@pytest.mark.parametrize("n", [3, 257])
def test_a_store_reading_what_it_overwrites_is_numpys_value(n: int) -> None:
    # Within one tile the program reads the whole value first; past one tile (256
    # elements) it flags the call, and NumPy runs the loop again.
    compiled = numpile.compile(reversed_update, backend="triton", dynamic=True)
    _close(reversed_update, compiled, (np.random.default_rng(n).random(n + 2), n))


def scaled_rows(A: Any, n: int) -> Any:
    for t in range(n):
        for i in range(A.shape[0]):
            A[i, :] = A[i, :] * 0.5 + t  # array-sized rows: a body kernels take
    return A


@pytest.mark.parametrize(("columns", "programs"), [(40, 1), (5000, 0)])
def test_long_rows_of_a_nested_loop_stay_with_kernels(
    columns: int, programs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Short rows: the whole nest is one program; rows past 4096 elements run as kernels
    # (one warp would walk them 256 at a time).
    compiled = numpile.compile(scaled_rows, backend="triton", dynamic=True)
    launches = _Launches(monkeypatch)
    _close(scaled_rows, compiled, (np.random.default_rng(1).random((2, columns)), 3))
    assert launches.names.count("loop_program") == programs, launches.names
