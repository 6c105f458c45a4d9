"""A branch on NumPy scalar inputs (`if a > 0:` with `a` an `np.float64` that changes between
calls) is a guard on the condition's outcome in one graph, not a graph break; array
contents stay data-dependent control flow. Every call is compared with eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function, explain
from numpile_capture.capture_events import recording_captures
from numpile_capture.operators import DATA_DEPENDENT
from numpile_guards import cache_for

pytestmark = pytest.mark.usefixtures("fresh_dispatch")

X = np.linspace(-2.0, 3.0, 6)


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    if isinstance(want, tuple):
        for mine, eager in zip(got, want, strict=True):
            _same(mine, eager)
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def _compiles(fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> int:
    compiled = compile_function(fn, backend="eager")
    with recording_captures() as events:
        for args in calls:
            _same(compiled(*args), fn(*args))
    return len(events)


def _guards(fn: Callable[..., Any]) -> set[str]:
    return {str(g) for e in cache_for(fn.__code__).entries for g in e.metadata["guards"]}


def _sign(a: Any, x: Any) -> Any:
    if a > 0:
        return x + a
    return x - 1


def test_a_branch_on_a_numpy_scalar_input_is_one_graph_guarded_by_its_outcome() -> None:
    # The first call bakes 2.0 in; -2.0 makes `a` an input (the False way), 3.0 the True
    # way; NaN compares false as NumPy's does and reuses the False entry, as -1.0 does.
    values = (2.0, -2.0, 3.0, float("nan"), -1.0, 0.5)
    assert _compiles(_sign, [(np.float64(v), X) for v in values]) == 3
    guards = _guards(_sign)
    assert "EQUALS_MATCH((bool(L['a'] > 0)), True)" in guards
    assert "EQUALS_MATCH((bool(L['a'] > 0)), False)" in guards
    out = explain(_sign)(np.float64(-4.0), X)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    assert "EQUALS_MATCH((bool(L['a'] > 0)), False)" in str(out)


def _both(a: Any, b: Any, x: Any) -> Any:
    if a == b or not (abs(a - 1) < 0.5):
        return x * b
    return x + a


def test_two_scalar_inputs_compared_and_derived_values_guard_once_each() -> None:
    pairs = ((1.0, 1.0), (1.0, 2.0), (3.0, 3.0), (1.2, 0.0), (0.8, 5.0), (4.0, 4.0))
    calls = [(np.float64(a), np.float64(b), X) for a, b in pairs]
    # Baked in, then one entry per combination of outcomes taken.
    assert _compiles(_both, calls) == 4
    assert "EQUALS_MATCH((bool(L['a'] == L['b'])), True)" in _guards(_both)
    assert "EQUALS_MATCH((bool(abs(L['a'] - 1) < 0.5)), True)" in _guards(_both)


def _conversions(a: Any, x: Any) -> Any:
    flag = 1.0 if bool(a) and not np.isnan(np.sqrt(a)) else -1.0
    return x * float(a) + int(a) + a.item() * flag, min(a, 3), max(2, a)


def test_conversions_and_min_max_follow_eager_without_a_break() -> None:
    calls = [(np.float64(v), X) for v in (2.5, 0.0, 7.25, -3.5, 1.5)]
    compiled = compile_function(_conversions, backend="eager")
    for args in calls:
        _same(compiled(*args), _conversions(*args))
    out = explain(_conversions)(np.float64(4.5), X)
    assert out.graph_break_count == 0
    text = str(out)
    assert "TYPE_MATCH((int(L['a'])), class int)" in text
    assert "TYPE_MATCH((L['a'].item()), class float)" in text
    assert "EQUALS_MATCH((bool(np.isnan(np.sqrt(L['a'])))), False)" in text


def _zeros_of(a: Any, x: Any) -> Any:
    return np.zeros(int(a)) + x[0]


def test_int_of_a_scalar_input_as_a_size_is_a_size_symbol() -> None:
    # A created array's size is a size symbol of the int, guarded >= 2: 3.2, 3.9 and 5.5
    # share the entry compiled once `a` changed.
    calls = [(np.float64(v), X) for v in (1.0, 3.2, 3.9, 5.5)]
    assert _compiles(_zeros_of, calls) == 2
    assert "SHAPE_RELATION((int(L['a'])) >= 2)" in _guards(_zeros_of)
    # 1.5 makes a one-element array: sizes 0 and 1 are specialized, a new entry.
    assert _compiles(_zeros_of, [(np.float64(1.5), X)]) == 1


def _loop(a: Any, x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        if a > 0:
            s += x[i]
        else:
            s -= x[i] * a
    return s


def test_a_loop_body_branching_on_a_scalar_input_stays_a_cond_of_one_entry() -> None:
    # In a kept loop the branch is a `cond` the loop runs (in C with the inductor): no
    # guard, so one entry serves both outcomes and the call gate keeps the entry.
    calls = [(np.float64(v), X) for v in (1.0, -1.0, 2.0, -0.5)]
    assert _compiles(_loop, calls) == 2
    out = explain(_loop)(np.float64(-2.0), X)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    assert "for_loop" in str(out) and "cond(" in str(out)


def _carried(x: Any, a: Any) -> Any:
    # A branch on a loop-carried scalar stays a `cond` inside the body.
    s = a
    for i in range(x.shape[0]):
        s = s - x[i] if s > 1 else s + x[i]
    return s


def test_a_branch_on_a_loop_carried_scalar_stays_a_cond() -> None:
    for value in (1.0, 4.0):
        a = np.float64(value)
        _same(compile_function(_carried, backend="eager", dynamic=True)(X, a), _carried(X, a))
    assert "cond(" in str(capture_function(_carried, (X, np.float64(4.0)), {}).graph)


def _on_data(a: Any, x: Any, n: int) -> Any:
    if x.sum() > a:
        return x + 1
    return x


def _powered(a: Any, x: Any, n: int) -> Any:
    s = a
    for _ in range(n):
        s = s * a
    if s > 1:
        return x + 1
    return x


def test_array_values_stay_a_graph_break_and_an_untracked_scalar_says_why() -> None:
    # A kept loop's result is a run-time value: the branch after it breaks, and says so.
    for fn in (_on_data, _powered):
        compiled = compile_function(fn, backend="eager")
        for value, n in ((4.0, 2), (0.25, 3)):
            _same(compiled(np.float64(value), X, n), fn(np.float64(value), X, n))
    data = explain(_on_data)(np.float64(1.0), X, 2)
    assert [reason.reason for reason in data.break_reasons] == [DATA_DEPENDENT]
    scalar = explain(_powered)(np.float64(1.0), X, 4)
    (reason,) = scalar.break_reasons
    assert "a NumPy scalar that for_loop, loop_output, greater computed" in reason.reason
