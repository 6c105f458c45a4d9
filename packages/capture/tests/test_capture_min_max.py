"""Python's `min` and `max` of run-time NumPy scalars (builtin_calls): dynamic programming
loops (`d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, ...)`) stay kept when every item
is a NumPy integer or bool scalar of one dtype; other items (floats, where Python's pick
and np.maximum's differ on NaN, or mixed types, where the result's type depends on the
values) leave the loop to Python, as before. Each program runs eagerly and compiled (the
eager backend runs the captured graph) at sizes 0, 1, 2 and 7.
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
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = max(a[i], b[i])
    return out


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


@pytest.mark.parametrize("fn", [edit_distance, longest_common_run])
def test_min_max_of_integer_scalars_keeps_the_loop(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_ints(7))
    assert out.loops_not_kept == () and out.graph_break_count == 0
    assert "maximum(" in str(out.graphs[0]) or "minimum(" in str(out.graphs[0])
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in SIZES:
        _same(compiled(*_ints(n)), fn(*_ints(n)))


@pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")
@pytest.mark.parametrize(("fn", "data"), [(float_max, _floats), (mixed_max, _ints)])
def test_min_max_python_picks_differently_stays_python(
    fn: Callable[..., Any], data: Callable[[int], tuple[Any, ...]]
) -> None:
    out = explain(fn)(*data(7))
    assert "compares array values" in str(out.loops_not_kept[0])
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in SIZES:
        _same(compiled(*data(n)), fn(*data(n)))
