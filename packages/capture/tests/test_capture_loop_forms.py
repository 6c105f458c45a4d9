"""Loop forms issue 23 listed last (round 2, twelfth session): loops inside `try` blocks,
`while` tests that are chained comparisons of run-time values, a `while True:` ending an
enclosing loop's body whose break 3.12+ thread through that loop's jump back, and loops
over tuples and lists (unrolled by design, said in `explain`).

A kept loop runs outside the user's exception table, as a graph does: it is kept inside a
`try` block (or a `with` block, or with a `try` in its body) when nothing its body traces
may raise on some data. An index the loop bounds prove within its axis cannot raise, nor
can Python's `+`, `-`, `*`; a read the bounds do not prove (`x[i + 1]`), a division of
Python scalars, an op that raises on some data makes the loop not kept, and `explain` says
which op. Each program runs eagerly and compiled (the eager backend runs the captured
graph) at trip counts 0, 1, 2 and 7.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function, explain
from numpile_capture.capture_events import recording_captures
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_capture.testing import op_names as _ops

TRIP_COUNTS = (0, 1, 2, 7)


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _data(n: int) -> tuple[Any, ...]:
    return (np.array([0.2, -1.2, 0.7, 2.0, -0.4, 1.1, -3.0])[:n],)


# -- loops inside try blocks ---------------------------------------------------------------


def for_in_try(x: Any) -> Any:
    s = 0.0
    i = -1
    try:
        for i in range(x.shape[0]):
            s += x[i] * x[i]
    except IndexError:
        s = -1.0
    return s, i


def while_in_try_finally(x: Any) -> Any:
    y = x.copy()
    k = 0
    try:
        while np.abs(y).sum() > 0.5:
            y = y * 0.5
            k += 1
    finally:
        y = y + 1.0
    return y, k


def try_in_the_body(x: Any) -> Any:
    acc = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        try:
            acc[i] = acc[i - 1] + x[i]
        except ValueError:
            acc[i] = 0.0
    return acc


def while_true_in_try(x: Any) -> Any:
    v = np.float64(3.0)
    k = 0
    try:
        while True:
            v = v * 0.5 + x.sum() * 0.0
            k += 1
            if v < 0.1:
                break
    except FloatingPointError:
        k = -1
    return v, k


KEPT_IN_TRY: list[Callable[..., Any]] = [
    for_in_try,
    while_in_try_finally,
    try_in_the_body,
    while_true_in_try,
]


@pytest.mark.parametrize("fn", KEPT_IN_TRY, ids=[fn.__name__ for fn in KEPT_IN_TRY])
def test_loop_in_try_is_kept_and_matches_eager(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_data(7))
    assert not out.loops_not_kept, out.loops_not_kept
    assert out.graph_count == 1 and out.graph_break_count == 0
    ops = _ops(capture_function(fn, _data(7), {}).graph)
    assert "for_loop" in ops or "while_loop" in ops
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        _same(compiled(*_data(n)), fn(*_data(n)))


def read_past_the_end_in_try(x: Any, k: int) -> Any:
    # `x[i + k]` is not proven within x: it may raise, and the handler must see it.
    s = 0.0
    try:
        for i in range(x.shape[0]):
            s += x[i + k]
    except IndexError:
        s = -s
    return s


def division_in_try(x: Any, d: int) -> Any:
    s = 0.0
    try:
        for i in range(x.shape[0]):
            s += x[i] + i // d
    except ZeroDivisionError:
        s = -1.0
    return s


@pytest.mark.parametrize(
    ("fn", "args", "op"),
    [
        (read_past_the_end_in_try, (1,), "element_at may raise IndexError"),
        (division_in_try, (0,), "py_binary may raise ZeroDivisionError"),
    ],
    ids=["index", "division"],
)
def test_loop_in_try_that_may_raise_is_not_kept(fn: Callable[..., Any], args: Any, op: str) -> None:
    out = explain(fn)(*_data(7), *args)
    assert any(op in loop.reason for loop in out.loops_not_kept), out.loops_not_kept
    compiled = compile_function(fn, backend="eager")
    for n in (0, 2, 7):
        _same(compiled(*_data(n), *args), fn(*_data(n), *args))


# -- chained comparisons in while tests, `while True:` breaking through an enclosing loop ----


def while_chained(x: Any) -> Any:
    i = 0
    while i < x.shape[0] and -1.5 < x[i] < 1.5:
        i += 1
    return i


def while_chained_alone(x: Any) -> Any:
    # The test alone is a chained comparison (3.12+ copy `return` into its early way out).
    y = np.concatenate([x, [9.0]])
    i = 0
    while -1.5 < y[i] < 1.5:
        i += 1
    return i


def while_chained_in_for(x: Any) -> Any:
    c = 0
    for j in range(x.shape[0]):
        i = j
        while -2.0 < x[i] <= 1.0:
            i += 1
            if i >= x.shape[0]:
                break
        c += i - j
    return c


def while_true_or_break_ends_a_for(x: Any) -> Any:
    c = 0
    for j in range(x.shape[0]):
        v = abs(x[j]) + 0.25
        while True:
            v = v * 1.5
            c += 1
            if v > 2.0 or c > 50:
                break
    return c


CHAINED_AND_FOREVER: list[Callable[..., Any]] = [
    while_chained,
    while_chained_alone,
    while_chained_in_for,
    while_true_or_break_ends_a_for,
]


@pytest.mark.parametrize("fn", CHAINED_AND_FOREVER, ids=[fn.__name__ for fn in CHAINED_AND_FOREVER])
def test_chained_and_forever_loops_are_kept(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_data(7))
    assert not out.loops_not_kept, out.loops_not_kept
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert "while_loop" in str(capture_function(fn, _data(7), {}).graph)
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        _same(compiled(*_data(n)), fn(*_data(n)))


# -- loops over tuples and lists: unrolled by design ---------------------------------------


def over_a_list_of_arrays(x: Any) -> Any:
    total = 0.0
    views = [x, x[::2], x * 2.0]
    for w in views:
        total = total + w.sum()
    return total, w


def over_constants(x: Any) -> Any:
    # CPython makes the list display a tuple constant.
    s = np.zeros_like(x)
    for k in [1, 2.5, 4]:
        s = s * x + k
    return s, k


@pytest.mark.parametrize(
    ("fn", "items"),
    [(over_a_list_of_arrays, "a list of 3 items"), (over_constants, "a tuple of 3 items")],
    ids=["list", "constants"],
)
def test_loop_over_items_is_unrolled_and_said(fn: Callable[..., Any], items: str) -> None:
    out = explain(fn)(*_data(7))
    (line,) = out.loops_not_kept
    assert line.reason.startswith(f"loop over {items} unrolled: "), line.reason
    assert out.graph_count == 1 and out.graph_break_count == 0
    ops = _ops(capture_function(fn, _data(7), {}).graph)
    assert "for_loop" not in ops
    compiled = compile_function(fn, backend="eager")
    for n in TRIP_COUNTS:
        _same(compiled(*_data(n)), fn(*_data(n)))


# -- loops over tuples and lists breaking on a run-time value: conds, one graph -------------


def halve_until_small(x: Any, tol: float) -> Any:
    for w in (0.5, 0.25, 0.125):
        x = x * w
        if np.abs(x).max() < tol:
            break
    return x


def scale_until_large(x: Any, tol: float) -> Any:
    # The break comes first in the body; the loop variable and a counter are read after.
    n = 0
    for w in [2.0, 3.0, 5.0, 7.0]:
        if x.sum() > tol:
            break
        x = x * w
        n += 1
    return x + n, w, n


def over_rows_of_other_shapes(x: Any, tol: float) -> Any:
    # Items of other shapes: the carried total keeps its shape, the break reads the item.
    total = np.zeros(2)
    count = 0
    for part in (x[:2], x[1:3] * 2.0, x[2:4] - 1.0):
        total = total + part
        count = count + 1
        if part.max() > tol:
            break
    return total, count


def breaking_with_else_branch(x: Any, tol: float) -> Any:
    s = x.copy()
    for k in (1, 2, 3):
        if s.sum() < tol:
            s = s - k
            break
        else:
            s = s * k
    return s


TUPLE_BREAKS: list[Callable[..., Any]] = [
    halve_until_small,
    scale_until_large,
    over_rows_of_other_shapes,
    breaking_with_else_branch,
]

# NOTE: thresholds that take the break at each copy and never, for the data below.
TOLERANCES = (-100.0, 0.05, 0.3, 0.6, 1.0, 3.0, 10.0, 100.0, 1e9)


def _rows(n: int) -> Any:
    return np.array([0.6, 0.2, 0.9, -0.4, 0.1][:n])


@pytest.mark.parametrize("fn", TUPLE_BREAKS, ids=[fn.__name__ for fn in TUPLE_BREAKS])
def test_run_time_break_in_unrolled_loop_is_one_graph(fn: Callable[..., Any]) -> None:
    out = explain(fn)(_rows(5), 0.3)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    (line,) = out.loops_not_kept
    assert "its break on a run-time value is a cond" in line.reason, line.reason
    assert "cond" in _ops(capture_function(fn, (_rows(5), 0.3), {}).graph)
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for tol in TOLERANCES:
        _same(compiled(_rows(5), tol), fn(_rows(5), tol))
    for n in (4, 5):
        _same(compiled(_rows(n), 0.6), fn(_rows(n), 0.6))


def writes_then_breaks(out: Any, x: Any, tol: float) -> Any:
    # Each copy writes into the caller's array before its test: the writes of the copies
    # after a taken break must not happen.
    for k in (0, 1, 2):
        out[k] = x[k] * 2.0
        if out[: k + 1].sum() > tol:
            break
    return out.sum()


def test_run_time_break_keeps_eagers_writes() -> None:
    x = np.array([0.5, 1.0, 2.0])
    out = explain(writes_then_breaks)(np.zeros(3), x, 2.0)
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    compiled = compile_function(writes_then_breaks, backend="eager", dynamic=True)
    for tol in (0.5, 2.0, 5.0, 100.0):
        mine, theirs = np.zeros(3), np.zeros(3)
        _same(compiled(mine, x, tol), writes_then_breaks(theirs, x, tol))
        np.testing.assert_array_equal(mine, theirs)


def changes_a_list(x: Any, tol: float) -> Any:
    # A copy after a run-time break appends to a list: no cond can hold that, so the loop
    # unrolls as before (a graph break at the test) and stays right.
    seen = []
    for w in (0.5, 0.25):
        x = x * w
        seen.append(w)
        if x.max() < tol:
            break
    return x, len(seen)


def test_unrolled_loop_whose_copies_cannot_be_conds_breaks_at_the_test() -> None:
    out = explain(changes_a_list)(_rows(5), 0.3)
    assert out.graph_break_count >= 1
    assert "its break on a run-time value" not in out.loops_not_kept[0].reason
    compiled = compile_function(changes_a_list, backend="eager")
    for tol in (0.05, 0.3, 10.0):
        _same(compiled(_rows(5), tol), changes_a_list(_rows(5), tol))


# -- loops in try blocks whose index is a counter the loop's test bounds ------------------


def sum_to_a_counter_in_try(x: Any, n: int) -> Any:
    s = 0.0
    k = 0
    try:
        while k < n:
            s = s + x[k]
            k += 1
    except IndexError:
        s = -s  # the handler reads the partial sum and the counter as eager left them
    return s, k


def write_then_read_in_try(out: Any, x: Any, n: int) -> Any:
    # `out` is two longer than `x`: past the end of `x` the write of the iteration that
    # raises has happened, and the handler sees it.
    s = 0.0
    k = 0
    try:
        while k <= n:
            out[k] = s
            s = s + x[k]
            k += 1
    except IndexError:
        out[0] = -1.0
    return s, k


def range_of_an_int_in_try(out: Any, x: Any, n: int) -> Any:
    s = 0.0
    k = -1
    try:
        for k in range(n):
            out[k] = s
            s = s + x[k]
    except IndexError:
        s = -s
    return s, k


def _calls(fn: Callable[..., Any], lengths_and_counts: list[tuple[int, int]]) -> list[Any]:
    # Each program's arguments at a length of x (out two longer) and a count n.
    calls = []
    for length, n in lengths_and_counts:
        x = np.arange(1.0, length + 1.0)
        if fn is sum_to_a_counter_in_try:
            calls.append((x, n))
        else:
            calls.append((np.zeros(length + 2), x, n))
    return calls


# NOTE: (len(x), n): within (trip counts 0, 1, several, up to the end), then past the end,
# raising at iterations 2, 3 and 5.
COUNTED_CALLS = [(5, 3), (6, 0), (6, 1), (5, 5), (2, 3), (3, 4), (5, 6), (5, 9)]

COUNTED_IN_TRY: list[Callable[..., Any]] = [
    sum_to_a_counter_in_try,
    write_then_read_in_try,
    range_of_an_int_in_try,
]


@pytest.mark.parametrize("fn", COUNTED_IN_TRY, ids=[fn.__name__ for fn in COUNTED_IN_TRY])
def test_counted_loop_in_try_is_kept_where_it_stays_in_bounds(fn: Callable[..., Any]) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    with recording_captures() as events:
        for args in _calls(fn, COUNTED_CALLS):
            mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            _same(compiled(*mine), fn(*theirs))
            for got, want in zip(mine, theirs, strict=True):
                if isinstance(want, np.ndarray):
                    np.testing.assert_array_equal(got, want)  # eager's writes, and only those
    first = events[0]
    assert first.graph is not None and first.break_reason is None, first.break_reason
    assert {"while_loop", "for_loop"} & set(_ops(first.graph))
    relations = [str(guard) for guard in first.guards if "L['n']" in str(guard)]
    assert any("L['n'] <" in text for text in relations), relations


def counter_stepping_back(x: Any, n: int) -> Any:
    # `k -= 1` is no increment: the test no longer bounds the counter from below.
    s = 0.0
    k = 0
    try:
        while k < n:
            s = s + x[k]
            k += 2
            k -= 1
    except IndexError:
        s = -s
    return s, k


def test_counter_the_body_may_lower_is_not_bounded() -> None:
    out = explain(counter_stepping_back)(np.arange(1.0, 6.0), 3)
    compiled = compile_function(counter_stepping_back, backend="eager", dynamic=True)
    with recording_captures() as events:
        for length, n in ((5, 3), (4, 2), (3, 5)):
            x = np.arange(1.0, length + 1.0)
            _same(compiled(x, n), counter_stepping_back(x, n))
    assert out.graph_break_count == 0  # static values: unrolled at capture, as before
    reasons = [event.break_reason or "" for event in events]
    assert any("element_at may raise IndexError" in reason for reason in reasons), reasons


def unrolled_inside_a_kept_loop(x: Any) -> Any:
    # The tuple loop's stop flag and the enclosing kept loop's are two: both breaks hold.
    s = 0.0
    for i in range(x.shape[0]):
        for w in (0.5, 2.0):
            s = s + x[i] * w
            if s > 3.0:
                break
        if s > 10.0:
            break
    return s


def test_run_time_break_in_unrolled_loop_inside_a_kept_loop() -> None:
    out = explain(unrolled_inside_a_kept_loop)(np.linspace(0.0, 2.0, 7))
    assert out.graph_count == 1 and out.graph_break_count == 0, out
    ops = _ops(capture_function(unrolled_inside_a_kept_loop, (np.linspace(0.0, 2.0, 7),), {}).graph)
    assert "for_loop" in ops
    compiled = compile_function(unrolled_inside_a_kept_loop, backend="eager", dynamic=True)
    for n in (0, 1, 3, 7, 12):
        x = np.linspace(0.0, 2.0, n)
        _same(compiled(x), unrolled_inside_a_kept_loop(x))


# -- locals a branch assigns and a later iteration reads -------------------------------------


def kept_until_a_branch_assigns(x: Any) -> Any:
    y = np.zeros_like(x)
    t = 1.5
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            t = x[i]  # first in the code's order, but a path skips it
        y[i] = t * 2.0  # the last assigning iteration's t (not read after the loop)
    return y


def while_with_a_branch_kept_local(x: Any) -> Any:
    y = np.zeros_like(x)
    last = -1.0
    k = 0
    while k < x.shape[0]:
        if x[k] < 0.0:
            last = x[k]
        y[k] = last
        k += 1
    return y


@pytest.mark.parametrize("fn", [kept_until_a_branch_assigns, while_with_a_branch_kept_local])
def test_a_local_a_branch_may_skip_is_carried(fn: Callable[..., Any]) -> None:
    # The body stores it before it reads it in the code's order, yet a path through the
    # body reads the last iteration's value: it is carried, not a temporary (main gave
    # [1.8, 3.0, 3.0, 1.4, 3.0] for [1.8, 1.8, 1.8, 1.4, 1.4], eager backend and C alike).
    compiled = compile_function(fn)
    for n in TRIP_COUNTS:
        _same(compiled(*_data(n)), fn(*_data(n)))
