"""The graph IR: printing, structural hashing, metadata, pytrees and the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from numpile_capture import (
    ArrayMeta,
    Graph,
    ScalarMeta,
    contiguous_strides,
    get_op,
    meta_of,
    run_graph,
    tree_flatten,
    tree_map,
    tree_unflatten,
)


def _sample_graph(scale: float = 1.0) -> Graph:
    g = Graph()
    a = g.placeholder("a", ArrayMeta((8, 4), "float32"))
    b = g.placeholder("b", ArrayMeta((4,), "float32"))
    v0 = g.call(get_op("sin"), a)
    v1 = g.call(get_op("multiply"), v0, b)
    g.output = (g.call(get_op("add"), v1, scale),)
    return g


def test_graph_prints_as_a_program() -> None:
    assert str(_sample_graph()) == (
        "graph(a: float32[8, 4], b: float32[4]):\n"
        "  v0 = sin(a)  # float32[8, 4]\n"
        "  v1 = multiply(v0, b)  # float32[8, 4]\n"
        "  v2 = add(v1, 1.0)  # float32[8, 4]\n"
        "  return (v2,)"
    )


def test_structural_hash_is_stable_and_sensitive() -> None:
    assert _sample_graph().structural_hash() == _sample_graph().structural_hash()
    assert _sample_graph().structural_hash() != _sample_graph(2.0).structural_hash()


def test_numpy_scalar_constants_print_with_their_dtype() -> None:
    def graph(scalar: object) -> Graph:
        g = Graph()
        a = g.placeholder("a", ArrayMeta((3,), "int8"))
        g.output = g.call(get_op("multiply"), a, scalar)
        return g

    strong, weak = graph(np.float32(2.0)), graph(2.0)
    assert "v0 = multiply(a, float32(2.0))  # float32[3]" in str(strong)
    assert "v0 = multiply(a, 2.0)  # float64[3]" in str(weak)
    assert "multiply(a, int8(-3))" in str(graph(np.int8(-3)))
    assert strong.structural_hash() != weak.structural_hash()


def test_meta_rule_exception_leaves_graph_unchanged() -> None:
    g = Graph()
    a = g.placeholder("a", ArrayMeta((3,), "float64"))
    b = g.placeholder("b", ArrayMeta((4,), "float64"))
    with pytest.raises(ValueError):
        g.call(get_op("add"), a, b)
    assert len(g) == 2


def test_placeholder_names_are_unique() -> None:
    g = Graph()
    first = g.placeholder("x", ArrayMeta((1,), "int8"))
    second = g.placeholder("x", ArrayMeta((1,), "int8"))
    assert first.name != second.name


def test_run_graph_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    (result,) = run_graph(_sample_graph(), [a, b])
    expected = np.sin(a) * b + 1.0
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


def test_run_graph_returns_inputs_themselves() -> None:
    g = Graph()
    a = g.placeholder("a", ArrayMeta((2,), "int64"))
    g.output = {"same": a, "const": 3}
    x = np.arange(2)
    out = run_graph(g, [x])
    assert out["same"] is x
    assert out["const"] == 3


def test_run_graph_checks_input_count() -> None:
    with pytest.raises(TypeError, match="takes 2 inputs"):
        run_graph(_sample_graph(), [np.zeros((8, 4), np.float32)])


def test_meta_of_reports_element_strides() -> None:
    x = np.zeros((3, 4), np.float64)[:, ::2]
    meta = meta_of(x)
    assert isinstance(meta, ArrayMeta)
    assert meta.shape == (3, 2)
    assert meta.strides == (4, 2)
    assert str(meta) == "float64[3, 2]{4, 2}"
    assert meta_of(2.5) == ScalarMeta(float)
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)


def test_pytree_round_trip() -> None:
    tree = {"a": (1, [2, 3]), "b": 4, "c": ()}
    leaves, spec = tree_flatten(tree)
    assert leaves == [1, 2, 3, 4]
    assert spec.num_leaves == 4
    assert tree_unflatten(spec, leaves) == tree
    assert tree_map(lambda v: v * 10, tree) == {"a": (10, [20, 30]), "b": 40, "c": ()}
