"""Loops with `while` tests and early exits compiled whole to C (issue 23).

A `while` outside any `for` whose body is 0-d work (codegen/c/while_function.py), `while`
and `if` tests of several operands (`and` / `or` / `not`), NumPy scalar constants carried
(crc32), and a `for` that returns early: each is compiled with the inductor and compared
with eager Python on values, dtypes and in-place effects; the generated module must run
the loop as its own C function (no extern call running the body with NumPy).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from crc_programs import crc32

from benchmarks.loop_programs import mandelbrot
from numpile_capture import capture_function, compile_function, reset
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_inductor import compile_graph


def _compile(fn: Callable[..., Any], *args: Any) -> Any:
    graph = capture_function(fn, tuple(_copy(a) for a in args), {}).graph
    return compile_graph(graph)


def _dispatched(fn: Callable[..., Any]) -> tuple[Callable[..., Any], list[Any]]:
    # `fn` through capture's dispatcher (Python ints become graph inputs once they change,
    # sizes symbolic), each graph compiled by the inductor; the modules built, in order.
    reset()
    built: list[Any] = []

    def backend(graph: Any, example_inputs: Any) -> Any:
        compiled = compile_graph(graph)
        built.append(compiled)
        return compiled.fn

    return compile_function(fn, backend=backend, dynamic=True), built


def _assert_every_loop_is_c(built: list[Any]) -> None:
    # Each module whose graph (printed in its header) holds a loop runs it as C.
    loops = [m for m in built if "while_loop(" in m.source or "for_loop(" in m.source]
    assert loops
    for module in loops:
        assert "static PyObject *loop_v" in module.source, module.source[:2000]


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _check(compiled: Any, fn: Callable[..., Any], *args: Any) -> None:
    ours = [_copy(a) for a in args]
    theirs = [_copy(a) for a in args]
    _same(compiled.fn(*ours), fn(*theirs))
    for mine, eager in zip(ours, theirs, strict=True):
        if isinstance(eager, np.ndarray):
            np.testing.assert_array_equal(mine, eager)


def _assert_c_loop(compiled: Any, caplog: pytest.LogCaptureFixture) -> None:
    assert "static PyObject *loop_v" in compiled.source
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def collatz(a: Any) -> Any:
    n = a[0]
    k = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        k += 1
    return n, k


def leading_small(x: Any) -> Any:
    i = 0
    while i < x.shape[0] and abs(x[i]) < 1.5:
        i += 1
    return i


def bisection(a: Any) -> Any:
    target = a[0]
    lo = target * 0.0
    hi = target + 1.0
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if mid * mid * mid < target:
            lo = mid
        else:
            hi = mid
    return lo, hi


def sweeps_until_sorted(x: Any) -> Any:
    # A `while` around a `for`: one C function holds both.
    passes = 0
    swapped = True
    while swapped:
        swapped = False
        for i in range(x.shape[0] - 1):
            if x[i] > x[i + 1]:
                x[i], x[i + 1] = x[i + 1], x[i]
                swapped = True
        passes += 1
    return x, passes


def gcd_by_remainders(a: Any, b: Any) -> Any:
    # `x, y = y, x % y`: the new `x` reads the carried `y` the remainder also reads.
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        while y != 0:
            x, y = y, x % y
        out[i] = x
    return out


def histogram(x: Any) -> Any:
    # int() of a float: C truncates toward zero after a range check (NaN, inf bail).
    counts = np.zeros(8, dtype=np.int64)
    for i in range(x.shape[0]):
        b = int(x[i] * 8)
        if b == 8:
            b = 7
        counts[b] += 1
    return counts


def knapsack(weights: Any, values: Any) -> Any:
    # A NumPy int scalar bounds the inner range and indexes (`best[c - w]`).
    best = np.zeros(11, dtype=np.int64)
    for i in range(weights.shape[0]):
        w = weights[i]
        for c in range(10, w - 1, -1):
            candidate = best[c - w] + values[i]
            if candidate > best[c]:
                best[c] = candidate
    return best


def first_above(x: Any) -> Any:
    for i in range(x.shape[0]):
        if x[i] > 1.0 or x[i] < -2.0:
            return i
    return -1


_RNG = np.random.default_rng(0)
_SIGNAL = np.round(_RNG.standard_normal(40) * 2.0, 1)


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (collatz, (np.array([27], dtype=np.int64),)),
        (collatz, (np.array([1], dtype=np.int64),)),
        (leading_small, (_SIGNAL,)),
        (leading_small, (np.zeros(5),)),
        (bisection, (np.array([5.0]),)),
        (sweeps_until_sorted, (_SIGNAL[:12].copy(),)),
        (mandelbrot, (np.linspace(-2.0, 0.6, 50), np.linspace(-1.2, 1.2, 50))),
        (crc32, (_RNG.integers(0, 256, 64).astype(np.uint32),)),
        (crc32, (np.zeros(0, dtype=np.uint32),)),
        (gcd_by_remainders, (_RNG.integers(-40, 40, 30), _RNG.integers(-40, 40, 30))),
        (histogram, (_RNG.random(40),)),
        (knapsack, (_RNG.integers(1, 6, 9), _RNG.integers(1, 10, 9))),
        (first_above, (_SIGNAL,)),
        (first_above, (np.zeros(6),)),
    ],
)
def test_loop_is_one_c_function(
    fn: Callable[..., Any], args: tuple[Any, ...], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled = _compile(fn, *args)
    _check(compiled, fn, *args)
    _assert_c_loop(compiled, caplog)


def test_top_level_while_is_a_c_while() -> None:
    compiled = _compile(collatz, np.array([27], dtype=np.int64))
    assert "while (" in compiled.source
    for start in (27, 1, 97, 6171):
        _check(compiled, collatz, np.array([start], dtype=np.int64))


def test_while_that_never_runs_gives_back_the_initial_objects() -> None:
    # The entry test fails: eager's Python int and float come back, not C's int64s.
    def f(a: Any, n: int) -> Any:
        k = 0
        s = 0.5
        while k < n:
            s = s * a[0]
            k += 1
        return k, s

    run, built = _dispatched(f)
    for n in (3, 5, -4, 0, 1):
        _same(run(np.array([2.0]), n), f(np.array([2.0]), n))
    _assert_every_loop_is_c(built)


def test_python_int_overflow_runs_the_loop_with_python_ints() -> None:
    # k = 3 * k + 1 passes 2**63 after 40 steps: the checked int64 arithmetic bails and the
    # loop runs with Python ints, giving eager's big int.
    def grow(x: Any, steps: Any) -> Any:
        k = 0
        m = 0
        while x[0] > 0.0 and m < steps[0]:
            k = 3 * k + 1
            m += 1
        return k, m

    compiled = _compile(grow, np.ones(1), np.array([5]))
    assert "static PyObject *loop_v" in compiled.source
    for steps in (5, 39, 41, 60, 0):
        _check(compiled, grow, np.ones(1), np.array([steps]))
    k, _ = compiled.fn(np.ones(1), np.array([60]))
    assert type(k) is int and k == (3**60 - 1) // 2


def test_while_writes_stay_as_eager_leaves_them() -> None:
    def f(x: Any) -> Any:
        i = 0
        while i < x.shape[0] and x[i] > -100.0:  # a run-time test: the loop is kept
            x[i] = x[i] * 2.0 + 1.0
            i += 3
        return x, i

    run, built = _dispatched(f)
    for n in (10, 7, 0, 1, 4):
        mine, eager = np.arange(float(n)), np.arange(float(n))
        _same(run(mine), f(eager))
        np.testing.assert_array_equal(mine, eager)
    _assert_every_loop_is_c(built)


def test_int_of_a_value_beyond_int64_runs_the_loop_with_numpy() -> None:
    # NaN raises ValueError and 1e30 makes a Python big int, as eager: the C loop bails.
    def total(x: Any) -> Any:
        t = 0
        for i in range(x.shape[0]):
            t += int(x[i])
        return t

    compiled = _compile(total, np.array([1.5, 2.5, 0.5]))
    _check(compiled, total, np.array([1.5, -2.5, 7.9]))
    _check(compiled, total, np.array([1.5, 1e30, -3.0]))
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        compiled.fn(np.array([1.0, np.nan, 2.0]))
