"""Matrix-vector products in loop bodies (codegen/c/loop_products.py): `W @ H[i - 1]` and
`H[i - 1] @ W` in the C loop, with NumPy's values (its bits for floats: the BLAS call or
plain loop NumPy makes) and in-place effects. (A product of other inner sizes is NumPy's
ValueError at capture: integration_tests/test_loops_kept_constructs.py.)"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph


def _compiled(fn: Callable[..., Any], *args: Any) -> Any:
    # The function's graph compiled by the inductor; its C source; a caller taking the
    # function's arguments (the graph takes them in the order it first reads them).
    graph = capture_function(fn, tuple(a.copy() for a in args), {}).graph
    compiled = compile_graph(graph)
    names = list(inspect.signature(fn).parameters)
    order = [names.index(p.name) for p in graph.placeholders]

    def call(*values: Any) -> Any:
        return compiled.fn(*(values[k] for k in order))

    return call, compiled.source


def _check(fn: Callable[..., Any], *args: Any, tol: float = 1e-12) -> str:
    call, source = _compiled(fn, *args)
    ours = [a.copy() for a in args]
    theirs = [a.copy() for a in args]
    got, want = call(*ours), fn(*theirs)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for mine, eager in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, eager, rtol=tol, atol=tol)
    return source


def _rnn(H: Any, W: Any, b: Any) -> Any:
    for i in range(1, H.shape[0]):
        H[i] = np.tanh(W @ H[i - 1] + b)
    return H


def _rows_times_matrix(H: Any, W: Any, b: Any) -> Any:
    for i in range(1, H.shape[0]):
        H[i] = np.maximum(H[i - 1] @ W, 0.0) - b
    return H


def _inputs(steps: int, hidden: int, dtype: Any = np.float64) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(steps * 31 + hidden)
    H = np.zeros((steps, hidden), dtype)
    H[0] = rng.standard_normal(hidden)
    W = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(dtype)
    return H, W, rng.standard_normal(hidden).astype(dtype)


@pytest.mark.parametrize("fn", [_rnn, _rows_times_matrix])
@pytest.mark.parametrize("steps,hidden", [(1, 4), (2, 4), (9, 5), (30, 19)])
def test_products_on_a_shifted_row_run_as_one_c_loop(fn: Any, steps: int, hidden: int) -> None:
    source = _check(fn, *_inputs(steps, hidden))
    assert "static PyObject *loop_" in source
    assert "PyObject_Vectorcall(u_" not in source  # no NumPy ufunc called per iteration


def test_float32_products() -> None:
    _check(_rnn, *_inputs(12, 7, np.float32), tol=1e-5)  # float32 sums in another order


def test_integer_products_are_exact() -> None:
    def f(H: Any, W: Any) -> Any:
        for i in range(1, H.shape[0]):
            H[i] = (W @ H[i - 1]) % 7
        return H

    rng = np.random.default_rng(3)
    H = rng.integers(0, 7, (6, 5))
    W = rng.integers(-3, 4, (5, 5))
    call, _ = _compiled(f, H, W)
    mine = H.copy()
    np.testing.assert_array_equal(call(mine, W), f(H.copy(), W))


def test_a_matrix_that_is_a_view_of_the_rows_written() -> None:
    # W overlaps the rows the loop writes: each row's value is computed whole first, as
    # NumPy computes W @ H[i - 1] before it stores it.
    def f(H: Any) -> Any:
        W = H[:4, :4]
        for i in range(1, H.shape[0]):
            H[i, :4] = W @ H[i - 1, :4] * 0.5
        return H

    H = np.random.default_rng(5).standard_normal((7, 4))
    _check(f, H)


# -- float products have eager's bits: NumPy's own choice of BLAS call or plain loop --------


def _scaled_rnn(H: Any, W: Any, b: Any) -> Any:
    for i in range(1, H.shape[0]):
        H[i] = W @ H[i - 1] * 0.5 + b
    return H


def _scaled_rows_times_matrix(H: Any, W: Any, b: Any) -> Any:
    for i in range(1, H.shape[0]):
        H[i] = np.maximum(H[i - 1] @ W, 0.0) - b
    return H


def _reversed_rows(H: Any, W: Any, b: Any) -> Any:
    # A vector of negative stride: NumPy's plain loop, not gemv.
    for i in range(1, H.shape[0]):
        H[i] = W @ H[i - 1, ::-1] * 0.5 + b
    return H


def _computed_vector(H: Any, W: Any, b: Any) -> Any:
    # A computed vector: NumPy's contiguous temporary.
    for i in range(1, H.shape[0]):
        H[i] = W @ (H[i - 1] * 0.5) + b
    return H


def _layout(W: Any, layout: str) -> Any:
    # C order and F order are gemv's two orders; every other column leaves no unit stride
    # (NumPy's plain loop).
    hidden = W.shape[0]
    if layout == "C":
        return np.ascontiguousarray(W[:, :hidden])
    if layout == "F":
        return np.asfortranarray(W[:, :hidden])
    return W[:, ::2]


@pytest.mark.parametrize("fn", [_scaled_rnn, _scaled_rows_times_matrix, _reversed_rows,
                                _computed_vector])  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_float_products_have_eager_bits(fn: Any, dtype: Any, layout: str) -> None:
    # Sizes 1 and 2 take NumPy's ?dot and plain-loop cases; the larger ones gemv's (or the
    # plain loop, for a layout BLAS cannot take). Eight-lane sums differed in the last bits.
    for hidden in (1, 2, 5, 19, 64, 130):
        rng = np.random.default_rng(hidden)
        H = np.zeros((6, hidden), dtype)
        H[0] = rng.standard_normal(hidden)
        W = _layout((rng.standard_normal((hidden, 2 * hidden)) / np.sqrt(hidden)).astype(dtype),
                    layout)  # fmt: skip
        b = rng.standard_normal(hidden).astype(dtype)
        call, source = _compiled(fn, H, W, b)
        assert "static PyObject *loop_" in source
        got, want = call(H.copy(), W, b), fn(H.copy(), W, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_product_with_a_one_row_matrix_is_a_dot() -> None:
    # (1, n) @ (n,): NumPy's ?dot, not gemv.
    def f(H: Any, W: Any) -> Any:
        for i in range(1, H.shape[0]):
            H[i, :1] = W @ H[i - 1] * 0.25
        return H

    rng = np.random.default_rng(7)
    H, W = rng.standard_normal((5, 300)), rng.standard_normal((1, 300))
    call, _ = _compiled(f, H, W)
    np.testing.assert_array_equal(call(H.copy(), W), f(H.copy(), W))


def test_a_float_product_that_casts_runs_as_eager() -> None:
    # float32 matrix, float64 rows: NumPy casts the matrix first; the loop keeps eager's
    # values by running with NumPy.
    rng = np.random.default_rng(8)
    H = np.zeros((4, 6))
    H[0] = rng.standard_normal(6)
    W = rng.standard_normal((6, 6)).astype(np.float32)
    b = np.zeros(6)
    call, _ = _compiled(_scaled_rnn, H, W, b)
    np.testing.assert_array_equal(call(H.copy(), W, b), _scaled_rnn(H.copy(), W, b))
