"""0-d reductions of the 1-d values of a loop body in C (codegen/c/loop_reductions.py):
`@` / `np.dot` through NumPy's own BLAS `?dot`, `max` / `min`, `any` / `all`, bit for bit
as eager, with the loop nest in C (no body run with NumPy per iteration)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import capture_function, has_loops
from numpile_inductor import compile_graph

needs_blas = pytest.mark.skipif(
    rt.find_cpu_blas() is None, reason="no ILP64 CBLAS in the BLAS NumPy loaded"
)


class _Compiled:
    # A function's graph compiled by the inductor, called with the function's arguments.
    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        graph = capture_function(fn, copies, {}).graph
        self.compiled = compile_graph(graph)
        self.source = self.compiled.source
        names = list(inspect.signature(fn).parameters)
        self.order = [names.index(p.name) for p in graph.placeholders]
        # Each loop of the graph is a C function (none runs its body with NumPy).
        self.loops_in_c = not has_loops(graph) or "static PyObject *loop_" in self.source

    def fn(self, *args: Any) -> Any:
        return self.compiled.fn(*(args[k] for k in self.order))


def _check(fn: Callable[..., Any], *args: Any, caplog: pytest.LogCaptureFixture) -> _Compiled:
    # Compiled and eager on copies of `args`: equal bits, dtypes, Python types and in-place
    # effects, every loop in C.
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        compiled = _Compiled(fn, args)
        ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got = compiled.fn(*ours)
    theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*theirs)
    hints = [r.getMessage() for r in caplog.records]
    assert not [hint for hint in hints if "per iteration" in hint], hints
    assert compiled.loops_in_c
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want, strict=True)
    for mine, eager in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, eager, strict=True)
    return compiled


# -- dot products -----------------------------------------------------------------------------


def _row_dots(a: Any, y: Any) -> Any:
    out = np.zeros_like(y)
    for i in range(y.shape[0]):
        out[i] = a[i, :i] @ y[:i] + np.dot(a[:i, i], y[:i])
    return out


def _reversed_and_computed(a: Any, y: Any) -> Any:
    # `@` on a negative stride sums in order; np.dot copies it first and calls BLAS;
    # a computed operand is NumPy's temporary.
    out = np.zeros_like(y)
    for i in range(y.shape[0]):
        out[i] = a[i, i::-1] @ y[: i + 1] - np.dot(y[i::-1], a[i, : i + 1])
        out[i] += np.abs(a[i, :i]) @ (y[:i] * 0.5)
    return out


@needs_blas
@pytest.mark.parametrize("n", [0, 1, 2, 7, 41, 130])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dot_products_of_slices_round_as_numpys_blas(
    n: int, dtype: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rng = np.random.default_rng(n)
    a, y = rng.standard_normal((n, n)).astype(dtype), rng.standard_normal(n).astype(dtype)
    compiled = _check(_row_dots, a, y, caplog=caplog)
    assert n < 2 or ("np_loop_ddot(" if dtype == np.float64 else "np_loop_sdot(") in compiled.source
    _check(_reversed_and_computed, a, y, caplog=caplog)


@needs_blas
def test_dot_product_of_mixed_dtypes_casts_as_numpy() -> None:
    def mixed(a: Any, y: Any) -> Any:
        out = np.zeros(y.shape[0])
        for i in range(y.shape[0]):
            out[i] = a[i, :i] @ y[:i]
        return out

    rng = np.random.default_rng(3)
    a, y = rng.standard_normal((50, 50)).astype(np.float32), rng.standard_normal(50)
    compiled = _Compiled(mixed, (a, y))
    np.testing.assert_array_equal(compiled.fn(a, y), mixed(a, y), strict=True)


# -- sums ---------------------------------------------------------------------------------------


def _sums(x: Any, y: Any) -> Any:
    # A view's sum in place (any stride), a computed value's through its temporary.
    n = x.shape[0]
    s0 = s1 = s2 = x[:0].sum()
    for i in range(n):
        s0 += (x[i:] * y[: n - i]).sum()
        s1 += x[i::-1].sum() - np.sum(y[i::2])
        s2 += x[: n - i].sum()
    return s0, s1, s2


@pytest.mark.parametrize("n", [0, 1, 9, 200, 700])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_sums_of_slices_are_numpys_pairwise_sums(
    n: int, dtype: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rng = np.random.default_rng(n)
    x, y = (rng.standard_normal(n) * 9).astype(dtype), (rng.standard_normal(n) * 9).astype(dtype)
    _check(_sums, x, y, caplog=caplog)


# -- max and min --------------------------------------------------------------------------------


def _row_extrema(a: Any) -> Any:
    out = np.zeros((a.shape[0], 2), dtype=a.dtype)
    for i in range(a.shape[0]):
        out[i, 0] = np.abs(a[i, : i + 1]).max()
        out[i, 1] = a[i, : i + 1].min()
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8])
def test_max_and_min_of_index_slices(dtype: Any, caplog: pytest.LogCaptureFixture) -> None:
    a = (np.random.default_rng(1).standard_normal((9, 9)) * 50).astype(dtype)
    _check(_row_extrema, a, caplog=caplog)


@pytest.mark.parametrize(
    "row",
    [
        [np.nan, 1.0, 2.0],  # NumPy's NaN (a bail: its payload is NumPy's pick)
        [1.0, -np.inf, 5.0],
        [0.0, -0.0, -1.0],  # zeros of both signs at the maximum: NumPy's choice
        [-0.0, -0.0, -3.0],
    ],
)
def test_max_keeps_numpys_nan_and_signed_zero(row: list[float]) -> None:
    def last_max(a: Any) -> Any:
        out = np.zeros(a.shape[0])
        for i in range(a.shape[0]):
            out[i] = a[i, : i + 1].max() + a[i, : i + 1].min()
        return out

    a = np.tile(np.array(row), (3, 1))
    compiled = _Compiled(last_max, (a,))
    got, want = compiled.fn(a), last_max(a)
    np.testing.assert_array_equal(got, want, strict=True)
    assert (np.signbit(got) == np.signbit(want)).all()


def test_max_of_an_empty_slice_raises_numpys_value_error() -> None:
    def empty_max(a: Any) -> Any:
        out = np.zeros(a.shape[0])
        for i in range(a.shape[0]):
            out[i] = a[i, : 2 - i].max()
        return out

    a = np.arange(16.0).reshape(4, 4)
    compiled = _Compiled(empty_max, (a,))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        compiled.fn(a)


# -- any and all, and bounds clamped by an `if` ----------------------------------------------------


def _banded_elimination(a: Any, b: Any) -> Any:
    n = b.shape[0]
    for k in range(n):
        hi = k + 3
        if hi > n:
            hi = n
        if np.any(a[k + 1 : hi, k] != 0.0) and not np.all(a[k, k:hi] == 0.0):
            for i in range(k + 1, hi):
                f = a[i, k] / a[k, k]
                for j in range(k, hi):
                    a[i, j] -= f * a[k, j]
                b[i] -= f * b[k]
    return b


@pytest.mark.parametrize("n", [0, 1, 2, 12])
def test_any_and_all_guard_element_loops(n: int, caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(n)
    a = np.triu(np.tril(rng.standard_normal((n, n)), 2), -2) + 4.0 * np.eye(n)
    a[:, ::3] = np.triu(a)[:, ::3]  # every third column already zero below its diagonal
    compiled = _check(_banded_elimination, a, rng.standard_normal(n), caplog=caplog)
    if n > 1:
        # `hi` is `k + 3` or `n`: bounded by its branches, no overflow check, so no copy of
        # the arrays the loop writes is taken on each call.
        assert "snap_" not in compiled.source
