"""Kernel shapes for speed: row groups, vector lanes for max/min, column-blocked sums.

Each test checks values against NumPy (exactly where the order of operations
is NumPy's) and the schedule shape that makes the kernel fast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import compile_graph, lower_graph, schedule
from numpile_inductor.codegen.c.kernel import kernel_source

_RNG = np.random.default_rng(7)


def _compile(inputs: list[np.ndarray], build: Any) -> tuple[Any, Any, Any]:
    # (schedule, compiled result, NumPy's result); the schedule is rebuilt here because a
    # graph-cache hit skips lowering.
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    compiled = compile_graph(graph)
    assert list(compiled.extern_ops) in ([], ["matmul"])
    with np.errstate(all="ignore"):
        return schedule(lower_graph(graph)), compiled.fn(*inputs), run_graph(graph, inputs)


def _op(g: Graph, name: str, *args: Any, **kwargs: Any) -> Any:
    return g.call(get_op(name), *args, **kwargs)


def _softmax(g: Graph, x: Any) -> Any:
    peak = _op(g, "max", x, axis=(1,), keepdims=True)
    e = _op(g, "exp", _op(g, "subtract", x, peak))
    return _op(g, "divide", e, _op(g, "sum", e, axis=(1,), keepdims=True))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
def test_max_min_lanes_match_numpy_exactly_with_nans_and_tails(dtype: str) -> None:
    # 8 lanes plus a tail: NaNs in a lane, in the tail, at the first and last element.
    x = (_RNG.normal(size=(7, 203)) * 50).astype(dtype)
    if dtype.startswith("float"):
        x[1, 5] = np.nan
        x[2, 202] = np.nan
        x[3, 0] = np.nan
        x[4, 130] = -np.inf
        x[5, :] = -np.inf
        x[6, 17] = np.inf

    def build(g: Graph, a: Any) -> Any:
        return (
            _op(g, "max", a, axis=(1,)),
            _op(g, "min", a, axis=(1,)),
            _op(g, "max", a),
            _op(g, "min", a, axis=(0,)),
        )

    _, got, want = _compile([x], build)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.shape(g) == np.shape(w)
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("shape", [(64, 40), (33, 1000), (300, 7), (3, 5000)])
def test_axis0_sums_add_rows_in_numpys_order(shape: tuple[int, int]) -> None:
    # Column blocks per thread keep each column's sum in row order: bit-identical.
    x = _RNG.normal(size=shape)
    y = x.astype(np.float32)

    def build(g: Graph, a: Any, b: Any) -> Any:
        return _op(g, "sum", a, axis=(0,)), _op(g, "sum", b, axis=(0,)), _op(g, "mean", a, axis=0)

    _, got, want = _compile([x, y], build)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_axis0_sums_of_strided_and_3d_inputs() -> None:
    x = _RNG.normal(size=(40, 6, 50))
    view = x[::-2, :, 1::3]

    def build(g: Graph, a: Any) -> Any:
        return _op(g, "sum", a, axis=(0,)), _op(g, "sum", a, axis=(0, 1)), _op(g, "max", a, axis=0)

    _, got, want = _compile([view], build)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_is_one_row_group_with_scratch_rows(dtype: str) -> None:
    x = (_RNG.normal(size=(37, 300)) * 4).astype(dtype)
    x[3, 7] = np.nan
    sched, got, want = _compile([x], _softmax)
    assert len(sched.kernels) == 1
    (kernel,) = sched.kernels
    assert [part.is_reduction for part in kernel.parts] == [True, False, True, False]
    assert kernel.ranges == (37,)
    assert sorted(kernel.scratch) == ["v0", "v2", "v3"]
    assert "rows over [37]" in str(sched)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps * 10)
    assert np.isnan(got[3]).all() and not np.isnan(np.delete(got, 3, axis=0)).any()


def test_layernorm_is_one_kernel_and_matches_numpy() -> None:
    x = _RNG.normal(size=(20, 256)).astype(np.float32)
    gamma = _RNG.normal(size=256).astype(np.float32)
    beta = _RNG.normal(size=256).astype(np.float32)

    def build(g: Graph, a: Any, w: Any, b: Any) -> Any:
        mean = _op(g, "mean", a, axis=1, keepdims=True)
        centered = _op(g, "subtract", a, mean)
        var = _op(g, "mean", _op(g, "multiply", centered, centered), axis=1, keepdims=True)
        scale = _op(g, "sqrt", _op(g, "add", var, 1e-5))
        return _op(g, "add", _op(g, "multiply", _op(g, "divide", centered, scale), w), b)

    sched, got, want = _compile([x, gamma, beta], build)
    assert len(sched.kernels) == 1
    # 256 per row is two 128-blocks: the row sums are NumPy's pairwise sums exactly.
    np.testing.assert_array_equal(got, want)


def test_rows_of_three_dim_arrays_and_non_contiguous_inputs() -> None:
    x = _RNG.normal(size=(4, 6, 90))[:, ::-1, ::2]
    sched, got, want = _compile([x], lambda g, a: _softmax3(g, a))
    assert len(sched.kernels) == 1
    assert sched.kernels[0].ranges == (4, 6)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def _softmax3(g: Graph, x: Any) -> Any:
    peak = _op(g, "max", x, axis=(2,), keepdims=True)
    e = _op(g, "exp", _op(g, "subtract", x, peak))
    return _op(g, "divide", e, _op(g, "sum", e, axis=(2,), keepdims=True))


def test_reads_of_other_rows_keep_kernels_apart() -> None:
    # x - rowmax[::-1]: row i needs row n-1-i's max, which a row group has not computed.
    x = _RNG.normal(size=(9, 50))

    def build(g: Graph, a: Any) -> Any:
        peak = _op(g, "max", a, axis=(1,), keepdims=True)
        flipped = g.call(get_op("getitem"), peak, index=(slice(None, None, -1),))
        return _op(g, "subtract", a, flipped)

    sched, got, want = _compile([x], build)
    assert all(not kernel.parts for kernel in sched.kernels)
    np.testing.assert_array_equal(got, want)


def test_row_reductions_that_are_outputs_stay_arrays() -> None:
    x = _RNG.normal(size=(16, 64))

    def build(g: Graph, a: Any) -> Any:
        total = _op(g, "sum", a, axis=(1,), keepdims=True)
        return total, _op(g, "divide", a, total)

    sched, got, want = _compile([x], build)
    (kernel,) = sched.kernels
    assert kernel.scratch == frozenset()
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_matmul_epilogue_reads_the_extern_result_contiguously() -> None:
    x = _RNG.normal(size=(16, 32)).astype(np.float32)
    w = _RNG.normal(size=(32, 24)).astype(np.float32)
    b = _RNG.normal(size=24).astype(np.float32)

    def build(g: Graph, a: Any, m: Any, v: Any) -> Any:
        return _op(g, "maximum", _op(g, "add", _op(g, "matmul", a, m), v), 0.0)

    sched, got, want = _compile([x, w, b], build)
    (kernel,) = sched.kernels
    source = kernel_source(kernel, sched.program.buffers, parallel_threshold=1)
    assert "v0_s1 == 1" in source  # the fast copy assumes a C-contiguous matmul result
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [3, 8, 21])
def test_signed_zeros_in_maximum_minimum_and_their_reductions(n: int) -> None:
    # NumPy's maximum(a, b) returns b on ties: maximum(-0.0, 0.0) is 0.0.
    x = np.array([-0.0, 0.0] * n)
    y = np.array([0.0, -0.0] * n)

    def build(g: Graph, a: Any, b: Any) -> Any:
        return (
            _op(g, "maximum", a, b),
            _op(g, "minimum", a, b),
            _op(g, "maximum", a, 0.0),
            _op(g, "max", a),
            _op(g, "max", b),
            _op(g, "min", a),
            _op(g, "min", b),
        )

    _, got, want = _compile([x, y], build)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_relu_backward_after_matmul_vectorizes_and_sums_rows_in_order() -> None:
    # The shape of an MLP's backward: selects on a matmul result, stored as several
    # outputs, then summed over axis 0. Without aliasing the pointwise loop is marked
    # independent (GCC keeps selects as branches otherwise), and the axis-0 sum of the
    # extern and kernel results walks rows in order, bit-identical to NumPy's.
    x = _RNG.normal(size=(300, 32)).astype(np.float32)
    w = _RNG.normal(size=(32, 48)).astype(np.float32)
    pre = _RNG.normal(size=(300, 48)).astype(np.float32)

    def build(g: Graph, a: Any, m: Any, p: Any) -> Any:
        grad = _op(g, "matmul", a, m)
        relu = _op(g, "maximum", p, 0.0)
        half = _op(g, "where", _op(g, "equal", 0.0, relu), _op(g, "multiply", grad, 0.5), grad)
        masked = _op(g, "where", _op(g, "equal", p, relu), half, 0.0)
        return relu, masked, _op(g, "sum", masked, axis=(0,))

    sched, got, want = _compile([x, w, pre], build)
    sources = [kernel_source(k, sched.program.buffers, parallel_threshold=1) for k in sched.kernels]
    pointwise = [s for s, k in zip(sources, sched.kernels, strict=True) if not k.is_reduction]
    reduction = [s for s, k in zip(sources, sched.kernels, strict=True) if k.is_reduction]
    assert pointwise and all("#pragma GCC ivdep" in s for s in pointwise)
    assert reduction and all("int64_t cb =" in s for s in reduction)  # row-order nest
    for g, w_ in zip(got, want, strict=True):
        assert g.dtype == w_.dtype
        np.testing.assert_array_equal(g, w_)
