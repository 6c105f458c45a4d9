"""Pointwise epilogues of extern calls (matmul + bias + relu) run in the extern's result."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Graph, Op, OpKind, get_op, meta_of, register_op, run_graph
from numpile_inductor import compile_graph

_RNG = np.random.default_rng(5)


def _graph(inputs: list[Any], build: Any) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    return graph


def _dense_relu(g: Graph, x: Any, w: Any, b: Any) -> Any:
    m = g.call(get_op("matmul"), x, w)
    return g.call(get_op("maximum"), g.call(get_op("add"), m, b), 0.0)


def _mlp_inputs() -> list[np.ndarray]:
    x = _RNG.normal(size=(16, 32)).astype(np.float32)
    w1 = _RNG.normal(size=(32, 24)).astype(np.float32)
    b1 = _RNG.normal(size=(24,)).astype(np.float32)
    w2 = _RNG.normal(size=(24, 8)).astype(np.float32)
    b2 = _RNG.normal(size=(8,)).astype(np.float32)
    return [x, w1, b1, w2, b2]


def test_mlp_epilogues_run_in_place_and_match_numpy_bit_for_bit() -> None:
    inputs = _mlp_inputs()
    copies = [a.copy() for a in inputs]

    def build(g: Graph, x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        return _dense_relu(g, _dense_relu(g, x, w1, b1), w2, b2)

    graph = _graph(inputs, build)
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert compiled.source.count("written in place") == 2
    assert compiled.extern_ops == ["matmul", "matmul"]
    for _ in range(3):
        out = compiled.fn(*inputs)
        want = run_graph(graph, inputs)
        assert out.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(out, want)
        assert out.flags.owndata and out.flags.writeable
    for before, after in zip(copies, inputs, strict=True):
        np.testing.assert_array_equal(before, after)


def test_an_extern_result_read_later_is_not_overwritten() -> None:
    x, w, b = _mlp_inputs()[:3]

    def build(g: Graph, x: Any, w: Any, b: Any) -> Any:
        m = g.call(get_op("matmul"), x, w)
        first = g.call(get_op("add"), m, b)
        second = g.call(get_op("sum"), m, axis=0)  # reads m after the epilogue
        return first, second, m

    graph = _graph([x, w, b], build)
    got = compile_graph(graph).fn(x, w, b)
    want = run_graph(graph, [x, w, b])
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g_, w_, rtol=1e-5)
    assert not np.shares_memory(got[0], got[2])


def _extern_returning(name: str, fn: Any) -> Op:
    try:
        return get_op(name)
    except KeyError:
        meta = lambda x: ArrayMeta(x.shape, x.dtype)  # noqa: E731
        return register_op(Op(name, OpKind.EXTERN, meta, fn))


def test_an_extern_returning_its_input_or_a_view_never_gets_written() -> None:
    a = _RNG.normal(size=(64, 64))
    same = _extern_returning("test_inductor_same_array", lambda x: x)
    view = _extern_returning("test_inductor_full_view", lambda x: x[:, :])

    def build(g: Graph, x: Any) -> Any:
        doubled = g.call(get_op("multiply"), g.call(same, x), 2.0)
        return doubled, g.call(get_op("add"), g.call(view, x), 1.0)

    graph = _graph([a], build)
    before = a.copy()
    compiled = compile_graph(graph, options={"graph_cache": False})
    # the epilogues are candidates at compile time; the run-time check refuses them
    assert compiled.source.count("written in place") == 2
    doubled, plus = compiled.fn(a)
    np.testing.assert_array_equal(a, before)
    np.testing.assert_array_equal(doubled, before * 2.0)
    np.testing.assert_array_equal(plus, before + 1.0)
    assert not np.shares_memory(doubled, a) and not np.shares_memory(plus, a)


def test_a_transposed_read_of_the_extern_result_is_not_in_place() -> None:
    x = _RNG.normal(size=(16, 16))
    w = _RNG.normal(size=(16, 16))

    def build(g: Graph, x: Any, w: Any) -> Any:
        m = g.call(get_op("matmul"), x, w)
        return g.call(get_op("add"), g.call(get_op("transpose"), m, axes=(1, 0)), 1.0)

    graph = _graph([x, w], build)
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert "written in place" not in compiled.source
    np.testing.assert_array_equal(compiled.fn(x, w), run_graph(graph, [x, w]))
