"""Reductions: values against run_graph, with the documented summation tolerance.

Float sums use blocked pairwise summation: bit-identical to NumPy when a reduced
run is at most 128 elements (or a power-of-two multiple of 128) and NumPy sums
it in one inner loop; otherwise within rtol = 8 * eps * log2(n) of NumPy's sum.
Integer sums, max, min, any and all are exact.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import compile_graph

_RNG = np.random.default_rng(1)


def _compile(inputs: list[np.ndarray], build: Any) -> tuple[Any, Any, Any]:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    compiled = compile_graph(graph)
    with np.errstate(all="ignore"):
        return compiled, compiled.fn(*inputs), run_graph(graph, inputs)


def _tolerance(dtype: np.dtype[Any], n: int) -> float:
    return 8 * float(np.finfo(dtype).eps) * max(1.0, math.log2(max(n, 2)))


def _compare(got: Any, want: Any, n: int, exact: bool) -> None:
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    if exact or want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=_tolerance(want.dtype, n), atol=1e-300)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_every_reduction_over_every_axis(dtype: str) -> None:
    x = _RNG.normal(size=(5, 6, 7)) * 5
    x = x.astype(dtype)
    ops = ["sum", "prod", "max", "min", "any", "all"]
    if dtype in ("float64", "int32"):
        ops += ["mean", "var", "std"]
    axes_list: list[Any] = [None, (0,), (1,), (2,), (0, 2)]
    # keepdims on two axis choices only: every kernel costs C compile time
    cases = [(op, axes, axes in ((1,), (0, 2))) for op in ops for axes in axes_list]

    def build(g: Graph, a: Any) -> Any:
        return tuple(g.call(get_op(op), a, axis=axes, keepdims=keep) for op, axes, keep in cases)

    compiled, got, want = _compile([x], build)
    for (op, axes, _), g, w in zip(cases, got, want, strict=True):
        n = x.size if axes is None else math.prod(x.shape[a] for a in axes)
        exact = op in ("max", "min", "any", "all") or (op == "sum" and axes in ((2,),))
        _compare(g, w, n, exact)
    assert compiled.extern_ops == []


@pytest.mark.parametrize("n", [7, 100, 128, 256, 1024, 1000, 100_003])
def test_contiguous_sums_match_numpy_pairwise(n: int) -> None:
    x = _RNG.normal(size=n)
    y = x.astype(np.float32)

    def build(g: Graph, a: Any, b: Any) -> Any:
        return g.call(get_op("sum"), a), g.call(get_op("sum"), b), g.call(get_op("mean"), b)

    _, got, want = _compile([x, y], build)
    power_of_two_blocks = n <= 128 or (n % 128 == 0 and (n // 128) & (n // 128 - 1) == 0)
    for g, w in zip(got, want, strict=True):
        _compare(g, w, n, exact=power_of_two_blocks)


def test_sums_over_short_rows_skip_the_blocks_and_match_numpy_bit_for_bit() -> None:
    # Rows shorter than one group of lanes are summed without the blocks' lanes and stack
    # (2-d points' `(d * d).sum(axis=2)`), the same adds in the same order: lengths 1-7
    # take that branch, 8 and 9 the blocks; floats, complex and a mean.
    lengths = (1, 2, 3, 7, 8, 9)
    inputs = [_RNG.normal(size=(40, k)) * 10.0 ** _RNG.uniform(-3, 3, (40, k)) for k in lengths]
    inputs.append(_RNG.normal(size=(40, 3)) + 1j * _RNG.normal(size=(40, 3)))
    inputs.append(_RNG.normal(size=(40, 5)).astype(np.float32))

    def build(g: Graph, *arrays: Any) -> Any:
        sums = tuple(g.call(get_op("sum"), a, axis=(1,)) for a in arrays)
        return (*sums, g.call(get_op("mean"), arrays[2], axis=(1,)))

    compiled, got, want = _compile(inputs, build)
    for g, w in zip(got, want, strict=True):
        _compare(g, w, 9, exact=True)
    short_rows = re.findall(r"if \(\w+ < 8\) \{\n\s+\w+ bs0 = 0;", compiled.source)
    short_inputs = sum(1 for k in lengths if k < 8) + 2  # and the complex and float32 ones
    assert len(short_rows) >= short_inputs, compiled.source


def test_pointwise_producer_fuses_into_reduction_and_siblings_share_a_loop() -> None:
    x = _RNG.normal(size=(64, 300))

    def build(g: Graph, a: Any) -> Any:
        sq = g.call(get_op("multiply"), a, a)
        total = g.call(get_op("sum"), sq, axis=(1,))
        biggest = g.call(get_op("max"), a, axis=(1,))
        return total, biggest

    compiled, got, want = _compile([x], build)
    assert compiled.kernel_count == 1
    _compare(got[0], want[0], 300, exact=False)
    _compare(got[1], want[1], 300, exact=True)


def test_nan_propagates_through_max_and_min_and_empty_sums_are_zero() -> None:
    x = _RNG.normal(size=(4, 9))
    x[1, 3] = np.nan
    e = np.zeros((3, 0), np.float32)

    def build(g: Graph, a: Any, b: Any) -> Any:
        return (
            g.call(get_op("max"), a, axis=(1,)),
            g.call(get_op("min"), a),
            g.call(get_op("sum"), b, axis=(1,)),
            g.call(get_op("prod"), b),
        )

    _, got, want = _compile([x, e], build)
    for g, w in zip(got, want, strict=True):
        _compare(g, w, 9, exact=True)


def test_reduction_of_noncontiguous_view_and_integer_promotion() -> None:
    x = _RNG.integers(-100, 100, size=(9, 10), dtype=np.int8)[::-2, 1::3]
    f = _RNG.normal(size=(10, 12)).T  # transposed

    def build(g: Graph, a: Any, b: Any) -> Any:
        return (
            g.call(get_op("sum"), a, axis=(0,)),  # int8 sums in int64
            g.call(get_op("prod"), a),
            g.call(get_op("mean"), a, axis=(1,)),  # int mean in float64
            g.call(get_op("var"), b, axis=(0,), ddof=1),
            g.call(get_op("sum"), b, axis=(0,), dtype=np.dtype("float32")),
        )

    _, got, want = _compile([x, f], build)
    for g, w in zip(got, want, strict=True):
        _compare(g, w, 12, exact=False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_outer_axis_sums_walk_rows_like_numpy_bit_for_bit(dtype: str) -> None:
    x = _RNG.normal(size=(300, 4, 150)).astype(dtype)

    def build(g: Graph, a: Any) -> Any:
        return (
            g.call(get_op("sum"), a, axis=(0,)),
            g.call(get_op("mean"), a, axis=(0, 1)),
            g.call(get_op("var"), a, axis=(0,), keepdims=True),
        )

    compiled, got, want = _compile([x], build)
    assert "xb" in compiled.source  # the row-accumulating loop nest
    _compare(got[0], want[0], 300, exact=True)
    _compare(got[1], want[1], 1200, exact=True)
    _compare(got[2], want[2], 300, exact=False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_column_extrema_keep_nans_signed_zeros_and_raise_no_flag(dtype: str) -> None:
    # max / min over the outer axis of a C-order array (the row pass: selects GCC
    # vectorizes, NaNs tested first, quiet integer keys): eager's bits, NaNs where eager
    # has them (payload included), -0.0 kept, and no FP flag (NumPy warns of none). Which
    # of two zeros of both signs wins follows NumPy's SIMD loop on the machine: untested.
    x = _RNG.normal(size=(37, 21)).astype(dtype)
    x[5, 2] = np.nan
    x[30, 4] = -np.nan
    x[:, 7] = -0.0
    x[9, 8] = np.inf
    x[10, 9] = -np.inf

    def build(g: Graph, a: Any) -> Any:
        return (g.call(get_op("max"), a, axis=(0,)), g.call(get_op("min"), a, axis=(0,)))

    compiled = compile_graph(_graph_of([x], build))
    with np.errstate(all="raise"):
        got = compiled.fn(x)
        want = (x.max(axis=0), x.min(axis=0))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(f"u{w.itemsize}"), w.view(f"u{w.itemsize}"))


def _graph_of(inputs: list[np.ndarray], build: Any) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    return graph
