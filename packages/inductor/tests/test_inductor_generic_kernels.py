"""A kernel's generic copy (any strides) is built at -O1 for compile time; it keeps NumPy's
semantics: no fused multiply-add, int wrap-around, NaN from sqrt of a negative."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import Graph, get_op, meta_of
from numpile_inductor import compile_graph


def _graph(build: Any, *examples: Any) -> Any:
    graph = Graph()
    inputs = [graph.placeholder(f"x{k}", meta_of(e)) for k, e in enumerate(examples)]
    graph.output = build(graph, *inputs)
    return compile_graph(graph, options={"graph_cache": False})


def _multiply_add(graph: Graph, a: Any, b: Any, c: Any) -> Any:
    return graph.call(get_op("add"), graph.call(get_op("multiply"), a, b), c)


def test_the_generic_copy_is_built_at_o1() -> None:
    x = np.random.default_rng(0).random((8, 8))
    compiled = _graph(_multiply_add, x, x, x)
    generic = compiled.source.index("_generic(")
    assert 'optimize("O1"' in compiled.source[compiled.source.rindex("\n", 0, generic) - 90 :]


def test_strided_multiply_add_is_not_fused() -> None:
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal((64, 130)) for _ in range(3))
    compiled = _graph(_multiply_add, a[:, :65], b[:, :65], c[:, :65])
    got = compiled.fn(a[:, ::2], b[:, ::2], c[:, ::2])
    np.testing.assert_array_equal(got, a[:, ::2] * b[:, ::2] + c[:, ::2])


def test_strided_int32_wraps_and_sqrt_of_negatives_is_nan() -> None:
    x = (np.arange(400, dtype=np.int32) * 104729).reshape(20, 20)

    def wrap(graph: Graph, v: Any) -> Any:
        return graph.call(get_op("add"), graph.call(get_op("multiply"), v, v), v)

    compiled = _graph(wrap, x[:, :10].copy())
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(compiled.fn(x[:, ::2]), x[:, ::2] * x[:, ::2] + x[:, ::2])
    y = np.linspace(-1.0, 1.0, 400).reshape(20, 20)
    root = _graph(lambda graph, v: graph.call(get_op("sqrt"), v), y[:, :10].copy())
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(root.fn(y[:, ::2]), np.sqrt(y[:, ::2]))
