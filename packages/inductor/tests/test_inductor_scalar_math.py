"""NumPy's scalar math on integer NumPy scalars: the kernels raise the overflow flag where
NumPy's scalar math warns, so a compiled call warns, ignores and raises as eager does;
integer array ops wrap silently, as NumPy's ufunc loops do.

One graph holds every case (five dtypes, seven ops each): a single C build.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_capture.dynamic_shapes import DynamicPolicy, capturing_with
from numpile_inductor import CompiledGraph, compile_graph

_DTYPES = [np.dtype(name) for name in ("int8", "int32", "int64", "uint8", "uint64")]
# NumPy scalars are graph inputs (as a resume function's locals in a loop are), shapes static.
_SCALAR_INPUTS = DynamicPolicy(None, loop_locals=True)


def _ops(a: Any, b: Any) -> tuple[Any, ...]:
    return a + b, a - b, a * b, -a, abs(a), a // b, a % b


def _five(*pairs: Any) -> tuple[Any, ...]:
    a0, b0, a1, b1, a2, b2, a3, b3, a4, b4 = pairs
    return _ops(a0, b0) + _ops(a1, b1) + _ops(a2, b2) + _ops(a3, b3) + _ops(a4, b4)


def _inputs(dtype: np.dtype[Any], a: int, b: int) -> list[Any]:
    # The pair (a, b) of `dtype`, and benign pairs of the others.
    values: list[Any] = []
    for other in _DTYPES:
        pair = (a, b) if other == dtype else (3, 5)
        values += [other.type(pair[0]), other.type(pair[1])]
    return values


def _cases(dtype: np.dtype[Any]) -> list[tuple[int, int]]:
    info = np.iinfo(dtype)
    if dtype.kind == "u":
        # max + 2 and max * 2 overflow, 0 - 1 and -1 too, a // 0 and a % 0 divide by zero.
        return [(int(info.max), 2), (0, 1), (1, 0), (3, 5)]
    # min - -1 fits but min * -1, -min, abs(min) and min // -1 overflow.
    return [(int(info.max), 2), (int(info.min), -1), (int(info.min), 0), (3, 5)]


@pytest.fixture(scope="module")
def compiled() -> CompiledGraph:
    with capturing_with(_SCALAR_INPUTS):
        graph = capture_function(_five, tuple(_inputs(_DTYPES[0], 3, 5)), {}).graph
    return compile_graph(graph, options={"graph_cache": False})


def _recorded(fn: Callable[..., Any], values: list[Any]) -> tuple[Any, list[tuple[str, type]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*values)
    return result, [(str(w.message), w.category) for w in caught]


def _assert_same(got: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    assert [type(v) for v in got] == [type(v) for v in expected]
    assert [v.item() for v in got] == [v.item() for v in expected]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_integer_scalar_math_warns_as_eager(
    compiled: CompiledGraph, numpy_reruns: list[int], dtype: np.dtype[Any]
) -> None:
    for a, b in _cases(dtype):
        values = _inputs(dtype, a, b)
        expected, eager_warnings = _recorded(_five, values)
        numpy_reruns.clear()
        got, compiled_warnings = _recorded(compiled.fn, values)
        _assert_same(got, expected)
        assert compiled_warnings == eager_warnings, (dtype, a, b)
        # Only a call whose kernels raised a flag runs the graph again with NumPy.
        assert len(numpy_reruns) == (1 if eager_warnings else 0), (dtype, a, b)


def test_overflow_is_ignored_and_raised_as_np_errstate_says(compiled: CompiledGraph) -> None:
    values = _inputs(np.dtype("int64"), 2**62, 4)
    expected, _ = _recorded(_five, values)
    with np.errstate(over="ignore"):
        got, caught = _recorded(compiled.fn, values)
    _assert_same(got, expected)
    assert caught == []
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError) as eager_error:
            _five(*values)
        with pytest.raises(FloatingPointError) as compiled_error:
            compiled.fn(*values)
    assert str(compiled_error.value) == str(eager_error.value)
    assert str(eager_error.value) == "overflow encountered in scalar multiply"


def test_only_ops_on_numpy_scalars_check_for_overflow(compiled: CompiledGraph) -> None:
    assert "scalar_multiply(" in str(compiled.schedule)

    def scale(x: Any, k: Any) -> Any:
        return x * k, x - k

    x = np.array([2**62, 3], dtype=np.int64)
    with capturing_with(_SCALAR_INPUTS):
        graph = capture_function(scale, (x, np.int64(4)), {}).graph
    array_ops = compile_graph(graph, options={"graph_cache": False})
    assert "scalar_" not in str(array_ops.schedule)
    for k in (np.int64(4), np.int64(-(2**63))):
        expected, eager_warnings = _recorded(scale, [x, k])
        got, caught = _recorded(array_ops.fn, [x, k])
        assert eager_warnings == caught == []  # integer arrays wrap silently
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g, e)
