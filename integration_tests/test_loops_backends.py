"""Loops that stay loops, end to end on every CPU backend: eager, aot_eager and inductor.

Each program runs eagerly and compiled at several trip counts (0 and 1 included) and is
compared on values, dtypes, and the inputs' in-place effects; a new trip count reuses
the compiled code (one compile for every trip count with dynamic=True).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile

BACKENDS = ("eager", "aot_eager", "inductor")
TRIP_COUNTS = (0, 1, 3, 8)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def _same(got: Any, want: Any) -> None:
    if want is None:
        assert got is None
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for got_item, want_item in zip(got, want, strict=True):
            _same(got_item, want_item)
        return
    got_arr, want_arr = np.asarray(got), np.asarray(want)
    assert isinstance(got, type(want)) or isinstance(want, type(got)), (type(got), type(want))
    assert got_arr.dtype == want_arr.dtype
    assert got_arr.shape == want_arr.shape
    np.testing.assert_allclose(got_arr, want_arr, rtol=1e-12)


def dot_loop(x: Any, y: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


def prefix_in_place(a: Any, b: Any) -> Any:
    for i in range(1, a.shape[0]):
        a[i] += a[i - 1] * b[i]
    return a.sum()


def forward_substitution(lower: Any, b: Any) -> Any:
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - lower[i] @ x) / lower[i, i]
    return x


def stencil_steps(a: Any, b: Any) -> Any:
    tmp = a.copy()
    for _ in range(b.shape[0]):
        tmp[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a[1:-1] = tmp[1:-1] * b[0]
    return a


def counter_and_float32(a: Any, b: Any) -> Any:
    total = 0
    acc = 0.0
    for i in range(a.shape[0]):
        total += i * 3 - 1
        acc = acc + a[i] * b[i]
    return total, acc


def nested_lower_update(a: Any, b: Any) -> Any:
    for i in range(a.shape[0]):
        for j in range(i + 1):
            a[i, j] = a[i, j] * 0.5 + b[j]
    return a


def crc16(data: Any, b: Any) -> Any:
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 1:  # noqa: SIM108 - the if statement is what is tested
                crc = (crc >> 1) ^ 0xA001
            else:
                crc = crc >> 1
    return crc


def mandelbrot(c: Any, b: Any) -> Any:
    out = np.zeros(c.shape[0], dtype=np.int64)
    for k in range(c.shape[0]):
        z = 0j
        n = 30
        for it in range(30):
            z = z * z + c[k]
            if abs(z) > 2.0 and n == 30:
                n = it
        out[k] = n
    return out


def gauss_seidel(a: Any, b: Any) -> Any:
    x = np.zeros_like(b)
    err = 1.0
    sweeps = 0
    while err > 1e-10:
        err = 0.0
        for i in range(b.shape[0]):
            new = (b[i] - a[i] @ x + a[i, i] * x[i]) / a[i, i]
            d = abs(new - x[i])
            if d > err:
                err = d
            x[i] = new
        sweeps += 1
    return x, sweeps


PROGRAMS: list[tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]] = [
    (dot_loop, lambda n: (np.arange(n, dtype=np.float64), np.arange(n, dtype=np.float64) + 1)),
    (prefix_in_place, lambda n: (np.linspace(0, 1, n), np.linspace(1, 2, n))),
    (
        forward_substitution,
        lambda n: (np.tril(np.ones((n, n))) + n * np.eye(n), np.arange(n + 1.0)[1:]),
    ),
    (stencil_steps, lambda n: (np.arange(12.0) ** 2, np.full(n, 0.9))),
    (counter_and_float32, lambda n: (np.arange(n, dtype=np.float32), np.ones(n, np.float32))),
    (nested_lower_update, lambda n: (np.ones((n, n)), np.arange(n, dtype=np.float64))),
    (crc16, lambda n: (np.arange(n * 5, dtype=np.int64) * 37 % 256, None)),
    (mandelbrot, lambda n: (np.linspace(-2, 1, n * 3) + 0.3j, None)),
    (gauss_seidel, lambda n: (np.eye(n + 1) * 4 + np.ones((n + 1, n + 1)), np.arange(n + 1.0))),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_loop_program(
    backend: str, fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]
) -> None:
    compiled = numpile.compile(fn, backend=backend, dynamic=True)
    for n in TRIP_COUNTS:
        args, expected_args = make(n), make(n)
        want = fn(*expected_args)
        _same(compiled(*args), want)
        for got_arg, want_arg in zip(args, expected_args, strict=True):
            _same(got_arg, want_arg)


@pytest.mark.parametrize("backend", BACKENDS)
def test_new_trip_count_reuses_the_compiled_loop(backend: str) -> None:
    compiled = numpile.compile(dot_loop, backend=backend, dynamic=True)
    for n in (5, 40, 300):
        x = np.arange(n, dtype=np.float64)
        _same(compiled(x, x), dot_loop(x, x))
    stats = numpile.explain(dot_loop)(np.ones(5), np.ones(5))
    assert stats.graph_count == 1
    assert "for_loop" in stats.ops_per_graph[0]
