"""Products through BLAS from the generated C (codegen/c/blas.py), against NumPy."""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph

_RNG = np.random.default_rng(24)

needs_blas = pytest.mark.skipif(
    rt.find_cpu_blas() is None, reason="no ILP64 CBLAS in the BLAS NumPy loaded"
)


def _normal(*shape: int, dtype: Any = np.float64) -> np.ndarray:
    return _RNG.standard_normal(shape).astype(dtype)


def _product_graph(a: np.ndarray, b: np.ndarray, op: str = "matmul") -> Graph:
    graph = Graph()
    pa = graph.placeholder("a", meta_of(a))
    pb = graph.placeholder("b", meta_of(b))
    graph.output = graph.call(get_op(op), pa, pb)
    return graph


# Built modules by (op, operand dtypes and shapes): strides are run-time values, so the
# cases of one shape share a module (each C build costs about a second).
_MODULES: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def _compiled(a: np.ndarray, b: np.ndarray, op: str = "matmul") -> tuple[Any, Any]:
    # The graph's compile, and its module with extern callables that fail: a call that
    # returns ran its products in C, not through NumPy.
    key = (op, a.dtype, a.shape, b.dtype, b.shape)
    if key not in _MODULES:
        compiled = compile_graph(_product_graph(a, b, op), options={"graph_cache": False})
        generated = compiled.generated
        assert generated is not None
        module = rt.build_extension(generated.source, module_name=generated.module_name)

        def numpy_was_called(*args: Any) -> Any:
            raise AssertionError("the product ran through NumPy")

        module.set_externs(tuple(numpy_was_called for _ in generated.externs))
        _MODULES[key] = (compiled, module)
    return _MODULES[key]


def _assert_matches(got: Any, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    rtol = 1e-12 if want.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def _with_transpose(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (x, x.T)


# (name, operands): transposed and sliced operands, the 1-D rules, broadcast batches.
BLAS_CASES: list[tuple[str, Callable[[], tuple[np.ndarray, np.ndarray]]]] = [
    ("gemm", lambda: (_normal(5, 7), _normal(7, 3))),
    ("gemm A.T", lambda: (_normal(7, 5).T, _normal(7, 3))),
    ("gemm B.T", lambda: (_normal(5, 7), _normal(3, 7).T)),
    ("gemm both transposed", lambda: (_normal(7, 5).T, _normal(3, 7).T)),
    ("gemm row slice", lambda: (_normal(10, 7)[::2], _normal(7, 3))),
    ("gemm column slice", lambda: (_normal(5, 9)[:, 1:8], _normal(7, 6)[:, :3])),
    ("gemm transposed slice", lambda: (_normal(9, 6)[1:8, 1:].T, _normal(7, 3))),
    ("gemv", lambda: (_normal(5, 7), _normal(7))),
    ("gemv A.T", lambda: (_normal(7, 5).T, _normal(7))),
    ("gemv strided vector", lambda: (_normal(5, 7), _normal(21)[::3])),
    ("vector @ matrix", lambda: (_normal(7), _normal(7, 3))),
    ("vector @ matrix.T", lambda: (_normal(7), _normal(3, 7).T)),
    ("one row", lambda: (_normal(1, 7), _normal(7, 3))),
    ("x @ x.T (syrk)", lambda: _with_transpose(_normal(5, 7))),
    ("x.T @ x (syrk)", lambda: _with_transpose(_normal(7, 5))[::-1]),
    ("x @ x.T of a slice (syrk)", lambda: _with_transpose(_normal(6, 9)[1:, 2:])),
    ("x @ y.T (gemm)", lambda: (_normal(5, 7), _normal(5, 7).T)),
    ("batched", lambda: (_normal(3, 5, 7), _normal(3, 7, 3))),
    ("batched transposed", lambda: (_normal(3, 7, 5).transpose(0, 2, 1), _normal(3, 7, 3))),
    ("batched broadcast", lambda: (_normal(2, 1, 5, 7), _normal(4, 7, 3))),
    ("batched @ matrix", lambda: (_normal(3, 5, 7), _normal(7, 3))),
    ("vector @ batched", lambda: (_normal(7), _normal(3, 7, 3))),
    ("float32", lambda: (_normal(5, 7, dtype=np.float32), _normal(7, 3, dtype=np.float32))),
    ("float32 gemv", lambda: (_normal(5, 7, dtype=np.float32), _normal(7, dtype=np.float32))),
]


@needs_blas
@pytest.mark.parametrize("make", [case[1] for case in BLAS_CASES], ids=[c[0] for c in BLAS_CASES])
def test_products_run_in_blas_and_match_numpy(make: Callable[[], tuple[Any, Any]]) -> None:
    a, b = make()
    _, module = _compiled(a, b)
    for _ in range(2):
        _assert_matches(module.call(a, b), np.matmul(a, b))


@needs_blas
@pytest.mark.parametrize(
    "make",
    [
        lambda: (_normal(5, 7), _normal(7, 3)),
        lambda: (_normal(5, 7), _normal(7)),
    ],
    ids=["gemm", "gemv"],
)
def test_dot_of_matrices_and_vectors_runs_in_blas(make: Callable[[], tuple[Any, Any]]) -> None:
    a, b = make()
    _, module = _compiled(a, b, "dot")
    _assert_matches(module.call(a, b), np.dot(a, b))


# Operands BLAS cannot read in place: NumPy runs these products (its result, its rules).
NUMPY_CASES: list[tuple[str, Callable[[], tuple[np.ndarray, np.ndarray]]]] = [
    ("reversed rows", lambda: (_normal(5, 7)[::-1], _normal(7, 3))),
    ("strided rows and columns", lambda: (_normal(10, 14)[::2, ::2], _normal(7, 3))),
    ("transposed with a column step", lambda: (_normal(7, 10)[:, ::2].T, _normal(7, 3))),
    ("empty inner dim", lambda: (_normal(5, 0), _normal(0, 3))),
    ("negative vector stride", lambda: (_normal(5, 7), _normal(7)[::-1])),
]


@needs_blas
@pytest.mark.parametrize("make", [c[1] for c in NUMPY_CASES], ids=[c[0] for c in NUMPY_CASES])
def test_layouts_blas_cannot_read_run_through_numpy(make: Callable[[], tuple[Any, Any]]) -> None:
    a, b = make()
    compiled, module = _compiled(a, b)
    _assert_matches(compiled.fn(a, b), a @ b)
    with pytest.raises(AssertionError, match="through NumPy"):
        module.call(a, b)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.complex128])
