"""Python numbers made of NumPy values (builtin_calls, operators): `int(v)` and `float(v)`
of a 0-d value are `python_number` nodes (a histogram's `b = int(x[i] * 8)` keeps its
loop), a NumPy integer scalar bounding a `range()` is its int (knapsack's
`range(c, w - 1, -1)` with `w = weights[i]`), and one that indexes is basic indexing
(`A[idx[0]]` is a view of `A`, as in NumPy, not the copy a 0-d index array makes).
Each program runs eagerly and compiled (the eager backend runs the captured graph).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, explain
from numpile_capture.testing import assert_same_as_eager as _same

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def histogram(x: Any) -> Any:
    counts = np.zeros(4, dtype=np.int64)
    for i in range(x.shape[0]):
        b = int(x[i] * 4)
        if b > 3:
            b = 3
        counts[b] += 1
    return counts, float(x[0]) if x.shape[0] else 0.0


def knapsack(weights: Any, values: Any) -> Any:
    best = np.zeros(11, dtype=np.int64)
    for i in range(weights.shape[0]):
        w = weights[i]
        for c in range(10, w - 1, -1):
            best[c] = max(best[c], best[c - w] + values[i])
    return best


def row_through_a_scalar_index(A: Any, idx: Any) -> Any:
    row = A[idx[0]]
    row[0] = 99.0
    A[idx[1], idx[0]] += 1.0
    return A, row


def _floats(n: int) -> tuple[Any, ...]:
    return (np.random.default_rng(n).random(n),)


def _items(n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    return (rng.integers(1, 6, n), rng.integers(1, 10, n))


def _rows(n: int) -> tuple[Any, ...]:
    return (np.arange(12.0).reshape(3, 4), np.array([2, 1]))


@pytest.mark.parametrize(("fn", "data"), [(histogram, _floats), (knapsack, _items)])
def test_loop_over_python_numbers_of_values_is_kept(
    fn: Callable[..., Any], data: Callable[[int], tuple[Any, ...]]
) -> None:
    out = explain(fn)(*data(7))
    assert out.loops_not_kept == () and out.graph_break_count == 0
    assert "python_number(" in str(out.graphs[0])
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in (0, 1, 2, 7):
        _same(compiled(*data(n)), fn(*data(n)))


def test_numpy_integer_scalar_index_is_a_view() -> None:
    # A view op of the row (getitem_at), not integer-array indexing (index: a copy).
    text = str(explain(row_through_a_scalar_index)(*_rows(3)).graphs[0])
    assert "getitem_at(" in text and " index(" not in text
    compiled = compile_function(row_through_a_scalar_index, backend="eager")
    (A, row), (want_A, want_row) = compiled(*_rows(3)), row_through_a_scalar_index(*_rows(3))
    _same((A, row), (want_A, want_row))
    assert np.shares_memory(A, row)


def test_int_of_nan_raises_as_eager() -> None:
    compiled = compile_function(histogram, backend="eager", dynamic=True)
    x = np.array([0.5, np.nan, 0.25])
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        histogram(x.copy())
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        compiled(x)


def test_python_number_meta_and_impl() -> None:
    from numpile_capture import ArrayMeta, ScalarMeta, get_op

    op = get_op("python_number")
    assert op.meta(ArrayMeta((), "float32"), kind=int) == ScalarMeta(int)
    assert op.meta(ArrayMeta((), "int64"), kind=float) == ScalarMeta(float)
    got = op.impl(np.float64(-2.75), kind=int)
    assert type(got) is int and got == -2
    with pytest.raises(ValueError, match="0-d"):
        op.meta(ArrayMeta((3,), "float64"), kind=int)
