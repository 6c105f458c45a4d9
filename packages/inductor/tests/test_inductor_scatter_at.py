"""`ufunc.at` as a C loop (codegen/c/scatter.py), against NumPy's `ufunc.at`.

Each graph is one `index_accumulate` step (the pure form of `np.add.at` and its kin). A
module whose NumPy callbacks fail shows the step ran in C; the results are compared bit for
bit (the loop applies the ufunc in index order, as NumPy does).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, IndexArray, meta_of
from numpile_capture.ops.scatter import index_accumulate
from numpile_inductor import compile_graph

_RNG = np.random.default_rng(2024)


def _graph(base: np.ndarray, value: Any, index: np.ndarray, ufunc: str) -> Graph:
    graph = Graph()
    pb = graph.placeholder("base", meta_of(base))
    pv = graph.placeholder("value", meta_of(value)) if isinstance(value, np.ndarray) else value
    pi = graph.placeholder("index", meta_of(index))
    graph.output = graph.call(index_accumulate, pb, pv, pi, ufunc=ufunc, index=(IndexArray(0),))
    return graph


def _eager(base: np.ndarray, value: Any, index: np.ndarray, ufunc: str) -> np.ndarray:
    out = base.copy()
    getattr(np, ufunc).at(out, index, value)
    return out


def _c_only(base: np.ndarray, value: Any, index: np.ndarray, ufunc: str) -> Any:
    # The compiled step with NumPy's callbacks made to fail: a result came from the C loop.
    compiled = compile_graph(_graph(base, value, index, ufunc), options={"graph_cache": False})
    generated = compiled.generated
    # the ufunc.at C loop, or a scatter-accumulate kernel (lowering/scatter.py)
    assert "np_scatter_at(" in generated.source or compiled.extern_ops == []
    module = rt.build_extension(generated.source, module_name=generated.module_name)

    def numpy_was_called(*args: Any) -> Any:
        raise AssertionError("ufunc.at ran through NumPy")

    module.set_externs(tuple(numpy_was_called for _ in generated.externs))
    return module, compiled


def _args(*arrays: Any) -> tuple[Any, ...]:
    return tuple(a for a in arrays if isinstance(a, np.ndarray))


# (name, ufunc, base, value, index): repeated and negative indices, dtypes, value layouts.
CASES: list[tuple[str, str, np.ndarray, Any, np.ndarray]] = [
    (
        "add f64 repeated",
        "add",
        np.zeros(9),
        _RNG.standard_normal(200),
        _RNG.integers(0, 9, 200),
    ),
    (
        "subtract f32 negative",
        "subtract",
        _RNG.standard_normal(7).astype(np.float32),
        _RNG.standard_normal(50).astype(np.float32),
        _RNG.integers(-7, 7, 50),
    ),
    (
        "multiply i64 wraps",
        "multiply",
        np.full(4, 3, np.int64),
        np.full(90, 7, np.int64),
        _RNG.integers(0, 4, 90),
    ),
    ("add i32 constant", "add", np.zeros(5, np.int32), 3, _RNG.integers(-5, 5, 40)),
    ("add f64 constant", "add", np.ones(6), 0.25, _RNG.integers(0, 6, 33)),
    (
        "add rows dense",
        "add",
        np.zeros((6, 3)),
        _RNG.standard_normal((40, 3)),
        _RNG.integers(0, 6, 40),
    ),
    (
        "add rows broadcast",
        "add",
        np.zeros((6, 2, 3)),
        _RNG.standard_normal((2, 3)),
        _RNG.integers(-6, 6, 25),
    ),
    (
        "add strided index",
        "add",
        np.zeros(8),
        _RNG.standard_normal(30),
        _RNG.integers(0, 8, 60)[::2],
    ),
    ("add empty index", "add", np.ones(3), np.zeros(0), np.zeros(0, np.intp)),
]


@pytest.mark.parametrize(("name", "ufunc", "base", "value", "index"), CASES, ids=lambda c: "")
def test_scatter_at_runs_in_c_bit_identical(
    name: str, ufunc: str, base: np.ndarray, value: Any, index: np.ndarray
) -> None:
    module, _ = _c_only(base, value, index, ufunc)
    want = _eager(base, value, index, ufunc)
    base_before = base.copy()
    got = module.call(*_args(base, value, index))
    assert got.dtype == want.dtype and got.shape == want.shape, name
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(base, base_before)  # the step is pure: base untouched


def test_out_of_bounds_index_raises_numpys_index_error() -> None:
    base, value = np.zeros(4), np.ones(3)
    compiled = compile_graph(
        _graph(base, value, np.array([0, 1, 2]), "add"), options={"graph_cache": False}
    )
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        compiled.fn(base, value, np.array([0, 4, 1]))
    with pytest.raises(IndexError, match="index -5 is out of bounds"):
        compiled.fn(base, value, np.array([0, -5, 1]))


def test_layouts_the_loop_does_not_read_run_through_numpy() -> None:
    # A transposed value and a float flag (inf - inf) go to NumPy, which warns as eager does.
    base, index = np.zeros((4, 3)), np.array([0, 3, 3, 1, 0])
    value = _RNG.standard_normal((3, 5))
    compiled = compile_graph(_graph(base, value.T, index, "add"), options={"graph_cache": False})
    np.testing.assert_array_equal(
        compiled.fn(base, value.T, index), _eager(base, value.T, index, "add")
    )
    inf = np.full((5, 3), np.inf)
    compiled = compile_graph(_graph(base, inf, index, "subtract"), options={"graph_cache": False})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled.fn(np.full((4, 3), np.inf), inf, index)
    with warnings.catch_warnings(record=True) as expected:
        warnings.simplefilter("always")
        want = _eager(np.full((4, 3), np.inf), inf, index, "subtract")
    np.testing.assert_array_equal(got, want)
    assert [str(w.message) for w in caught] == [str(w.message) for w in expected]
    assert expected  # NumPy warned (invalid value), so the C loop's flag check was exercised
