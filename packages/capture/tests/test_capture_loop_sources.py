"""`enumerate(...)` and `zip(...)` over arrays' first axes (loop_sources): kept loops.

Each program runs eagerly and compiled (the eager backend) at trip counts 0, 1, 2 and 7
on values, dtypes and in-place effects; the graph must hold one `for_loop` node (nothing
unrolled: no per-row indexing node outside the body).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function, explain
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_capture.testing import op_names as _ops

TRIP_COUNTS = (0, 1, 2, 7)


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def enumerate_rows(a: Any) -> Any:
    out = np.zeros(a.shape[0])
    for i, row in enumerate(a):
        out[i] = row.sum() * i
    return out


def zip_dot(x: Any, y: Any) -> Any:
    s = 0.0
    for a, b in zip(x, y, strict=True):
        s += a * b
    return s


def enumerate_zip_writes(a: Any, b: Any) -> Any:
    for i, (row_a, row_b) in enumerate(zip(a, b, strict=True)):
        row_a += row_b * i
    return a, b


def enumerate_from_three(x: Any) -> Any:
    s = 0.0
    for k, v in enumerate(x, start=3):
        s = s + v * k
    return s


def zip_with_break(x: Any, y: Any) -> Any:
    s = 0.0
    for a, b in zip(x, y, strict=False):
        if a > 0.5:
            break
        s += a - b
    return s


def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


PROGRAMS: list[tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]] = [
    (enumerate_rows, lambda n: (_rng().standard_normal((n, 3)),)),
    (zip_dot, lambda n: (_rng().standard_normal(n), _rng().standard_normal(n) + 1.0)),
    (
        enumerate_zip_writes,
        lambda n: (_rng().standard_normal((n, 2)), _rng().standard_normal((n, 2)) + 1.0),
    ),
    (enumerate_from_three, lambda n: (_rng().standard_normal(n),)),
    (zip_with_break, lambda n: (_rng().uniform(0.0, 0.7, n), _rng().uniform(0.0, 0.7, n))),
]


@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_enumerate_and_zip_match_eager(
    fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]
) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        args, expected_args = make(n), make(n)
        _same(compiled(*args), fn(*expected_args))
        for got_arg, want_arg in zip(args, expected_args, strict=True):
            _same(got_arg, want_arg)


@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_enumerate_and_zip_loops_are_kept(
    fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]]
) -> None:
    assert not explain(fn)(*make(7)).loops_not_kept
    ops = _ops(capture_function(fn, make(7), {}).graph)
    assert ops.count("for_loop") == 1
    assert "getitem" not in ops and "element" not in ops  # no row taken outside the body


def test_enumerate_outside_a_loop_gives_its_items() -> None:
    def f(x: Any) -> Any:
        return list(enumerate(x)), list(zip(x, x * 2.0, strict=True))

    x = np.arange(3.0)
    _same(compile_function(f, backend="eager")(x), f(x))


def test_zip_of_different_known_lengths_stops_at_the_shortest() -> None:
    def f(a: Any, y: Any) -> Any:
        acc = np.zeros(3)
        for row, v in zip(a, y, strict=False):
            acc = acc + row * v
        return acc

    a, y = np.arange(12.0).reshape(4, 3), np.arange(6.0)
    assert "for_loop" in _ops(capture_function(f, (a, y), {}).graph)
    _same(compile_function(f, backend="eager")(a, y), f(a, y))