def test_integer_bool_and_complex_products_stay_numpy_calls(dtype: Any) -> None:
    if dtype == np.complex128:
        a = (_normal(5, 7) + 1j * _normal(5, 7)).astype(dtype)
        b = (_normal(7, 3) - 1j * _normal(7, 3)).astype(dtype)
    else:
        a = _RNG.integers(0, 200, (5, 7)).astype(dtype)
        b = _RNG.integers(0, 200, (7, 3)).astype(dtype)
    if dtype == np.int64:
        a[0, 0] = np.iinfo(np.int64).max  # wraps around exactly as NumPy's loop does
    compiled, _ = _compiled(a, b)
    assert "np_blas_matmul(" not in compiled.source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = a @ b
    got = compiled.fn(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_mixed_dtypes_stay_numpy_calls() -> None:
    a, b = _normal(5, 7, dtype=np.float32), _normal(7, 3)
    compiled, _ = _compiled(a, b)
    assert "np_blas_matmul(" not in compiled.source
    _assert_matches(compiled.fn(a, b), a @ b)


def test_blas_option_off_leaves_products_to_numpy() -> None:
    a, b = _normal(5, 7), _normal(7, 3)
    on, _ = _compiled(a, b)
    off = compile_graph(_product_graph(a, b), options={"graph_cache": False, "cpp.blas": False})
    assert "np_blas_matmul(" in on.source
    assert "np_blas_matmul(" not in off.source
    np.testing.assert_array_equal(off.fn(a, b), a @ b)


@needs_blas
def test_bias_and_activation_run_in_place_on_the_blas_output() -> None:
    x, w, b = _normal(16, 32), _normal(32, 24), _normal(24)
    graph = Graph()
    px, pw, pb = (graph.placeholder(n, meta_of(v)) for n, v in (("x", x), ("w", w), ("b", b)))
    product = graph.call(get_op("matmul"), px, pw)
    scaled = graph.call(get_op("multiply"), graph.call(get_op("add"), product, pb), 0.5)
    graph.output = graph.call(get_op("tanh"), scaled)
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert compiled.kernel_count == 1
    assert "written in place" in compiled.source
    assert "np_blas_matmul(" in compiled.source
    for _ in range(3):
        got = compiled.fn(x, w, b)
        _assert_matches(got, np.tanh((x @ w + b) * 0.5))
        assert got.flags.owndata and got.flags.c_contiguous


@needs_blas
def test_product_chain_reads_its_own_intermediate() -> None:
    a, x = _normal(40, 40), _normal(40)
    graph = Graph()
    pa, px = graph.placeholder("a", meta_of(a)), graph.placeholder("x", meta_of(x))
    y = graph.call(get_op("matmul"), pa, px)
    graph.output = graph.call(get_op("matmul"), graph.call(get_op("multiply"), y, 2.0), pa)
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert compiled.source.count("np_blas_matmul(") == 3  # the helper and two calls
    _assert_matches(compiled.fn(a, x), ((a @ x) * 2.0) @ a)


def test_overflow_in_a_product_warns_as_numpy_does() -> None:
    a = np.array([[1e308, 1e308], [1.0, 1.0]])
    b = np.array([[10.0, 1.0], [10.0, 1.0]])
    compiled = compile_graph(_product_graph(a, b), options={"graph_cache": False})
    with pytest.warns(RuntimeWarning, match="overflow encountered in matmul"):
        got = compiled.fn(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(got, a @ b)


def test_nan_and_inf_propagate_as_in_numpy() -> None:
    a, b = _normal(5, 7), _normal(7, 3)
    a[1, 2] = np.nan
    b[3, 0] = np.inf
    compiled, _ = _compiled(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(np.isnan(compiled.fn(a, b)), np.isnan(a @ b))
        np.testing.assert_array_equal(np.isinf(compiled.fn(a, b)), np.isinf(a @ b))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_dot_product_of_vectors_is_one_fused_reduction(dtype: Any) -> None:
    x, y = _normal(300, dtype=dtype), _normal(300, dtype=dtype)
    graph = Graph()
    px, py = graph.placeholder("x", meta_of(x)), graph.placeholder("y", meta_of(y))
    dot = graph.call(get_op("matmul"), px, py)
    graph.output = (dot, graph.call(get_op("multiply"), px, dot))
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert compiled.extern_ops == []
    assert "sum(multiply(x[r0], y[r0]))" in str(compiled.schedule)
    got_dot, got_scaled = compiled.fn(x, y)
    assert type(got_dot) is type(x @ y)  # a NumPy scalar, as eager gives
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got_dot, x @ y, rtol=rtol)
    np.testing.assert_allclose(got_scaled, x * (x @ y), rtol=rtol)


def test_a_dot_product_of_integer_vectors_stays_exact() -> None:
    x = np.array([2**62, 2**62, 3], dtype=np.int64)
    y = np.array([2, 2, 1], dtype=np.int64)
    compiled = compile_graph(_product_graph(x, y), options={"graph_cache": False})
    assert compiled.fn(x, y) == x @ y  # wraps around as NumPy's integer loop does


def _openblas_threads() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    # OpenBLAS's own get/set of its thread count, where NumPy's BLAS is OpenBLAS.
    blas = rt.find_cpu_blas()
    if blas is None or not all(blas.thread_addresses()):
        return None
    setter, getter = blas.thread_addresses()
    get = ctypes.CFUNCTYPE(ctypes.c_int)(getter)
    put = ctypes.CFUNCTYPE(None, ctypes.c_int)(setter)
    return get, put


@pytest.mark.parametrize("pinned", [1, 0], ids=["cpp.threads=1", "by idle cores"])
def test_lapack_calls_run_on_the_blas_threads_the_call_chose(pinned: int) -> None:
    # The module sets OpenBLAS's thread count around a LAPACK extern (as around its own
    # BLAS products): cpp.threads=1 pins one thread, and the count is given back after.
    threads = _openblas_threads()
    if threads is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS with a thread-count setter")
    get, put = threads
    before = get()
    put(2)
    try:
        a, b = _normal(6, 6) + 6 * np.eye(6), _normal(6)
        graph = Graph()
        pa, pb = graph.placeholder("a", meta_of(a)), graph.placeholder("b", meta_of(b))
        graph.output = graph.call(get_op("solve"), pa, pb)
        options = {"graph_cache": False, "cpp.threads": pinned}
        compiled = compile_graph(graph, options=options)
        generated = compiled.generated
        assert generated is not None
        assert "np_blas_threads_enter(" in generated.source
        module = rt.build_extension(generated.source, module_name=generated.module_name)
        seen: list[int] = []

        def solve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            seen.append(get())
            return np.linalg.solve(x, y)

        module.set_externs((solve,))
        _assert_matches(module.call(a, b), np.linalg.solve(a, b))
        assert get() == 2  # given back
        if pinned:
            assert seen == [1]
        else:
            assert 1 <= seen[0] <= 2
    finally:
        put(before)


@needs_blas
@pytest.mark.parametrize(
    "make",
    [
        lambda: (_normal(4, 64, 64), _normal(64, 48)),
        lambda: (_normal(2, 3, 64, 64), _normal(64)),
        lambda: (_normal(4, 70, 64)[:, :64], _normal(64, 48)),
        lambda: (_normal(64, 4, 64).transpose(1, 0, 2), _normal(64, 48)),
    ],
    ids=["stack @ matrix", "stack @ vector", "rows sliced", "batch dim not outermost"],
)
def test_a_stack_of_matrices_times_one_matrix_is_one_product(
    make: Callable[[], tuple[Any, Any]],
) -> None:
    # A stack laid out as one tall matrix runs as one gemm/gemv of all its rows; others
    # one per matrix: the same values either way.
    a, b = make()
    _, module = _compiled(a, b)
    _assert_matches(module.call(a, b), np.matmul(a, b))
