"""Python's `min` and `max` of run-time NumPy scalars (builtin_calls): dynamic programming
loops (`d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, ...)`) stay kept when every item
is a NumPy integer or bool scalar of one dtype (np.minimum / np.maximum) or a NumPy float
scalar of one dtype (Python's pick as `where` of its comparison: NaNs and signed zeros
fall as in eager, where np.maximum's would not); mixed types, where the result's type
depends on the values, leave the loop to Python, as before. Each program runs eagerly and
compiled (the eager backend runs the captured graph) at sizes 0, 1, 2 and 7.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, explain
from numpile_capture.testing import assert_same_as_eager as _same

SIZES = (0, 1, 2, 7)

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def edit_distance(a: Any, b: Any) -> Any:
    m, n = a.shape[0], b.shape[0]
    d = np.zeros((m + 1, n + 1), dtype=np.int64)
    for i in range(m + 1):
        d[i, 0] = i
    for j in range(n + 1):
        d[0, j] = j
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + cost)
    return d, d[m, n]


def longest_common_run(a: Any, b: Any) -> Any:
    # int32 scalars, max of a tuple, and a bool max: one type each.
    best = np.zeros((a.shape[0] + 1, b.shape[0] + 1), dtype=np.int32)
    seen = np.zeros(1, dtype=bool)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            best[i + 1, j + 1] = max((best[i, j + 1], best[i + 1, j]))
            seen[0] = max(seen[0], a[i] == b[j])
    return best, seen


def float_max(a: Any, b: Any) -> Any:
    out = np.zeros((a.shape[0], 4), dtype=a.dtype)
    for i in range(a.shape[0]):
        out[i, 0] = max(a[i], b[i])
        out[i, 1] = max(b[i], a[i])
        out[i, 2] = min(a[i], b[i])
        out[i, 3] = min(b[i], a[i], a[i] * 2)
    return out


def kadane_running_best(a: Any, b: Any) -> Any:
    # The pick carried: its type stays the dtype's scalar type, as eager's.
    best = a[0] if a.shape[0] else np.float32(0.0)
    cur = best
    for i in range(1, a.shape[0]):
        cur = max(a[i], cur + a[i])
        best = max(best, cur)
    return best, cur


def mixed_max(a: Any, b: Any) -> Any:
    out = []
    for i in range(a.shape[0]):
        out.append(max(a[i], 1))
    return out


def _ints(n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    return (rng.integers(0, 3, n), rng.integers(0, 3, n + 1))


def _floats(n: int) -> tuple[Any, ...]:
    a = np.array([1.0, np.nan, -0.0, 2.0, np.nan, 0.5, 3.0])[:n]
    b = np.array([np.nan, 1.0, 0.0, 1.0, np.nan, 0.5, -3.0])[:n]
    return (a, b)


def _floats32(n: int) -> tuple[Any, ...]:
    a, b = _floats(n)
    return (a.astype(np.float32), b.astype(np.float32))


@pytest.mark.parametrize("fn", [edit_distance, longest_common_run])
def test_min_max_of_integer_scalars_keeps_the_loop(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_ints(7))
    assert out.loops_not_kept == () and out.graph_break_count == 0
    assert "maximum(" in str(out.graphs[0]) or "minimum(" in str(out.graphs[0])
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in SIZES:
        _same(compiled(*_ints(n)), fn(*_ints(n)))


@pytest.mark.parametrize("fn", [float_max, kadane_running_best])
@pytest.mark.parametrize("data", [_floats, _floats32])
def test_min_max_of_float_scalars_keeps_the_loop_with_pythons_pick(
    fn: Callable[..., Any], data: Callable[[int], tuple[Any, ...]]
) -> None:
    out = explain(fn)(*data(7))
    assert out.loops_not_kept == () and out.graph_break_count == 0
    assert "where(" in str(out.graphs[0])
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in SIZES:
        got, want = compiled(*data(n)), fn(*data(n))
        _same(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))  # max(-0.0, 0.0) is -0.0


@pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")
def test_min_max_python_picks_by_value_stays_python() -> None:
    out = explain(mixed_max)(*_ints(7))
    reason = str(out.loops_not_kept[0])
    assert "depends on the values" in reason and "np.float64(0.0)" in reason
    compiled = compile_function(mixed_max, backend="eager", dynamic=True)
    for n in SIZES:
        _same(compiled(*_ints(n)), mixed_max(*_ints(n)))
