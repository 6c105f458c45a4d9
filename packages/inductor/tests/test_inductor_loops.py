"""Loops that run as C: `for_loop` nodes of 0-d work compiled into the module's C.

Each test compares the compiled graph with `run_graph` (the `for_loop` op's NumPy
implementation) on values, dtypes and in-place effects.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.loop_programs import forward_substitution, gauss_seidel, sum_of_squares
from numpile_capture import (
    ArrayMeta,
    Graph,
    ScalarMeta,
    ScalarSlot,
    add_loop,
    capture_function,
    get_op,
    run_graph,
)
from numpile_inductor import compile_graph


def _range_sum_graph(n: int, dtype: str) -> Graph:
    # s = 0.0; for i in range(start, stop, step): s = s + x[i]; with run-time bounds.
    body = Graph()
    index = body.placeholder("i", ScalarMeta(int))
    total = body.placeholder("s", ArrayMeta((), dtype))
    x = body.placeholder("x", ArrayMeta((n,), dtype))
    item = body.call(get_op("element_at"), x, index, index=(ScalarSlot(0),))
    body.output = (body.call(get_op("add"), total, item),)
    graph = Graph()
    px = graph.placeholder("x", ArrayMeta((n,), dtype))
    bounds = tuple(graph.placeholder(name, ScalarMeta(int)) for name in ("a", "b", "c"))
    (out,) = add_loop(graph, bounds, [0.0], [px], body, ())  # type: ignore[arg-type]
    graph.output = out
    return graph


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


_RANGE_SUM = compile_graph(_range_sum_graph(7, "float64"))


@pytest.mark.parametrize(
    "bounds",
    [(0, 7, 1), (0, 0, 1), (3, 3, 1), (5, 0, 1), (0, 1, 1), (6, -1, -1), (6, 0, -2), (1, 7, 3),
     (-3, 7, 1), (-7, -1, 2)],
)  # fmt: skip
def test_range_bounds_are_run_time_values(bounds: tuple[int, int, int]) -> None:
    graph = _range_sum_graph(7, "float64")
    x = np.arange(1.0, 8.0) ** 2
    _same(_RANGE_SUM.fn(x, *bounds), run_graph(graph, (x, *bounds)))


def test_empty_range_returns_the_initial_value_untouched() -> None:
    assert type(_RANGE_SUM.fn(np.ones(7), 4, 2, 1)) is float


def test_step_zero_raises_python_value_error() -> None:
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        _RANGE_SUM.fn(np.ones(7), 0, 5, 0)


def test_index_out_of_bounds_raises_numpy_index_error() -> None:
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 7"):
        _RANGE_SUM.fn(np.ones(7), 0, 9, 1)
    with pytest.raises(IndexError, match="index -8 is out of bounds for axis 0 with size 7"):
        _RANGE_SUM.fn(np.ones(7), -8, 0, 1)


def test_scalar_body_is_c_not_an_extern_call_per_iteration() -> None:
    source = _RANGE_SUM.source
    assert "static PyObject *loop_v0(" in source
    assert "for (int64_t i" in source
    assert "o_v0 = loop_v0(argv" in source


def _compiled(fn: Callable[..., Any], *args: Any) -> Any:
    return compile_graph(capture_function(fn, tuple(a.copy() for a in args), {}).graph)


def _compare(fn: Callable[..., Any], *args: Any) -> Any:
    compiled = _compiled(fn, *args)
    ours = [a.copy() for a in args]
    theirs = [a.copy() for a in args]
    got = compiled.fn(*ours)
    want = fn(*theirs)
    _same(got, want)
    for mine, eager in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, eager)
    return compiled


@pytest.mark.parametrize("n", [0, 1, 2, 9])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int64"])
def test_sum_of_squares_matches_numpy(n: int, dtype: str) -> None:
    x = (np.arange(n) - 3).astype(dtype)
    compiled = _compare(sum_of_squares, x)
    if n:
        assert "loop_v" in compiled.source


def test_int32_products_wrap_around_as_numpy_scalars_do() -> None:
    def product(x: Any) -> Any:
        p = x[0]
        for i in range(1, x.shape[0]):
            p = p * x[i]
        return p

    with np.errstate(over="ignore"):
        _compare(product, np.full(12, 977, dtype=np.int32))


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_gauss_seidel_sweep_in_place(n: int) -> None:
    rng = np.random.default_rng(n)
    compiled = _compare(gauss_seidel, rng.random((n, n)))
    if n > 2:
        assert "loop_v" in compiled.source


def test_gauss_seidel_on_a_strided_view() -> None:
    grid = np.random.default_rng(1).random((12, 12))
    compiled = _compiled(gauss_seidel, grid[::2, ::2])
    mine, eager = grid.copy(), grid.copy()
    compiled.fn(mine[::2, ::2])
    gauss_seidel(eager[::2, ::2])
    np.testing.assert_array_equal(mine, eager)


@pytest.mark.parametrize("n", [1, 4, 11])
def test_forward_substitution_nested_loop(n: int) -> None:
    rng = np.random.default_rng(n)
    lower = np.tril(rng.random((n, n))) + n * np.eye(n)
    compiled = _compare(forward_substitution, lower, rng.random(n))
    assert "loop_v" in compiled.source


def _python_int_semantics(x: Any) -> Any:
    k = -7
    acc = 0
    for i in range(x.shape[0]):
        acc += (k - i) // 3 + (k - 2 * i) % 4 + ((k - i) >> 1) - (-(k * i) // 5)
    return acc


def test_floor_division_modulo_and_shifts_on_negative_python_ints() -> None:
    _compare(_python_int_semantics, np.zeros(17))


def _growing_int(x: Any) -> Any:
    k = 1
    for i in range(x.shape[0]):
        x[i] = k % 10
        k = k * 3 + 1
    return k


@pytest.mark.parametrize("n", [5, 70])
def test_python_int_overflow_gives_python_result_and_writes_once(n: int) -> None:
    compiled = _compare(_growing_int, np.zeros(n))
    assert "__builtin_mul_overflow" in compiled.source


def _growing_int_into_zeros(x: Any) -> Any:
    # Adds into a fresh np.zeros: a loop that bails must give NumPy's run zeros again.
    out = np.zeros(3)
    k = 1
    for i in range(x.shape[0]):
        out[i % 3] += k % 10 + x[i]
        k = k * 3 + 1
    return out


@pytest.mark.parametrize("n", [5, 70])
def test_a_bailing_loop_refills_a_fresh_zeros_instead_of_copying_it(n: int) -> None:
    # At 70 steps `k` leaves int64: the C loop bails after writing `out`, fills it with
    # zeros again (no copy of it taken before the loop) and NumPy runs the loop.
    compiled = _compare(_growing_int_into_zeros, np.arange(n) * 0.5)
    assert re.search(r"np_loop_restore\(a_\w+, NULL\)", compiled.source)
    assert "np_loop_snapshot(a_" not in compiled.source


def test_index_error_keeps_the_writes_of_earlier_iterations() -> None:
    body = Graph()
    index = body.placeholder("i", ScalarMeta(int))
    x = body.placeholder("x", ArrayMeta((5,), "float64"))
    value = body.call(get_op("multiply"), index, 2.0)
    body.call(get_op("setitem_at"), x, value, index, index=(ScalarSlot(0),))
    body.output = ()
    graph = Graph()
    px = graph.placeholder("x", ArrayMeta((5,), "float64"))
    stop = graph.placeholder("n", ScalarMeta(int))
    add_loop(graph, (0, stop, 1), [], [px], body, (4,))
    graph.output = px
    compiled = compile_graph(graph)
    assert "loop_v" in compiled.source
    mine, eager = np.full(5, -1.0), np.full(5, -1.0)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        compiled.fn(mine, 8)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        run_graph(graph, (eager, 8))
    np.testing.assert_array_equal(mine, eager)
    np.testing.assert_array_equal(mine, np.arange(5) * 2.0)


def _row_update(a: Any) -> Any:
    # 2-d work in the body (a block of rows): no inline C loop for it yet.
    for i in range(1, a.shape[0]):
        a[i:, 1:] += a[i - 1 : -1, :-1]
    return a


def test_array_sized_body_falls_back_to_numpy_with_a_perf_hint(
    caplog: pytest.LogCaptureFixture, fresh_cache: Path
) -> None:
    # A fresh cache: the hint is logged where the loop is compiled, not on a cache hit.
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled = _compare(_row_update, np.arange(20.0).reshape(4, 5))
    assert "loop_v" not in compiled.source
    assert any("per iteration" in record.getMessage() for record in caplog.records)


def _left_shift(a: Any, b: Any) -> Any:
    return np.left_shift(a, b)


def _right_shift(a: Any, b: Any) -> Any:
    return np.right_shift(a, b)


@pytest.mark.parametrize("fn", [_left_shift, _right_shift])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_shifts_follow_numpy_for_every_count(fn: Callable[..., Any], dtype: str) -> None:
    # Bit loops (CRC) shift NumPy integers; counts outside [0, bits) give 0 or -1.
    a = np.tile(np.array([-128, -5, -1, 0, 1, 7, 100, 127]), 8).astype(dtype)
    b = np.repeat(np.array([-1, 0, 1, 3, 7, 8, 63, 64]), 8).astype(dtype)
    compiled = compile_graph(capture_function(fn, (a, b), {}).graph)
    assert not compiled.extern_ops
    _same(compiled.fn(a, b), fn(a, b))


def _stencil_steps(a: Any) -> Any:
    b = a.copy()
    for _ in range(3):
        b[1:-1] = 0.25 * (a[:-2] + 2.0 * a[1:-1] + a[2:])
        a[:] = b
    return a


def test_array_body_through_the_backend_matches_numpy() -> None:
    a = np.random.default_rng(3).random(70_000)
    _compare(_stencil_steps, a)


def _signed_sum(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i]
        else:
            s -= 2 * x[i]
    return s


def _crc32(data: Any) -> Any:
    crc = 0xFFFFFFFF
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            if crc & 1:  # noqa: SIM108 - an if statement is what the test compiles
                crc = (crc >> 1) ^ 0xEDB88320
            else:
                crc = crc >> 1
    return crc ^ 0xFFFFFFFF


def _collatz_steps(x: Any) -> Any:
    out = 0
    for i in range(x.shape[0]):
        k = x[i]
        while k > 1:
            if k % 2 == 0:  # noqa: SIM108 - an if statement is what the test compiles
                k = k // 2
            else:
                k = 3 * k + 1
            out += 1
    return out


@pytest.mark.parametrize(
    ("fn", "make"),
    [
        (_signed_sum, lambda: np.random.default_rng(0).standard_normal(33)),
        (_crc32, lambda: np.random.default_rng(1).integers(0, 256, 40)),
        (_collatz_steps, lambda: np.arange(1, 40)),
    ],
)
def test_branches_and_while_loops_in_bodies_are_c(
    fn: Callable[..., Any], make: Callable[[], Any]
) -> None:
    compiled = _compare(fn, make())
    assert "loop_v" in compiled.source


def _python_arithmetic_before_float32(x: Any) -> Any:
    s = 0.1
    for i in range(x.shape[0]):
        s = s * 3.0 + x[i]  # first iteration: Python float arithmetic, then float32
    return s


def _weak_scalar_meets_float32(x: Any) -> Any:
    s = 0.5
    for i in range(x.shape[0]):
        s = s + x[i] * x[i]  # the Python float meets float32 at once: converted exactly
    return s


def _int_arithmetic_before_float64(x: Any) -> Any:
    s = 3
    for i in range(x.shape[0]):
        s = s - 1 + x[i]  # first iteration: a Python int difference, then float64
    return s


def test_a_first_iteration_whose_result_its_local_would_round_keeps_eager_values() -> None:
    # Run apart, the first iteration's float64 result would pass through the int local
    # of the Python int it starts on (truncated): such a loop is not run apart.
    x = np.array([0.25, 1.5, -2.75])
    _compare(_int_arithmetic_before_float64, x)


@pytest.mark.parametrize("n", [1, 7])
def test_a_first_iteration_on_python_floats_keeps_eager_values(n: int) -> None:
    # The first iteration runs on a Python float (double arithmetic) before the carried value
    # becomes float32: the body, float32 from the start, would round differently, so the
    # C function runs the first iteration's own graph once, then the body's loop.
    x = np.linspace(0.1, 0.9, n).astype(np.float32)
    compiled = _compare(_python_arithmetic_before_float32, x)
    assert "loop_v" in compiled.source
    compiled = _compare(_weak_scalar_meets_float32, x)
    assert "loop_v" in compiled.source
