"""A `return` inside a kept `for` body whose code differs from the code after the loop
(loop_return): the loop is kept; the code after it runs only when it did not return.

Each program runs eagerly and compiled (the eager backend) at trip counts 0, 1, 2 and 7
on values, dtypes and in-place effects; the graph must be one graph with a `for_loop`.
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


def first_far_pair(x: Any) -> Any:
    # A return two loops deep, of a tuple.
    for i in range(x.shape[0]):
        for j in range(i):
            if x[i] - x[j] > 3.0:
                return i, j
    return -1, -1


def prefix_before_a_far_pair(x: Any) -> Any:
    # A return two loops deep, of an array made before the loops (carried leaf by leaf).
    out = np.zeros(3)
    for i in range(x.shape[0]):
        for j in range(i):
            if x[j] - x[i] > 3.0:
                return out + x[j]
        out += x[i]
    return out


def while_sum_until(x: Any) -> Any:
    # A return inside a `while` body; the code after the loop runs only without it.
    i = 0
    s = np.float64(0.0)
    while i < x.shape[0]:
        s += x[i]
        if s < -1.0:
            return s * 10.0
        i += 1
    x *= 2.0
    return s


def while_inside_a_for(x: Any) -> Any:
    # A return from a `while` nested in a `for`: CPython pops the `for`'s iterator first.
    for i in range(x.shape[0]):
        k = i
        while k > 0:
            k -= 1
            if x[k] + x[i] > 3.5:
                return i * 10 + k
    return -1


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

#: Programs that return from two loops deep or from a `while` body, and their loop nodes.
DEEP: dict[Callable[..., Any], str] = {
    first_far_pair: "for_loop",
    prefix_before_a_far_pair: "for_loop",
    while_sum_until: "while_loop",
    while_inside_a_for: "for_loop",
}


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


@pytest.mark.parametrize("fn", list(DEEP), ids=[fn.__name__ for fn in DEEP])
def test_deep_and_while_returns_match_eager(fn: Callable[..., Any]) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        args, expected_args = _data(n), _data(n)
        _same(compiled(*args), fn(*expected_args))
        np.testing.assert_array_equal(args[0], expected_args[0])


@pytest.mark.parametrize("fn", list(DEEP), ids=[fn.__name__ for fn in DEEP])
def test_deep_and_while_returns_keep_every_loop(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_data(7))
    assert not out.loops_not_kept, out.loops_not_kept
    assert out.graph_count == 1 and out.graph_break_count == 0
    graph = capture_function(fn, _data(7), {}).graph
    assert DEEP[fn] in _ops(graph) and "cond" in _ops(graph)
    text = str(graph)
    loops = text.count("= for_loop(") + text.count("= while_loop(")
    assert loops == (1 if fn is while_sum_until else 2)  # the nested loop is a node too
    smaller = capture_function(fn, _data(4), {}).graph
    assert len(str(smaller).splitlines()) == len(text.splitlines())  # nothing unrolled
