"""Graphs with in-place updates: functionalized, fused, and with NumPy's effects and aliasing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph

RNG = np.random.default_rng(0)


def _compiled(fn: Callable[..., Any], *args: Any) -> Any:
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    return compile_graph(capture_function(fn, tuple(copies), {}).graph)


def _scale_then_sin(x: Any, y: Any) -> Any:
    x *= y
    x += 1.0
    return np.sin(x) + y


def _return_nothing(x: Any, y: Any) -> Any:
    x *= y
    np.add(y, 1.0, out=y)


def _out_into_input(x: Any, y: Any) -> Any:
    r = np.add(x, y, out=x)
    return r is x


def _write_through_view(x: Any, y: Any) -> Any:
    x[1:] += y[1:]
    return x[::2], x.sum()


def _int_inplace_add(x: Any, y: Any) -> Any:
    x += y * 3
    return x


def test_inplace_updates_fuse_into_one_kernel() -> None:
    x, y = RNG.random(100), RNG.random(100)
    compiled = _compiled(_scale_then_sin, x, y)
    assert compiled.functional
    assert compiled.kernel_count == 1
    assert compiled.extern_ops == []


@pytest.mark.parametrize(
    "fn", [_scale_then_sin, _return_nothing, _out_into_input, _write_through_view]
)
def test_inplace_effects_and_values_match_numpy(fn: Callable[..., Any]) -> None:
    x, y = RNG.random((6, 5)), RNG.random((6, 5))
    compiled = _compiled(fn, x, y)
    x_eager, y_eager = x.copy(), y.copy()
    expected = fn(x_eager, y_eager)
    x_got, y_got = x.copy(), y.copy()
    got = compiled.fn(x_got, y_got)
    np.testing.assert_allclose(x_got, x_eager, rtol=0, atol=0)
    np.testing.assert_allclose(y_got, y_eager, rtol=0, atol=0)
    if expected is None or isinstance(expected, bool):
        assert got == expected
    elif isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=4e-15)
    else:
        np.testing.assert_allclose(got, expected, rtol=4e-15)


def test_output_view_of_mutated_input_aliases_it() -> None:
    x, y = RNG.random((6, 5)), RNG.random((6, 5))
    compiled = _compiled(_write_through_view, x, y)
    view, total = compiled.fn(x, y)
    assert np.shares_memory(view, x)
    assert view.base is x or view.base is x.base
    x[0, 0] = 123.0
    assert view[0, 0] == 123.0
    assert isinstance(total, np.float64)


def test_integer_inplace_keeps_input_dtype() -> None:
    x = np.arange(10, dtype=np.int32)
    y = np.arange(10, dtype=np.int32)
    compiled = _compiled(_int_inplace_add, x, y)
    expected_x = x.copy()
    expected = _int_inplace_add(expected_x, y)
    got = compiled.fn(x, y)
    assert got is x
    assert x.dtype == np.int32
    np.testing.assert_array_equal(x, expected_x)
    np.testing.assert_array_equal(got, expected)


def test_overlapping_inputs_take_the_barrier_path() -> None:
    x, y = RNG.random(50), RNG.random(50)
    compiled = _compiled(_scale_then_sin, x, y)
    a = RNG.random(50)
    b = a.copy()
    expected = _scale_then_sin(a, a)
    got = compiled.fn(b, b)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(got, expected, rtol=4e-15)
    # a view of the mutated input passed as the other input
    a = RNG.random(50)
    b = a.copy()
    expected = _scale_then_sin(a[:], a[::-1])
    got = compiled.fn(b[:], b[::-1])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(got, expected, rtol=4e-15)
