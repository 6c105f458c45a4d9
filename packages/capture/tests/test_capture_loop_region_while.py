"""A `while` loop whose small breaking body runs whole in Python, from its entry test.

As for `for` loops (test_capture_loop_region), a body that breaks the graph and saves too
little work compiled to pay for its pieces makes the graph break at the loop's entry test:
the test and the body run as CPython runs them, every exit (the test failing, `break`, an
`else:` clause) continues compiled, a `return` inside returns. Each program runs eagerly and
compiled with a backend that counts its graph runs: values, dtypes, in-place writes and
printed text match eager, and the graph runs do not grow with the trip count.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, explain, reset, run_graph
from numpile_capture.capture_events import recording_captures
from numpile_capture.config import config
from numpile_capture.graph import Graph
from numpile_capture.testing import assert_same_as_eager as _same

pytestmark = pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def _counts_up(x: Any, n: int) -> Any:
    i = 0
    s = 0.0
    while i < n:
        print("step", i)
        s += float(x[i] * x[i])
        i += 1
    return np.float64(s) + x[0], i


def _breaks_out(x: Any, n: int) -> Any:
    i = 0
    s = 0.0
    while i < n:
        s += float(x[i])
        if s > 40.0:
            print("over at", i)
            break
        i += 1
    return x * s, i


def _continues(x: Any, n: int) -> Any:
    i = 0
    s = 0.0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        print("keep", i)
        s += float(x[i - 1])
    return x[:2] + s, i


def _returns_inside(x: Any, n: int) -> Any:
    i = 0
    while i < n:
        if float(x[i]) > 9.5:
            return x * 0.0 + i
        i += 1
    return x + i


def _else_clause(x: Any, n: int) -> Any:
    i = n
    total = 0.0
    while i > 0:
        i -= 1
        total += float(x[i])
        if total < -1.0:
            break
    else:
        print("all", n)
        total = -total
    return x * total, i


def _writes_in_place(x: Any, n: int) -> Any:
    i = 0
    while i < n:
        x[i] = float(x[i]) * 2.0 + 1.0
        i += 1
    return x.sum() + i


def _converges(x: Any, n: int) -> Any:
    # `while err > tol:` on a value read from an array each iteration.
    a = float(n) + 2.0
    r = x[:1] + 1.0
    err = 1.0
    k = 0
    while err > 1e-12:
        r = 0.5 * (r + a / r)
        err = float(np.abs(r * r - a)[0])
        print("err", k)
        k += 1
    return r, k


def _halves_on_data(x: Any, n: int) -> Any:
    # A test on array values (run-time): the loop is not kept since its body breaks.
    y = x * n
    k = 0
    while np.abs(y).max() > 1.0:
        y = y / 2.0
        print("halved", k)
        k += 1
    return y, k


PROGRAMS = [
    _counts_up,
    _halves_on_data,
    _breaks_out,
    _continues,
    _returns_inside,
    _else_clause,
    _writes_in_place,
    _converges,
]


def _counting(runs: list[Graph]) -> Callable[[Graph, Any], Callable[..., Any]]:
    def backend(graph: Graph, example_inputs: Any) -> Callable[..., Any]:
        def run(*inputs: Any) -> Any:
            runs.append(graph)
            return run_graph(graph, list(inputs))

        return run

    return backend


def _run(compiled: Callable[..., Any], fn: Callable[..., Any], x: Any, n: int) -> None:
    got_x, want_x = x.copy(), x.copy()
    got_out, want_out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(got_out):
        got = compiled(got_x, n)
    with contextlib.redirect_stdout(want_out):
        want = fn(want_x, n)
    _same(got, want)
    _same(got_x, want_x)
    assert got_out.getvalue() == want_out.getvalue()


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda fn: fn.__name__.strip("_"))
def test_a_small_breaking_while_body_runs_no_compiled_piece_per_iteration(
    fn: Callable[..., Any],
) -> None:
    runs: list[Graph] = []
    compiled = compile_function(fn, backend=_counting(runs))
    x = np.arange(40.0) / 4.0
    for n in (0, 1, 3):
        _run(compiled, fn, x, n)
    runs.clear()
    _run(compiled, fn, x, 4)
    short = len(runs)
    runs.clear()
    with recording_captures() as events:
        _run(compiled, fn, x, 36)
        _run(compiled, fn, x, 39)
    assert len(runs) <= 2 * short  # the graphs before and after the loop, not one per iteration
    assert not events  # a new trip count compiles nothing again


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda fn: fn.__name__.strip("_"))
def test_with_the_rule_off_a_breaking_while_loop_still_matches_eager(
    fn: Callable[..., Any],
) -> None:
    compiled = compile_function(fn)
    x = np.arange(40.0) / 4.0
    with config.patch(small_loops_in_python=False):
        for n in (0, 2, 9):
            _run(compiled, fn, x, n)


def test_explain_names_the_while_loop_and_its_break() -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        out = explain(_counts_up)(np.arange(8.0), 5)
    (reason,) = out.break_reasons
    assert "while loop not kept as a loop" in reason.reason
    assert "calling print" in reason.reason
    assert "the whole loop runs in Python" in reason.reason
    assert reason.lineno == _counts_up.__code__.co_firstlineno + 3  # the `while`


def _waves(x: Any, n: int) -> Any:
    a = np.concatenate([x] * 100)
    i = 0
    while i < n:
        a = np.sin(a) * 0.5 + np.cos(a)
        print("step", i)
        i += 1
    return a


def test_a_while_body_whose_kernels_save_work_runs_as_pieces() -> None:
    runs: list[Graph] = []
    compiled = compile_function(_waves, backend=_counting(runs))
    x = np.arange(40.0) / 4.0
    _run(compiled, _waves, x, 2)
    runs.clear()
    _run(compiled, _waves, x, 2)
    short = len(runs)
    runs.clear()
    _run(compiled, _waves, x, 6)
    assert len(runs) > short  # a compiled piece per iteration
