"""Loop bodies with slices bounded by the loop index, compiled as inline C loops
(codegen/c/loop_vectors.py): values, in-place effects and errors as NumPy gives them."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, has_loops
from numpile_inductor import compile_graph


class _Compiled:
    # A function's graph compiled by the inductor, called with the function's arguments
    # (the graph takes them in the order it first reads them).
    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        graph = capture_function(fn, tuple(a.copy() for a in args), {}).graph
        self.compiled = compile_graph(graph)
        self.source = self.compiled.source
        names = list(inspect.signature(fn).parameters)
        self.order = [names.index(p.name) for p in graph.placeholders]
        # Each loop of the graph is a C function (none runs its body with NumPy).
        self.loops_in_c = not has_loops(graph) or "static PyObject *loop_" in self.source

    def fn(self, *args: Any) -> Any:
        return self.compiled.fn(*(args[k] for k in self.order))


def _compiled(fn: Callable[..., Any], *args: Any) -> _Compiled:
    return _Compiled(fn, args)


def _check(fn: Callable[..., Any], *args: Any, exact: bool = True) -> Any:
    compiled = _compiled(fn, *args)
    ours = [a.copy() for a in args]
    theirs = [a.copy() for a in args]
    got = compiled.fn(*ours)
    want = fn(*theirs)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert compiled.loops_in_c
    compare = np.testing.assert_array_equal if exact else np.testing.assert_allclose
    compare(got, want)
    for mine, eager in zip(ours, theirs, strict=True):
        compare(mine, eager)
    return compiled


def _lu_rows(a: Any) -> Any:
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            a[i, j] = (a[i, j] - a[i, :j] @ a[:j, j]) / a[j, j]
        for j in range(i, n):
            a[i, j] = a[i, j] - a[i, :i] @ a[:i, j]
    return a


def _back_substitution(u: Any, b: Any) -> Any:
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - u[i, i + 1 :] @ x[i + 1 :]) / u[i, i]
    return x


def _reverse_prefix(y: Any) -> Any:
    # NumPy computes the right-hand side first: the store overlaps its reversed read.
    for k in range(1, y.shape[0]):
        y[:k] = y[:k] + 0.5 * y[k - 1 :: -1]
    return y


def _shifted_rows(a: Any) -> Any:
    # `A[i, 1:-1] += A[i, :-2]`: an in-place op whose operand overlaps its target.
    for i in range(a.shape[0]):
        a[i, 1:-1] += a[i, :-2]
    return a


def _row_elimination(a: Any) -> Any:
    n = a.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            a[i, k:] -= (a[i, k] / a[k, k]) * a[k, k:]
    return a


def _floyd_warshall(d: Any) -> Any:
    n = d.shape[0]
    for k in range(n):
        for i in range(n):
            d[i, :] = np.minimum(d[i, :], d[i, k] + d[k, :])
    return d


def _suffix_products(x: Any, y: Any) -> Any:
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += (x[i:] * y[: n - i]).sum()
    return s


def _past_the_end_slices(x: Any) -> Any:
    # Slices past the end clamp as Python's do; negative starts count from the end.
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i + 3 :].sum() + x[-i - 1 :].sum() + x[: i - 2].sum()
    return s


def _rows_reversed(a: Any) -> Any:
    for row in a:
        row[:] = row[::-1]
    return a


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_lu_rows_is_one_c_loop_nest(n: int, caplog: pytest.LogCaptureFixture) -> None:
    a = np.random.default_rng(n).random((n, n)) + n * np.eye(n)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled = _check(_lu_rows, a, exact=False)
    assert "np_loop_slice" in compiled.source
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_back_substitution_with_a_negative_step(n: int) -> None:
    rng = np.random.default_rng(n)
    u = np.triu(rng.random((n, n))) + 2 * np.eye(n)
    _check(_back_substitution, u, rng.random(n), exact=False)


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_overlapping_store_goes_through_a_temporary(n: int) -> None:
    compiled = _check(_reverse_prefix, np.arange(float(n)) + 1.0)
    if n > 1:
        assert "np_loop_overlap" in compiled.source
        assert "malloc" in compiled.source and "free(tmp" in compiled.source


@pytest.mark.parametrize("shape", [(0, 5), (1, 2), (3, 5), (4, 9)])
def test_in_place_update_reading_its_own_row_shifted(shape: tuple[int, int]) -> None:
    _check(_shifted_rows, np.arange(float(np.prod(shape))).reshape(shape))


@pytest.mark.parametrize("n", [1, 2, 6])
def test_row_elimination_and_floyd_warshall(n: int) -> None:
    rng = np.random.default_rng(n)
    _check(_row_elimination, rng.random((n, n)) + n * np.eye(n))
    _check(_floyd_warshall, rng.uniform(1.0, 9.0, (n, n)))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_slices_clamp_as_python_does(n: int) -> None:
    x = np.arange(float(n)) * 0.5
    _check(_suffix_products, x, x[::-1].copy(), exact=False)
    _check(_past_the_end_slices, x, exact=False)


def test_a_row_reversed_through_its_own_view() -> None:
    _check(_rows_reversed, np.arange(12.0).reshape(4, 3))


def test_arguments_that_alias_each_other_keep_numpy_results() -> None:
    # Two arguments viewing one buffer: the store overlaps the read only at run time.
    def shift(a: Any, b: Any) -> Any:
        for i in range(1, a.shape[0]):
            a[i:] = b[: a.shape[0] - i] + 1.0
        return a

    base = np.arange(10.0)
    compiled = _compiled(shift, base[1:], base[:-1])
    mine = np.arange(10.0)
    compiled.fn(mine[1:], mine[:-1])
    eager = np.arange(10.0)
    shift(eager[1:], eager[:-1])
    np.testing.assert_array_equal(mine, eager)


def test_index_error_in_a_view_keeps_the_earlier_writes() -> None:
    def rows(a: Any, b: Any) -> Any:
        for i in range(b.shape[0]):
            a[i, : i + 1] = b[i]  # a has fewer rows than b: row 3 raises
        return a

    a, b = np.zeros((3, 4)), np.arange(5.0)
    compiled = _compiled(rows, a, b)
    mine, eager = a.copy(), a.copy()
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
        compiled.fn(mine, b)
    with pytest.raises(IndexError):
        rows(eager, b)
    np.testing.assert_array_equal(mine, eager)
