"""Python ints stored into integer arrays narrower than int64 inside loops that run as C.

`counts[i] = c` with `counts` int8 and `c` a Python int (a popcount, a step counter, a
predecessor index into int32) made the whole loop run with NumPy per iteration, 25-80x
slower than eager. NumPy raises `OverflowError` for a Python int outside the array's range;
the C loop checks the range and, outside it, bails: the loop runs again with NumPy, which
raises from the user's line with the earlier writes kept. Each test compares with eager
(values, dtypes, the inputs afterwards, the exception) and checks the loop is C.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_capture.testing import assert_same_as_eager
from numpile_inductor import compile_graph


def _popcounts(words: Any, counts: Any) -> Any:
    total = 0
    for i in range(words.shape[0]):
        v = int(words[i])
        c = 0
        while v:
            v &= v - 1
            c += 1
        counts[i] = c
        total += c
    return counts, total


def _steps_times(ks: Any, x: Any, counts: Any) -> Any:
    # Python ints k * i - 3 (int64 in C) stored where they may not fit.
    k = int(ks[0])
    for i in range(x.shape[0]):
        counts[i] = k * i - 3
    return counts


def _rows_of_an_int(ks: Any, x: Any, counts: Any) -> Any:
    k = int(ks[0])
    for i in range(x.shape[0]):
        counts[i, :] = k * i
    return counts


def _compiled(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    # The graph's inputs in the order the function first reads them: its parameters' order.
    graph = capture_function(fn, tuple(_copy(a) for a in args), {}).graph
    compiled = compile_graph(graph)
    assert "static PyObject *loop_v" in compiled.source  # the loop is C, not a host loop
    return compiled


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args)
    except OverflowError as error:
        return error


def _same(fn: Callable[..., Any], compiled: Any, args: tuple[Any, ...]) -> None:
    ours, theirs = [_copy(a) for a in args], [_copy(a) for a in args]
    got, want = _outcome(compiled.fn, tuple(ours)), _outcome(fn, tuple(theirs))
    if isinstance(want, OverflowError):
        assert isinstance(got, OverflowError)
        assert str(got) == str(want)
    else:
        assert_same_as_eager(got, want)
    for mine, eager in zip(ours, theirs, strict=True):
        if isinstance(eager, np.ndarray):
            assert mine.dtype == eager.dtype
            np.testing.assert_array_equal(mine, eager)  # the writes before a raise kept


def test_counts_into_int8_run_as_c() -> None:
    words = np.random.default_rng(0).integers(0, 2**32, 40, dtype=np.uint64).astype(np.uint32)
    args = (words, np.zeros(40, dtype=np.int8))
    _same(_popcounts, _compiled(_popcounts, args), args)


@pytest.mark.parametrize(
    ("fn", "dtype"), [(_steps_times, "int8"), (_steps_times, "uint8"), (_rows_of_an_int, "int32")]
)
def test_out_of_range_ints_raise_numpys_overflow_error(fn: Callable[..., Any], dtype: str) -> None:
    shape = (9,) if fn is _steps_times else (9, 3)
    compiled = _compiled(fn, (np.ones(1, np.int64), np.zeros(9), np.zeros(shape, dtype=dtype)))
    for k in (1, 2, 20, 60, 300_000_000):  # in range for each dtype, then past its bounds
        _same(fn, compiled, (np.array([k]), np.zeros(9), np.zeros(shape, dtype=dtype)))
