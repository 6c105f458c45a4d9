"""`while` loops inside one Triton loop program (issue 23 item 5, issue 28 item 2).

A `while` nested in a loop of scalar work (mandelbrot's escape loop inside its `for` over
the points) is a `while` of the kernel; carried Python ints are int64 whose overflow
reruns the loop with NumPy; bool 0-d values are kernel bools; an inner loop that retypes a
value decides its type as eager does. Each program runs under Triton's CPU interpreter
and is compared with NumPy eager (values, dtypes, result types, in-place writes); the
runs of `numpile_runtime.counters()` say the loop ran as ONE device program.

Skipped when triton is not installed; under a process that imported triton without the
interpreter, the module skips (run it alone, as `nox -s tests-triton-interpret` does).
On a GPU, integration_tests/test_gpu_loops.py runs mandelbrot on the device.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt

if "triton" not in sys.modules and not rt.cupy_available():
    # NOTE: not on a GPU machine, where the GPU tests of the same process need real kernels.
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton", reason="triton is not installed (pip install triton)")

from type_gap_programs import float_in_inner_while, inner_data, int_in_inner_while

import numpile
from benchmarks.loop_programs import mandelbrot

pytestmark = pytest.mark.skipif(
    rt.triton_status().mode != "interpret",
    reason="needs TRITON_INTERPRET=1 set before triton is imported: run this file alone",
)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def _paths(fn: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, int]]:
    # The result of `fn(*args)` and the loop paths its call took (numpile_runtime counters).
    rt.reset_counters()
    got = fn(*args)
    counts = rt.counters()
    names = ("loop_device_program_runs", "loop_op_by_op_runs", "loop_host_runs")
    return got, {name: counts[name] for name in names if name in counts}


@pytest.fixture
def grids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # The program instances of each loop program launched (the launch's grid).
    launched: list[int] = []
    original = rt.TritonLauncher.__call__

    def counting(launcher: Any, args: Any, grid: int, *rest: Any) -> Any:
        if getattr(launcher.fn, "__name__", "") == "loop_program":
            launched.append(grid)
        return original(launcher, args, grid, *rest)

    monkeypatch.setattr(rt.TritonLauncher, "__call__", counting)
    return launched


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def _points(n: int) -> tuple[Any, Any]:
    # Points that escape at the first step (|c| > 2), never escape (c = 0) and between.
    cr = np.array([3.0, 0.0, 0.5, -2.5, 0.4])[:n]
    ci = np.array([0.0, 0.0, 0.0, 0.0, 0.3])[:n]
    return cr, ci


@pytest.mark.parametrize("n", [0, 1, 5])
def test_mandelbrot_is_one_device_program(n: int, grids: list[int]) -> None:
    compiled = numpile.compile(mandelbrot, backend="triton", dynamic=True)
    got, paths = _paths(compiled, *_points(n))
    want = mandelbrot(*_points(n))
    _same(got, want)
    if n >= 1:
        assert paths == {"loop_device_program_runs": 1}, paths
        # One launch; the points are independent iterations: an instance each.
        assert grids == [n], grids
    if n >= 3:
        assert list(want[:3]) == [1, 64, 5]  # the first step escapes; never escapes


def smooth_in_place(x: Any, out: Any) -> Any:
    # Independent iterations in the graph (each writes out[p], reads x around p); the
    # run time keeps them in order where `out` is `x` (iteration p then reads x[p - 1]
    # as iteration p - 1 left it).
    for p in range(1, x.shape[0] - 1):
        v = x[p - 1] + x[p + 1]
        k = 0
        while v > 0.5 and k < 8:
            v = v * 0.5
            k += 1
        out[p] = v + k
    return out


@pytest.mark.parametrize("aliased", [False, True])
def test_independent_iterations_run_an_instance_each_unless_memory_overlaps(
    aliased: bool, grids: list[int]
) -> None:
    compiled = numpile.compile(smooth_in_place, backend="triton", dynamic=True)
    x, got_x = np.linspace(0.0, 3.0, 7), np.linspace(0.0, 3.0, 7)
    want = smooth_in_place(x, x if aliased else np.zeros(7))
    got, paths = _paths(compiled, got_x, got_x if aliased else np.zeros(7))
    _same(got, want)
    np.testing.assert_array_equal(got_x, x)
    assert paths == {"loop_device_program_runs": 1}, paths
    assert grids == [1 if aliased else 5], grids


def bounded_powers(steps: Any, scale: int, out: Any) -> Any:
    # A carried Python int that outgrows int64 after enough steps (`scale` 3: about 40).
    for p in range(steps.shape[0]):
        acc = 1
        k = 0
        while k < steps[p]:
            acc = acc * scale + 100_000_000_003
            k += 1
        out[p] = acc % 1000
    return out


@pytest.mark.parametrize(("most", "reruns"), [(12, False), (45, True)])
def test_a_carried_python_int_past_int64_reruns_the_loop_with_numpy(
    most: int, reruns: bool
) -> None:
    # The program flags the overflow, the arrays it wrote are put back, and NumPy's big ints
    # give the exact remainder.
    compiled = numpile.compile(bounded_powers, backend="triton", dynamic=True)
    steps = np.array([0, 1, most, 5])
    want = bounded_powers(steps, 3, np.full(4, -1))
    got, paths = _paths(compiled, steps, 3, np.full(4, -1))
    _same(got, want)
    expected = {"loop_device_program_runs": 1}
    if reruns:
        expected["loop_op_by_op_runs"] = 1
    assert paths == expected, paths


def product_of_python_ints(x: Any, n: int) -> Any:
    # A carried Python int multiplied and negated: int64 checks of `*` and unary `-`.
    k = 1
    for i in range(n):
        k = -(k * 3) + i
        x[i] = x[i] + 1.0  # written before the overflow: put back, then NumPy's writes
    return k


@pytest.mark.parametrize("n", [39, 41])
def test_python_int_products_match_eager_past_int64(n: int) -> None:
    compiled = numpile.compile(product_of_python_ints, backend="triton", dynamic=True)
    want_x, got_x = np.zeros(n), np.zeros(n)
    want = product_of_python_ints(want_x, n)
    got, paths = _paths(compiled, got_x, n)
    assert type(got) is int and got == want
    np.testing.assert_array_equal(got_x, want_x)
    assert paths.get("loop_device_program_runs") == 1, paths
    assert ("loop_op_by_op_runs" in paths) == (abs(want) > 2**63), paths


def runs_above(x: Any, out: Any) -> Any:
    # A NumPy bool carried by the loop (`flip`), a comparison tested by the inner `while`.
    flip = x[0] > 0.5
    for i in range(x.shape[0] - 3):
        above = x[i] > 0.5
        flip = flip ^ above
        k = 0
        while above and k < 3:
            k += 1
            above = x[i + k] > 0.5
        out[i] = k + flip
    return flip


def test_bool_values_carried_and_tested_run_in_the_program() -> None:
    compiled = numpile.compile(runs_above, backend="triton", dynamic=True)
    x = np.array([0.9, 0.7, 0.1, 0.8, 0.6, 0.7, 0.2, 0.9, 0.3])
    want_out, got_out = np.zeros(9), np.zeros(9)
    want = runs_above(x, want_out)
    got, paths = _paths(compiled, x, got_out)
    _same(got, want)
    np.testing.assert_array_equal(got_out, want_out)
    assert paths == {"loop_device_program_runs": 1}, paths


# The type gap (numpile_capture.loop_entry): an inner `while` on array data kept with the
# loop's types retypes `t` only where it runs. The program takes the loop once `t` has the
# loop's type (the first iterations run on the host until then), so eager's type follows.
@pytest.mark.parametrize("fn", [float_in_inner_while, int_in_inner_while])
def test_an_inner_while_that_may_not_run_gives_eagers_types(fn: Callable[..., Any]) -> None:
    compiled = numpile.compile(fn, backend="triton", dynamic=True)
    integer = fn is int_in_inner_while
    for n in (3, 0):
        for kind in ("never", "sometimes", "always"):
            got, paths = _paths(compiled, inner_data(kind, integer), n)
            _same(got, fn(inner_data(kind, integer), n))
            if n == 3 and kind != "never":
                # The iterations after the one whose `while` ran: one device program.
                assert paths.get("loop_device_program_runs") == 1, (kind, paths)


def local_in_inner_while(x: Any, out: Any) -> Any:
    # `z` is a Python float after an iteration whose `while` did not run, a NumPy float64
    # after one where it ran: `z * np.float32(2.0)` rounds to float32 only in the first.
    for i in range(x.shape[0] - 1):
        z = 0.1
        k = i
        while x[k] > 0.5:
            z = z + x[k]
            k += 1
        out[i] = z * np.float32(2.0)
    return out


def test_a_value_retyped_in_some_iterations_only_keeps_the_host_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    compiled = numpile.compile(local_in_inner_while, backend="triton", dynamic=True)
    x = np.array([0.0, 0.9, 0.0, 0.7, 0.0])
    want_out, got_out = np.zeros(5), np.zeros(5)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        got, paths = _paths(compiled, x, got_out)
    local_in_inner_while(x, want_out)
    assert got is got_out
    np.testing.assert_array_equal(got_out, want_out)  # float32-rounded where eager rounds
    assert "loop_device_program_runs" not in paths, paths
    reasons = [r.getMessage() for r in caplog.records if "per iteration" in r.getMessage()]
    assert any("the type of `z` depends on whether an inner loop ran" in r for r in reasons)


def reciprocal_steps_for(x: Any, out: Any) -> Any:
    for i in range(x.shape[0]):
        z = 0.0
        for _ in range(3):
            z = 1.0 / z + x[i]  # Python's ZeroDivisionError on the first pass's 0.0
        out[i] = z
    return out


def test_a_first_pass_that_raises_in_python_keeps_the_host_loop() -> None:
    # The inner loop's first pass runs on Python floats (`1.0 / 0.0` raises), its body on
    # NumPy float64 (inf): the program would compute the body's, so NumPy runs the loop
    # (`while` loops take the same check: program_loops.retyped_inside).
    compiled = numpile.compile(reciprocal_steps_for, backend="triton", dynamic=True)
    x = np.array([0.5, 0.25])
    with pytest.raises(ZeroDivisionError):
        reciprocal_steps_for(x, np.zeros(2))
    with pytest.raises(ZeroDivisionError):
        compiled(x, np.zeros(2))
