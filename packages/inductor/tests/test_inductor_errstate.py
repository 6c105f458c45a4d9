"""NumPy's floating-point error state: "raise", "call", "print" and "log" behave as in eager."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph, errstate


def _divide_then_add(x: Any, y: Any) -> Any:
    return np.sin(x) / y + 1


def _log_in_place(x: Any) -> Any:
    x += 1.0
    x *= 2.0
    return np.log(x).sum()


def _compiled(fn: Callable[..., Any], *args: Any) -> Callable[..., Any]:
    copies = [a.copy() for a in args]
    return compile_graph(capture_function(fn, tuple(copies), {}).graph).fn


@pytest.fixture
def no_eager_under_warn(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    # Counts the graphs that ran op by op with NumPy instead of as kernels.
    runs: list[int] = []
    eager = errstate.run_graph

    def counting(graph: Any, args: Any, quiet: Any = ()) -> Any:
        runs.append(1)
        return eager(graph, args, quiet)

    monkeypatch.setattr(errstate, "run_graph", counting)
    yield runs


@pytest.mark.parametrize("setting", ["divide", "all"])
def test_a_raising_error_state_raises_numpys_floating_point_error(setting: str) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y)
    with np.errstate(**{setting: "raise"}):
        with pytest.raises(FloatingPointError) as expected:
            _divide_then_add(x, y)
        with pytest.raises(FloatingPointError) as got:
            compiled(x, y)
        np.testing.assert_array_equal(compiled(x, np.ones(8)), _divide_then_add(x, np.ones(8)))
    assert str(got.value) == str(expected.value) == "divide by zero encountered in divide"


def test_error_callbacks_see_what_eager_reports() -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y)
    seen: list[tuple[str, int]] = []
    old = np.seterrcall(lambda kind, flag: seen.append((kind, flag)))
    try:
        with np.errstate(all="call"):
            expected = _divide_then_add(x, y)
            eager_calls = list(seen)
            seen.clear()
            got = compiled(x, y)
    finally:
        np.seterrcall(old)
    np.testing.assert_array_equal(got, expected)
    assert seen == eager_calls == [("divide by zero", 1)]


def test_in_place_graphs_mutate_once_under_a_raising_state() -> None:
    x = np.array([-2.0, 0.5, 3.0])
    compiled = _compiled(_log_in_place, x)
    eager_x, compiled_x = x.copy(), x.copy()
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            _log_in_place(eager_x)
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            compiled(compiled_x)
    # NumPy wrote the updates before the log raised; so did the op-by-op run, once each.
    np.testing.assert_array_equal(compiled_x, eager_x)


def test_kernels_run_unless_a_flag_the_state_checks_is_raised(
    no_eager_under_warn: list[int],
) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y)
    with np.errstate(all="ignore"):
        compiled(x, y)
    with np.errstate(divide="ignore", invalid="warn"):
        compiled(x, y)
    compiled(x, np.ones(8))  # warns on division by zero, but divides by none
    with np.errstate(all="raise"):
        compiled(x, np.ones(8))  # raises on any error, but meets none
    with np.errstate(over="raise", divide="ignore"):
        compiled(x, y)  # the division by zero is ignored: the kernels' result stands
    assert no_eager_under_warn == []
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        compiled(x, y)  # a flag the state warns about: op by op, for NumPy's warning
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        compiled(x, y)  # and one it raises on: op by op, for NumPy's error
    assert no_eager_under_warn == [1, 1]


def _matmul_then_log(a: Any, b: Any) -> Any:
    return np.log(a @ b)


def test_a_module_calling_numpy_itself_runs_op_by_op_under_a_strict_state(
    no_eager_under_warn: list[int],
) -> None:
    # matmul runs inside the module as a NumPy call, which would raise inside it: under a
    # strict state such a graph runs op by op from the start.
    a = np.full((2, 2), np.inf)
    b = np.zeros((2, 2))
    compiled = _compiled(_matmul_then_log, a, b)
    raising = np.errstate(invalid="raise")
    with raising, pytest.raises(FloatingPointError, match="invalid value encountered in matmul"):
        compiled(a, b)
    assert no_eager_under_warn == [1]


def test_a_global_seterr_is_seen_by_later_calls(no_eager_under_warn: list[int]) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y)
    with np.errstate(divide="ignore"):
        compiled(x, y)
        old = np.seterr(divide="raise")
        try:
            with pytest.raises(FloatingPointError):
                compiled(x, y)
        finally:
            np.seterr(**old)
        compiled(x, y)
    assert no_eager_under_warn == [1]
