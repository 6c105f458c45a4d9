"""The tracer on NumPy features beyond plain calls: out= targets, ufunc methods, `.flags`,
dtype predicates and shape helpers folded at capture time, and calls whose result is the
input itself (ascontiguousarray, astype(copy=False)) or a new view of it (`.view()`).

Each function is captured, its graph run on copies of the inputs, and compared with
NumPy itself: values, dtypes, in-place effects and which results alias which inputs.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import numpy as np
import pytest

from numpile_capture import CaptureResult, Unsupported, run_graph
from numpile_capture.tracer import capture_function


def _run(fn: Any, args: tuple[Any, ...]) -> tuple[CaptureResult, Any, tuple[Any, ...]]:
    graph_args = copy.deepcopy(args)
    result = capture_function(fn, graph_args, {})
    bound = inspect.signature(fn).bind(*graph_args)
    inputs = [s.get(dict(bound.arguments), fn.__globals__, fn) for s in result.input_sources]
    return result, run_graph(result.graph, inputs), graph_args


def _leaves(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple | list) else [value]


def _same(got: Any, expected: Any) -> None:
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, np.ndarray | np.generic):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    elif isinstance(expected, tuple | list):
        for g, e in zip(got, expected, strict=True):
            _same(g, e)
    else:
        assert got == expected


def _aliasing(outputs: Any, args: tuple[Any, ...]) -> list[tuple[int, int, bool]]:
    # (output, input, is-the-same-object) for every output sharing memory with an input.
    return [
        (i, j, out is arg)
        for i, out in enumerate(_leaves(outputs))
        for j, arg in enumerate(args)
        if isinstance(out, np.ndarray)
        and isinstance(arg, np.ndarray)
        and np.shares_memory(out, arg)
    ]


def check(fn: Any, *args: Any) -> CaptureResult:
    """Capture and run `fn`; compare outputs, input effects and aliasing with NumPy."""
    eager_args = copy.deepcopy(args)
    expected = fn(*eager_args)
    result, got, graph_args = _run(fn, args)
    _same(got, expected)
    _same(graph_args, eager_args)
    assert _aliasing(got, graph_args) == _aliasing(expected, eager_args)
    return result


def _ops(result: CaptureResult) -> list[str]:
    return [n.op.name for n in result.graph.nodes if n.op is not None]


RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)
I8 = RNG.integers(-9, 9, (3, 4)).astype(np.int8)


# --- out= ----------------------------------------------------------------------------------


def test_out_into_an_input_returns_that_input() -> None:
    def f(x, y):
        r = np.add(x, y, out=x)
        return r is x, r

    result = check(f, A, V)
    assert _ops(result) == ["add", "copyto"]


def test_out_into_a_local_buffer_and_in_place_chains() -> None:
    def f(x):
        buf = np.empty_like(x)
        np.multiply(x, 3.0, out=buf)
        np.sin(buf, out=buf)
        return buf

    check(f, A)


def test_out_aliasing_an_input_sees_the_inputs_before_the_call() -> None:
    def f(x, y):
        x *= y
        np.add(y, 1.0, out=y)
        np.subtract(x[::-1], x, out=x)

    check(f, A, V)


def test_reduction_out_and_initial() -> None:
    def f(x, acc, small):
        np.sum(x, axis=0, out=acc)
        np.max(x, axis=1, out=small, initial=0)
        return np.sum(x, axis=1, initial=10.0), np.min(x[:0], axis=0, initial=-1.0), acc

    check(f, I8, np.zeros(4, np.float32), np.zeros(3, np.int16))


def test_out_casting_errors_are_numpys() -> None:
    def f(x, out):
        return np.add(x, 0.5, out=out)

    with pytest.raises(TypeError) as captured:
        capture_function(f, (A, np.zeros((3, 4), np.int64)), {})
    with pytest.raises(TypeError) as numpy_error:
        f(A, np.zeros((3, 4), np.int64))
    assert type(captured.value) is type(numpy_error.value)
    assert str(captured.value) == str(numpy_error.value)


# --- ufunc methods and attributes ----------------------------------------------------------


def test_ufunc_methods_and_attributes() -> None:
    def f(a, b):
        outer = np.multiply.outer(b, a)
        total = np.add.reduce(a, axis=1) + np.maximum.reduce(a)[0]
        return outer, total, np.add.accumulate(b), np.multiply.nin, np.add.__name__

    result = check(f, A, V)
    assert "expand_dims" in _ops(result)


def test_ufunc_method_without_a_binding_is_unsupported() -> None:
    def f(a):
        return np.add.reduceat(a, [0])

    with pytest.raises(Unsupported, match="reduceat"):
        capture_function(f, (V.copy(),), {})


# --- capture-time folding ------------------------------------------------------------------


def test_dtype_predicates_and_broadcast_shapes_fold_to_constants() -> None:
    def f(x, y):
        floating = np.issubdtype(x.dtype, np.floating) and np.isdtype(y.dtype, "integral")
        shape = np.broadcast_shapes(x.shape, (1, 4), y.shape[1:])
        return (x * 2 if floating else x), shape

    result = check(f, A, I8)
    assert _ops(result) == ["multiply"]


def test_flags_fold_from_the_layout() -> None:
    def f(x):
        y = x.T.copy()
        flags = y.T.flags
        return flags.c_contiguous, flags.f_contiguous, y.flags["C_CONTIGUOUS"], y.flags.writeable

    result = check(f, A)
    assert result.graph.output[:3] == (False, True, True)
    check(lambda x: (x.flags.c_contiguous, x.flags.f_contiguous, x.flags.fnc), A.T)


def test_writeable_of_an_input_is_unsupported() -> None:
    def f(x):
        return x[1:].flags.writeable

    with pytest.raises(Unsupported, match="writeable"):
        capture_function(f, (A,), {})


# --- identity and views --------------------------------------------------------------------


def test_contiguous_conversions_copy_only_when_numpy_does() -> None:
    def f(x):
        return (
            np.ascontiguousarray(x) is x,
            np.ascontiguousarray(x.T),
            np.asfortranarray(x.T),
            np.ascontiguousarray(x[:, ::2]),
            np.asfortranarray(x),
        )

    result = check(f, A)
    assert _ops(result).count("copy") == 3


def test_view_and_astype_without_copy_alias_like_numpy() -> None:
    def f(x):
        return x.astype(np.float64, copy=False), np.asarray(x), x.view(), x[::2].view(x.dtype)

    result = check(f, A)
    assert _ops(result) == ["alias", "getitem", "alias"]


def test_repeat_tile_and_joins_match_numpy() -> None:
    def f(a, b):
        stacked = np.column_stack([a[:, 0], b[:, 1]])
        return (
            stacked,
            np.dstack([a, b]).shape,
            a.repeat(2, axis=1),
            np.tile(b[0], (2, 1)),
            np.tri(3),
            np.inner(a, a),
            np.vdot(a, b),
            np.ptp(a, axis=1),
            np.count_nonzero(b > 0, axis=0),
        )

    check(f, A, A[::-1] * 2)
