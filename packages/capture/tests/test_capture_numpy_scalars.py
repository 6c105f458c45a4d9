"""NumPy scalar constructors of run-time Python scalars (`np.int64(i)` of a loop's index,
`np.float32(k)` of an unspecialized int input): `numpy_scalar` nodes with NumPy's dtypes
and errors, an integer one indexing as its int; of values known now, NumPy runs now."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    ArrayMeta,
    ScalarMeta,
    capture_function,
    compile_function,
    explain,
    get_op,
    reset,
)
from numpile_guards import cache_for


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def _index_sum(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[np.int64(i)] * np.float32(i)
    return s


def _int32_countdown(x: Any) -> Any:
    n = x.shape[0]
    out = np.zeros(n, dtype=np.int32)
    for i in range(n):
        out[i] = np.int32(n - i) + 1
    return out


def _scaled(x: Any, k: int) -> Any:
    return x * np.float32(k)


def test_constructor_of_the_index_keeps_the_loop() -> None:
    x = np.arange(6.0)
    out = explain(_index_sum)(x)
    assert out.loops_not_kept == ()
    assert out.graph_break_count == 0
    text = str(capture_function(_index_sum, (x,), {}).graph)
    assert "for_loop" in text
    assert "numpy_scalar(" in text and "dtype=float32" in text
    # Of a value known now, NumPy runs now: a constant, no node.
    const = str(capture_function(lambda a: a + np.int8(3), (np.ones(2, np.int8),), {}).graph)
    assert "numpy_scalar" not in const


@pytest.mark.parametrize("fn", [_index_sum, _int32_countdown], ids=["index_sum", "int32_countdown"])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_values_and_dtypes_are_numpys(fn: Callable[..., Any], n: int) -> None:
    x = np.arange(float(n)) - 1.5
    assert explain(fn)(x.copy()).loops_not_kept == ()
    got = compile_function(fn, backend="eager", dynamic=True)(x.copy())
    want = fn(x.copy())
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_constructor_of_an_unspecialized_int_input_compiles_once() -> None:
    compiled = compile_function(_scaled, backend="eager", dynamic=True)
    x = np.ones(3, dtype=np.float32)
    compiled(x, 5)
    entries = len(cache_for(_scaled.__code__).entries)
    for k in (7, 1000, -3):
        got = compiled(x, k)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, _scaled(x, k))
    assert len(cache_for(_scaled.__code__).entries) == entries


def test_out_of_range_int_raises_numpys_overflow_error() -> None:
    def wrap(x: Any) -> Any:
        for i in range(x.shape[0]):
            x[i] = np.int8(i * 100)
        return x

    assert explain(wrap)(np.zeros(2)).loops_not_kept == ()
    compiled = compile_function(wrap, backend="eager", dynamic=True)
    with pytest.raises(OverflowError, match="Python integer 200 out of bounds for int8"):
        compiled(np.zeros(4))


def test_numpy_scalar_op_follows_numpy() -> None:
    op = get_op("numpy_scalar")
    assert op.meta(ScalarMeta(int), dtype=np.dtype("uint8")) == ArrayMeta((), "uint8")
    assert op.impl(7, dtype=np.dtype("int16")) == np.int16(7)
    assert type(op.impl(7, dtype=np.dtype("int16"))) is np.int16
    with pytest.raises(OverflowError):
        op.impl(-1, dtype=np.dtype("uint8"))
    with pytest.raises(ValueError, match="numeric"):
        op.meta(ScalarMeta(int), dtype=np.dtype("datetime64[s]"))
