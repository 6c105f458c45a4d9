"""`break` and `continue` in loops that run as C, and in the host loop of array bodies.

Each test compiles a captured function with the inductor and compares it with eager
Python on values, dtypes and in-place effects; the C tests also check the loop is the
module's C loop function (a `for` in C with its `break`), not a host loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_inductor import compile_graph


def _compare(fn: Callable[..., Any], *args: Any) -> Any:
    compiled = compile_graph(capture_function(fn, tuple(a.copy() for a in args), {}).graph)
    ours = [a.copy() for a in args]
    theirs = [a.copy() for a in args]
    _same(compiled.fn(*ours), fn(*theirs))
    for mine, eager in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, eager)
    return compiled


def _mandelbrot(cr: Any, ci: Any) -> Any:
    counts = np.zeros(cr.shape[0], dtype=np.int64)
    for p in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        n = 0
        for _ in range(50):
            if zr * zr + zi * zi > 4.0:
                break
            zr, zi = zr * zr - zi * zi + cr[p], 2.0 * zr * zi + ci[p]
            n += 1
        counts[p] = n
    return counts


def _first_negative(x: Any) -> Any:
    found = -1
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            found = i
            break
    return found


def _skip_and_stop(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        if x[i] > 8.0:
            break
        s += x[i] * x[i]
    return s


def _nested_break(a: Any) -> Any:
    total = 0.0
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            if a[r, c] < 0.0:
                break
            a[r, c] = a[r, c] * 2.0
            total += a[r, c]
    return total


_RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("fn", "make"),
    [
        (_mandelbrot, lambda: (np.linspace(-2.0, 1.0, 40), np.linspace(-1.2, 1.2, 40))),
        (_first_negative, lambda: (np.array([1.0, 2.0, -3.0, 4.0, -1.0]),)),
        (_first_negative, lambda: (np.array([1.0, 2.0]),)),
        (_first_negative, lambda: (np.zeros(0),)),
        (_skip_and_stop, lambda: (_RNG.standard_normal(30) * 5.0,)),
        (_nested_break, lambda: (_RNG.standard_normal((6, 5)) + 0.8,)),
    ],
)
def test_breaking_loops_are_c(fn: Callable[..., Any], make: Callable[[], Any]) -> None:
    compiled = _compare(fn, *make())
    source = compiled.source
    assert "static PyObject *loop_v" in source
    assert "{ break; }" in source


def _rows_until_negative(a: Any) -> Any:
    # An array-sized body: the host loop, which stops at the body's stop flag.
    acc = np.zeros(a.shape[1])
    for r in range(a.shape[0]):
        if a[r, 0] < 0.0:
            break
        acc = acc + a[r] * 2.0
    return acc


def test_breaking_array_body_stops_the_host_loop() -> None:
    a = np.arange(12.0).reshape(6, 2)
    a[3, 0] = -1.0
    graph = capture_function(_rows_until_negative, (a,), {}).graph
    assert "breaks=True" in str(graph)  # kept as one loop, not unrolled
    _compare(_rows_until_negative, a)
    _compare(_rows_until_negative, np.arange(12.0).reshape(6, 2))
