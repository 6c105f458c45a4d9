"""A Python entry scalar that a branch of a C loop may leave as it came (issue 23).

`t = 0.0; for i in range(n): if x[i] > 0.5: t = x[i]` hands back the very Python float
where no branch assigned `t` during the call, an `np.float64` where one did. The C loop
carries `t` as a C double and a flag per such local (`EntryKept`), set where the value is
still the entry object: cleared in the branch that assigns it, passed along by `cond`
results and inner loops (capture's `may_hold_entry`); the loop gives back the entry
object where it is set. Each program runs compiled and eagerly on inputs whose branches
run never, sometimes and always: the same values and the same Python type of every
returned and carried value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, reset
from numpile_inductor import compile_graph


def float_picked(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 0.5:
            t = x[i]
    return t


def int_picked(x: Any, n: int) -> Any:
    c = 7
    for i in range(n):
        if x[i] > 0.5:
            c = np.int64(i)
    return c


def bool_picked(x: Any, n: int) -> Any:
    b = False
    for i in range(n):
        if x[i] > 0.5:
            b = x[i] > 0.7
    return b


def complex_picked(x: Any, n: int) -> Any:
    w = 1j
    for i in range(n):
        if x[i] > 0.5:
            w = x[i] * 1j
    return w


def running_max(x: Any, y: Any) -> Any:
    best = -np.inf
    at = -1
    for i in range(x.shape[0]):
        if x[i] > best:
            best = x[i]
            at = i
        y[i] = best * 2.0  # stored: a Python float and an np.float64 store the same
    return best, at, y


def two_locals_nested_ifs(x: Any, n: int) -> Any:
    lo = 1.0
    hi = 0
    for i in range(n):
        if x[i] < 0.5:
            if x[i] < lo:
                lo = x[i]
        elif x[i] > 0.6:
            hi = np.int64(i)
    return lo, hi


def nested_for(x: Any) -> Any:
    best = -1.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > best:
                best = x[i, j]
    return best


def while_in_for(x: Any, n: int) -> Any:
    best = -1.0
    for i in range(n):
        k = 0
        while k < 3:
            if x[(i + k) % n] > best:
                best = x[(i + k) % n]
            k += 1
    return best


def top_level_while(x: Any, n: int) -> Any:
    t = 0.0
    c = 7
    k = 0
    while x[k] < 0.99 and k < n - 1:
        if x[k] > 0.5:
            t = x[k]
            c = np.int64(k)
        k += 1
    return t, c, k


def breaking(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 0.95:
            break
        if x[i] > 0.5:
            t = x[i]
    return t


def returning_early(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 0.95:
            return t, i
        if x[i] > 0.5:
            t = x[i]
    return t, -1


def computed_from_the_entry(x: Any, n: int) -> Any:
    t = 0.0
    u = 1.0
    for i in range(n):
        if x[i] > 0.5:
            t = x[i]
        u = t * 2.0  # a Python float while `t` is one: NumPy runs the loop
    return u


# NOTE: branches that run never, sometimes (the last one too), always; an early break.
_DATA = [
    np.zeros(6),
    np.full(6, -np.inf),
    np.array([0.1, 0.9, 0.2, 0.6, 0.3, 0.0]),
    np.array([0.9, 0.8, 0.7, 0.6, 0.94, 0.93]),
    np.array([0.2, 0.97, 0.8, 0.0, 0.0, 0.0]),
    np.array([0.6, 0.97, 0.0, 0.0, 0.0, 0.0]),
]


def _with_n(x: Any) -> tuple[Any, ...]:
    return (x, x.shape[0])


def _rows(x: Any) -> tuple[Any, ...]:
    return (x.reshape(2, 3),)


def _with_out(x: Any) -> tuple[Any, ...]:
    return (x, np.zeros(x.shape[0]))


_C_PROGRAMS: list[tuple[Callable[..., Any], Callable[[Any], tuple[Any, ...]]]] = [
    (float_picked, _with_n),
    (int_picked, _with_n),
    (bool_picked, _with_n),
    (running_max, _with_out),
    (two_locals_nested_ifs, _with_n),
    (nested_for, _rows),
    (while_in_for, _with_n),
    (top_level_while, _with_n),
    (breaking, _with_n),
]


def _dispatched(fn: Callable[..., Any]) -> Callable[..., Any]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor.
    reset()

    def backend(graph: Any, example_inputs: Any) -> Any:
        return compile_graph(graph).fn

    return compile_function(fn, backend=backend, dynamic=True)


def _same(got: Any, want: Any) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for mine, eager in zip(got, want, strict=True):
        assert type(mine) is type(eager), (mine, eager)
        assert np.asarray(mine).tobytes() == np.asarray(eager).tobytes(), (mine, eager)


def _runs_like_eager(fn: Callable[..., Any], arguments: Callable[[Any], tuple[Any, ...]]) -> None:
    compiled = _dispatched(fn)
    for x in _DATA:
        mine, eager = arguments(x.copy()), arguments(x.copy())
        _same(compiled(*mine), fn(*eager))
        _same(mine, eager)


@pytest.mark.parametrize(("fn", "arguments"), _C_PROGRAMS, ids=lambda p: getattr(p, "__name__", ""))
def test_an_entry_no_branch_assigned_comes_back_as_the_python_object_from_c(
    fn: Callable[..., Any], arguments: Callable[[Any], tuple[Any, ...]], numpy_runs: list[Any]
) -> None:
    _runs_like_eager(fn, arguments)
    if fn is not top_level_while:  # (its `and` is a cond outside the loop: op by op)
        assert numpy_runs == []  # no loop ran with NumPy


@pytest.mark.parametrize("fn", [complex_picked, returning_early, computed_from_the_entry])
def test_what_c_cannot_follow_runs_as_eager(fn: Callable[..., Any]) -> None:
    # C has no complex entry; `return` in the loop ends the graph; a value computed from
    # the entry alone is a Python or a NumPy scalar as eager's operator was Python's or
    # NumPy's (the graph does not say): the loop runs with NumPy.
    _runs_like_eager(fn, _with_n)


def computed_on_after_the_loop(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 0.5:
            t = x[i]
    return t * np.float32(2.0)  # float32 on the Python float, float64 on the np.float64


def test_code_after_the_loop_computes_on_the_type_the_branches_left(
    numpy_runs: list[Any],
) -> None:
    # The graph ends after the loop (capture's `kept_by_branches`): the code after it is
    # traced on the value's actual type (a main silently gave float64 for eager's float32).
    _runs_like_eager(computed_on_after_the_loop, _with_n)
    assert numpy_runs == []
