"""Gathers fused into kernels (lowering/gather.py, codegen/c/gather.py): `x[idx]` with
integer index arrays is a load whose index is read from data, against NumPy eager: values,
dtypes and shapes, repeated and negative indices, out-of-bounds indices raising NumPy's
IndexError, empty index arrays, and the fused form (one kernel, no `x[idx]` array).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, IndexArray, compile_function, get_op, meta_of
from numpile_inductor import compile_graph

Array = np.ndarray[Any, Any]
_RNG = np.random.default_rng(27)


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    return compile_function(fn, backend="inductor", options={"graph_cache": False})


def _check(fn: Callable[..., Any], *args: Any) -> None:
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got, want = _compiled(fn)(*args), fn(*copies)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,),
        want if isinstance(want, tuple) else (want,),
        strict=True,
    ):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    for a, c in zip(args, copies, strict=True):  # inputs untouched
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, c)


def weighted_gather(data: Array, x: Array, cols: Array) -> Array:
    return data * x[cols] + 1.0


def gather_rows(a: Array, rows: Array, w: Array) -> Array:
    return np.tanh(a[rows] * w)


def gather_columns(a: Array, cols: Array) -> Array:
    return a[:, cols] - 1.0


def broadcast_indices(a: Array, i: Array, j: Array) -> Array:
    return a[i, j] * 2.0


def gather_of_computed(x: Array, cols: Array) -> Array:
    return np.sqrt(x * x + 1.0)[cols] * 3.0


def gather_of_gather(x: Array, p: Array, q: Array) -> Array:
    return x[p][q] + 1.0


def gather_sum(x: Array, cols: Array) -> Array:
    return np.sum(x[cols] * x[cols])


def spmv(data: Array, rows: Array, cols: Array, x: Array) -> Array:
    products = data * x[cols]
    y = np.bincount(rows, weights=products, minlength=x.shape[0])
    return y / (np.abs(y).max() + 1e-12)


def add_at(x: Array, values: Array, index: Array, cols: Array) -> Array:
    out = np.zeros_like(x)
    np.add.at(out, index, values * x[cols])
    return out


n = 50
CASES: list[tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]]]] = [
    (
        "repeated indices",
        weighted_gather,
        lambda: (_RNG.standard_normal(400), _RNG.standard_normal(n), _RNG.integers(0, n, 400)),
    ),
    (
        "negative indices",
        weighted_gather,
        lambda: (_RNG.standard_normal(300), _RNG.standard_normal(n), _RNG.integers(-n, n, 300)),
    ),
    (
        "int32 index, float32 data",
        weighted_gather,
        lambda: (
            _RNG.standard_normal(90).astype(np.float32),
            _RNG.standard_normal(n).astype(np.float32),
            _RNG.integers(-n, n, 90).astype(np.int32),
        ),
    ),
    (
        "uint8 index, int64 data",
        weighted_gather,
        lambda: (np.arange(60), np.arange(n) * 3, _RNG.integers(0, n, 60).astype(np.uint8)),
    ),
    (
        "rows of a matrix",
        gather_rows,
        lambda: (_RNG.standard_normal((20, 7)), _RNG.integers(-20, 20, 33), _RNG.random(7)),
    ),
    (
        "columns, a 2-D index",
        gather_columns,
        lambda: (_RNG.standard_normal((6, 11)), _RNG.integers(0, 11, (4, 5))),
    ),
    (
        "two broadcast index arrays",
        broadcast_indices,
        lambda: (
            _RNG.standard_normal((9, 8)),
            _RNG.integers(0, 9, (5, 1)),
            _RNG.integers(-8, 8, (1, 4)),
        ),
    ),
    ("of a computed value", gather_of_computed, lambda: (_RNG.random(n), _RNG.integers(0, n, 70))),
    (
        "gather of a gather",
        gather_of_gather,
        lambda: (_RNG.random(n), _RNG.integers(0, n, 30), _RNG.integers(-30, 30, 80)),
    ),
    ("in a reduction", gather_sum, lambda: (_RNG.random(n), _RNG.integers(0, n, 500))),
    (
        "into bincount",
        spmv,
        lambda: (
            _RNG.standard_normal(400),
            np.sort(_RNG.integers(0, n, 400)),
            _RNG.integers(0, n, 400),
            _RNG.standard_normal(n),
        ),
    ),
    (
        "into np.add.at",
        add_at,
        lambda: (
            _RNG.standard_normal(n),
            _RNG.standard_normal(200),
            _RNG.integers(-n, n, 200),
            _RNG.integers(0, n, 200),
        ),
    ),
    (
        "empty index",
        weighted_gather,
        lambda: (np.zeros(0), _RNG.standard_normal(n), np.zeros(0, np.int64)),
    ),
]


@pytest.mark.parametrize(("fn", "make"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gathers_match_numpy(fn: Callable[..., Any], make: Callable[[], tuple[Any, ...]]) -> None:
    _check(fn, *make())


@pytest.mark.parametrize("bad", [n, -n - 1, 10**12])
def test_an_index_out_of_bounds_raises_numpys_index_error(bad: int) -> None:
    data, x = _RNG.standard_normal(100), _RNG.standard_normal(n)
    cols = _RNG.integers(0, n, 100)
    compiled = _compiled(weighted_gather)
    compiled(data, x, cols)
    cols[37] = bad
    with pytest.raises(IndexError) as eager:
        weighted_gather(data, x, cols)
    with pytest.raises(IndexError) as got:
        compiled(data, x, cols)
    assert str(got.value) == str(eager.value)


def _gather_graph(data: Array, x: Array, cols: Array) -> Graph:
    graph = Graph()
    pd, px, pc = (graph.placeholder(k, meta_of(v)) for k, v in (("d", data), ("x", x), ("c", cols)))
    gathered = graph.call(get_op("index"), px, pc, index=(IndexArray(0),))
    graph.output = graph.call(get_op("multiply"), pd, gathered)
    return graph


def test_the_gather_is_fused_into_its_consumer() -> None:
    # One kernel, the gathered element read in place: no `x[cols]` array, no NumPy call.
    data, x = _RNG.standard_normal(1000), _RNG.standard_normal(100)
    cols = _RNG.integers(0, 100, 1000)
    compiled = compile_graph(_gather_graph(data, x, cols), options={"graph_cache": False})
    assert compiled.extern_ops == []
    assert compiled.kernel_count == 1
    assert "x[ind" in str(compiled.schedule)
    np.testing.assert_array_equal(compiled.fn(data, x, cols), data * x[cols])


def bincount_weighted(x: Array, w: Array) -> Array:
    return np.bincount(x, weights=w * 2.0, minlength=5)


BINCOUNT_CASES: list[tuple[str, Callable[[], tuple[Any, ...]]]] = [
    ("minlength below the largest bin", lambda: (_RNG.integers(0, 40, 300), _RNG.random(300))),
    ("minlength above it", lambda: (_RNG.integers(0, 3, 50), _RNG.random(50))),
    ("int32 bins", lambda: (_RNG.integers(0, 30, 90).astype(np.int32), _RNG.random(90))),
    ("one bin", lambda: (np.zeros(7, np.int64), _RNG.standard_normal(7))),
    # The length pass reads contiguous bins in a loop of its own; strided ones element-wise.
    ("strided bins", lambda: (_RNG.integers(0, 40, 600)[::2], _RNG.random(300))),
    ("strided int32 bins", lambda: (_RNG.integers(0, 9, 120, np.int32)[::3], _RNG.random(40))),
]


@pytest.mark.parametrize("make", [c[1] for c in BINCOUNT_CASES], ids=[c[0] for c in BINCOUNT_CASES])
def test_weighted_bincounts_match_numpy_to_the_bit(make: Callable[[], tuple[Any, ...]]) -> None:
    x, w = make()
    got, want = _compiled(bincount_weighted)(x, w), bincount_weighted(x, w)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # the weights added in NumPy's order


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_a_negative_bin_raises_numpys_value_error(dtype: type) -> None:
    x, w = _RNG.integers(0, 9, 40).astype(dtype), _RNG.random(40)
    compiled = _compiled(bincount_weighted)
    compiled(x, w)
    x[11] = -2
    with pytest.raises(ValueError) as eager:
        bincount_weighted(x, w)
    with pytest.raises(ValueError) as got:
        compiled(x, w)
    assert str(got.value) == str(eager.value)


def test_an_add_at_index_out_of_bounds_raises_numpys_index_error() -> None:
    x, values = _RNG.standard_normal(n), _RNG.standard_normal(30)
    index, cols = _RNG.integers(0, n, 30), _RNG.integers(0, n, 30)
    compiled = _compiled(add_at)
    compiled(x, values, index, cols)
    index[4] = n + 3
    with pytest.raises(IndexError) as eager:
        add_at(x, values, index, cols)
    with pytest.raises(IndexError) as got:
        compiled(x, values, index, cols)
    assert str(got.value) == str(eager.value)


def test_the_gather_is_fused_into_the_scatter_add() -> None:
    # spmv's bincount(rows, weights=data * x[cols]): one scatter kernel reads data, x and
    # both index arrays; no `x[cols]` or `data * x[cols]` array, NumPy only for the length.
    data, rows = _RNG.standard_normal(800), np.sort(_RNG.integers(0, 100, 800))
    cols, x = _RNG.integers(0, 100, 800), _RNG.standard_normal(100)
    graph = Graph()
    pd, pr, pc, px = (
        graph.placeholder(k, meta_of(v))
        for k, v in (("data", data), ("rows", rows), ("cols", cols), ("x", x))
    )
    gathered = graph.call(get_op("index"), px, pc, index=(IndexArray(0),))
    products = graph.call(get_op("multiply"), pd, gathered)
    graph.output = graph.call(get_op("bincount"), pr, products, minlength=100, nnz="u0")
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert compiled.extern_ops == ["bincount"]  # the length: NumPy's checks, or C's
    assert compiled.kernel_count == 1
    schedule = str(compiled.schedule)
    assert "scatter over [800]" in schedule and "x[ind" in schedule
    assert len(compiled.schedule.program.buffers) == 6  # inputs, the length, the result
    got = compiled.fn(data, rows, cols, x)
    np.testing.assert_array_equal(got, np.bincount(rows, weights=data * x[cols], minlength=100))


def test_backends_without_data_indices_keep_gathers_extern() -> None:
    # The Triton backend and C loop bodies lower with data_indices=False: `index` stays
    # NumPy's call there, the rest of the graph still fuses.
    from numpile_inductor.pipeline import lower_and_schedule

    data, x, cols = _RNG.standard_normal(10), _RNG.standard_normal(5), _RNG.integers(0, 5, 10)
    graph = _gather_graph(data, x, cols)
    assert [s.op_name for s in lower_and_schedule(graph).steps if hasattr(s, "op_name")] == []
    kept = lower_and_schedule(graph, data_indices=False)
    assert [s.op_name for s in kept.steps if hasattr(s, "op_name")] == ["index"]
    assert len(kept.kernels) == 1
