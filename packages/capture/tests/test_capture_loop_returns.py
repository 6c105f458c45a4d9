"""A `return` inside a kept `for` body whose code differs from the code after the loop
(loop_return): the loop is kept; the code after it runs only when it did not return.

Each program runs eagerly and compiled (the eager backend) at trip counts 0, 1, 2 and 7
on values, dtypes and in-place effects; the graph must be one graph with a `for_loop`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function, explain, reset
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_capture.testing import op_names as _ops

TRIP_COUNTS = (0, 1, 2, 7)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def first_above(x: Any) -> Any:
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            return i
    return -1


def element_or_default(x: Any) -> Any:
    for v in x:
        if v < -1.0:
            return v
    return np.float64(0.5)


def writes_after_the_loop(x: Any) -> Any:
    for i in range(x.shape[0]):
        x[i] = x[i] + 1.0
        if x[i] > 2.5:
            return i
    x *= 2.0
    return -1


def return_constant_inside(x: Any) -> Any:
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] < -2.0:
            return np.float64(-1.0)
        s += x[i]
    return s


def return_or_break(x: Any) -> Any:
    for i in range(x.shape[0]):
        if x[i] > 1.5:
            return i
        if x[i] < -2.5:
            break
    return 100


def return_or_break_then_choose(x: Any) -> Any:
    # 3.12+ copy the return of the conditional expression into both ways of its `if`.
    total = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] > 1.5:
            return i
        if x[i] < -2.5:
            break
        total += x[i]
    return -2 if total > 0.0 else -3


def if_returns_after_the_loop(x: Any) -> Any:
    # An `if` on a run-time value whose one way returns, in the code after the loop.
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] > 1.5:
            return i
        s += x[i]
    if s < 0.0:
        x *= 2.0
        return -1
    x += 1.0
    return 99


def _data(n: int) -> tuple[Any, ...]:
    return (np.array([0.5, -1.5, 0.25, 2.0, -3.0, 1.75, 0.0])[:n],)


PROGRAMS: list[Callable[..., Any]] = [
    first_above,
    element_or_default,
    writes_after_the_loop,
    return_constant_inside,
    return_or_break,
    return_or_break_then_choose,
    if_returns_after_the_loop,
]


@pytest.mark.parametrize("fn", PROGRAMS, ids=[fn.__name__ for fn in PROGRAMS])
def test_early_return_matches_eager(fn: Callable[..., Any]) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        args, expected_args = _data(n), _data(n)
        _same(compiled(*args), fn(*expected_args))
        np.testing.assert_array_equal(args[0], expected_args[0])  # the writes, as eager's


@pytest.mark.parametrize("fn", PROGRAMS, ids=[fn.__name__ for fn in PROGRAMS])
def test_early_return_keeps_the_loop(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_data(7))
    assert not out.loops_not_kept, out.loops_not_kept
    assert out.graph_count == 1 and out.graph_break_count == 0
    graph = capture_function(fn, _data(7), {}).graph
    assert "for_loop" in _ops(graph) and "cond" in _ops(graph)
    assert "breaks=True" in str(graph)


def test_code_after_the_loop_runs_in_the_else_branch() -> None:
    # The in-place write after the loop is inside the cond's else branch, not run always.
    graph = capture_function(writes_after_the_loop, _data(7), {}).graph
    top = _ops(graph)
    assert "multiply" not in top and "multiply_" not in top
    assert top.index("for_loop") < top.index("cond")


def test_returned_tuple_with_none_after_the_loop_is_not_kept() -> None:
    # A tuple is carried leaf by leaf; None after the loop is no graph value.
    def f(x: Any) -> Any:
        for i in range(x.shape[0]):
            if x[i] > 1.0:
                return i, x[i]
        return -1, None

    out = explain(f)(*_data(7))
    assert out.loops_not_kept and "None" in out.loops_not_kept[0].reason
    compiled = compile_function(f, backend="eager")
    got, want = compiled(*_data(7)), f(*_data(7))
    assert got[0] == want[0] and got[1] == want[1]


def test_return_inside_a_nested_loop_is_not_kept_as_a_return() -> None:
    # Only a loop at the top of its frame returns early; the nest gives eager's result.
    def f(a: Any) -> Any:
        for r in range(a.shape[0]):
            for c in range(a.shape[1]):
                if a[r, c] < 0.0:
                    return r * 10 + c
        return -1

    a = np.arange(12.0).reshape(3, 4) - 9.0
    compiled = compile_function(f, backend="eager")
    assert compiled(a.copy()) == f(a.copy())
