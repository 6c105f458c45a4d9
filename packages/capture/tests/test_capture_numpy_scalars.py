"""NumPy scalar constructors of run-time Python scalars (`np.int64(i)` of a loop's index,
`np.float32(k)` of an unspecialized int input): `numpy_scalar` nodes with NumPy's dtypes
and errors, an integer one indexing as its int; of values known now, NumPy runs now."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    ArrayMeta,
    ScalarMeta,
    capture_function,
    compile_function,
    config,
    explain,
    get_op,
    reset,
)
from numpile_guards import cache_for

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


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


# -- NumPy scalar arguments follow automatic dynamic (issue 23/28) ---------------------------

DT = np.float64(0.5)


def _step(x: Any, dt: Any) -> Any:
    return x + dt * x


def _step_global(x: Any) -> Any:
    return x + DT * x


def _entries(fn: Callable[..., Any]) -> list[Any]:
    return list(cache_for(fn.__code__).entries)


def _guards_on(fn: Callable[..., Any], name: str) -> list[list[str]]:
    return sorted(
        [str(g) for g in entry.metadata["guards"] if name in str(g)] for entry in _entries(fn)
    )


@pytest.mark.parametrize("kind", [np.float64, np.float32, np.int64, np.uint8])
def test_a_changing_numpy_scalar_becomes_an_input_guarded_by_type(kind: type) -> None:
    compiled = compile_function(_step, backend="eager")
    x = np.arange(4.0, dtype=np.float32)
    for value in (1, 2, 3, 4, 5):
        got, want = compiled(x, kind(value)), _step(x, kind(value))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    first, then = _guards_on(_step, "dt")
    assert first == [f"EQUALS_MATCH(L['dt'], {kind(1)!r})"]
    assert then == [f"TYPE_MATCH(L['dt'], class {kind.__name__})"]
    assert len(_entries(_step)) == 2


def test_dynamic_true_takes_it_at_once_false_and_specialize_float_never() -> None:
    x = np.ones(3)
    compiled = compile_function(_step, backend="eager", dynamic=True)
    for value in (0.5, 0.25, 0.125):
        compiled(x, np.float64(value))
    assert len(_entries(_step)) == 1
    reset()
    static = compile_function(_step, backend="eager", dynamic=False)
    for value in (0.5, 0.25, 0.125):
        np.testing.assert_array_equal(static(x, np.float64(value)), _step(x, np.float64(value)))
    assert len(_entries(_step)) == 3
    reset()
    with config.patch(specialize_float=True):
        auto = compile_function(_step, backend="eager")
        for value in (0.5, 0.25, 0.125):
            auto(x, np.float32(value))
    assert len(_entries(_step)) == 3


def test_bools_and_complex_stay_specialized_as_pythons_do() -> None:
    compiled = compile_function(_step, backend="eager")
    x = np.ones(3)
    for value in (np.True_, np.False_, np.complex128(1j), np.complex128(2j)):
        np.testing.assert_array_equal(compiled(x, value), _step(x, value))
    assert len(_entries(_step)) == 4


def test_a_global_numpy_scalar_follows_the_same_path() -> None:
    global DT
    compiled = compile_function(_step_global, backend="eager")
    x = np.ones(3, dtype=np.float32)
    try:
        for value in (0.5, 0.25, 0.125):
            DT = np.float64(value)
            got = compiled(x)
            assert got.dtype == np.float64  # NEP 50: a float64 scalar is a strong operand
            np.testing.assert_array_equal(got, _step_global(x))
    finally:
        DT = np.float64(0.5)
    assert len(_entries(_step_global)) == 2


def test_type_and_isinstance_of_a_numpy_scalar_input_answer_as_eager() -> None:
    def f(x: Any, s: Any) -> Any:
        return x.astype(type(s)), isinstance(s, np.floating), isinstance(s, np.ndarray)

    compiled = compile_function(f, backend="eager", dynamic=True)
    x = np.arange(3.0)
    got, want = compiled(x, np.float32(2)), f(x, np.float32(2))
    assert got[0].dtype == want[0].dtype == np.float32
    assert got[1:] == want[1:] == (True, False)
    text = str(_entries(f)[0].metadata["graph"])
    assert "s: float32[]" in text and "carried_scalar(s)" in text
