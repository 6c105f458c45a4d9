"""Extern calls, views that stay views, mutations, pytree outputs, options and debug files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, Graph, Op, OpKind, get_op, meta_of, register_op, run_graph
from numpile_inductor import compile_graph, inductor

_RNG = np.random.default_rng(2)


def _graph(inputs: list[Any], build: Any) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta_of(x)) for i, x in enumerate(inputs)]
    graph.output = build(graph, *nodes)
    return graph


def _op(name: str) -> Op:
    return get_op(name)


def test_matmul_runs_as_extern_between_fused_kernels() -> None:
    a = _RNG.normal(size=(8, 5))
    b = _RNG.normal(size=(5, 3))

    def build(g: Graph, x: Any, y: Any) -> Any:
        t = g.call(_op("sin"), x)
        m = g.call(_op("matmul"), t, y)
        return g.call(_op("add"), m, 1.0)

    graph = _graph([a, b], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == ["matmul"]
    assert compiled.kernel_count == 2
    np.testing.assert_allclose(compiled.fn(a, b), run_graph(graph, [a, b]), rtol=1e-14)


def _unlowered_op() -> Op:
    name = "test_inductor_rot90"
    try:
        return get_op(name)
    except KeyError:
        meta = lambda x: ArrayMeta(x.shape[::-1], x.dtype)  # noqa: E731
        return register_op(Op(name, OpKind.POINTWISE, meta, np.rot90))


def test_op_without_lowering_runs_as_extern_never_an_error() -> None:
    a = _RNG.normal(size=(3, 4))

    def build(g: Graph, x: Any) -> Any:
        r = g.call(_unlowered_op(), g.call(_op("exp"), x))
        return g.call(_op("multiply"), r, 2.0)

    graph = _graph([a], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == ["test_inductor_rot90"]
    np.testing.assert_allclose(compiled.fn(a), run_graph(graph, [a]), rtol=1e-15)


def test_unsupported_dtypes_and_ops_fall_back() -> None:
    h = _RNG.normal(size=(6,)).astype(np.float16)
    z = _RNG.normal(size=(6,)) + 1j
    i = _RNG.integers(1, 5, size=6)

    def build(g: Graph, x: Any, w: Any, n: Any) -> Any:
        return (
            g.call(_op("add"), x, x),  # float16: extern
            g.call(_op("absolute"), w),  # complex -> float: extern
            g.call(_op("power"), n, n),  # integer power: extern
            g.call(_op("cumsum"), n, axis=0),  # scan: extern
        )

    graph = _graph([h, z, i], build)
    compiled = compile_graph(graph)
    got, want = compiled.fn(h, z, i), run_graph(graph, [h, z, i])
    for g_, w_ in zip(got, want, strict=True):
        assert g_.dtype == w_.dtype
        np.testing.assert_array_equal(g_, w_)
    assert compiled.kernel_count == 0


def test_returned_views_alias_inputs_like_numpy() -> None:
    a = _RNG.normal(size=(4, 6))

    def build(g: Graph, x: Any) -> Any:
        t = g.call(_op("transpose"), x, axes=(1, 0))
        s = g.call(_op("getitem"), x, index=(slice(1, 3),))
        return t, s, x, g.call(_op("add"), t, 1.0)

    graph = _graph([a], build)
    t, s, same, plus = compile_graph(graph).fn(a)
    assert np.shares_memory(t, a) and np.shares_memory(s, a) and same is a
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(s, a[1:3])
    np.testing.assert_array_equal(plus, a.T + 1.0)


def test_view_of_a_computed_value_is_a_view_of_the_result() -> None:
    a = _RNG.normal(size=(4, 6))

    def build(g: Graph, x: Any) -> Any:
        e = g.call(_op("exp"), x)
        return e, g.call(_op("transpose"), e, axes=(1, 0))

    graph = _graph([a], build)
    e, t = compile_graph(graph).fn(a)
    assert np.shares_memory(e, t)
    np.testing.assert_allclose(t, np.exp(a).T, rtol=1e-15)


def test_mutation_ops_run_in_order_and_keep_in_place_effects() -> None:
    a = _RNG.normal(size=(5,))
    b = _RNG.normal(size=(5,))

    def build(g: Graph, x: Any, y: Any) -> Any:
        before = g.call(_op("multiply"), x, 2.0)  # reads x before the mutation
        only_output = g.call(_op("negative"), x)  # no users: still computed before it
        view = g.call(_op("getitem"), x, index=(slice(1, 4),))
        g.call(_op("add_"), x, y)  # x += y
        after = g.call(_op("add"), x, before)  # reads the mutated x
        return before, after, only_output, view, g.call(_op("multiply"), view, 3.0)

    graph = _graph([a, b], build)
    eager_a = a.copy()
    want = run_graph(graph, [eager_a, b])
    compiled_a = a.copy()
    got = compile_graph(graph).fn(compiled_a, b)
    np.testing.assert_array_equal(compiled_a, eager_a)
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g_, w_)


def test_pytree_outputs_with_constants() -> None:
    a = _RNG.normal(size=(3,))

    def build(g: Graph, x: Any) -> Any:
        return {"y": [g.call(_op("negative"), x), 7], "z": (None, g.call(_op("sum"), x))}

    graph = _graph([a], build)
    got = inductor(graph, [a])(a)
    want = run_graph(graph, [a])
    assert got["y"][1] == 7 and got["z"][0] is None
    np.testing.assert_array_equal(got["y"][0], want["y"][0])
    assert type(got["z"][1]) is type(want["z"][1])
    np.testing.assert_allclose(got["z"][1], want["z"][1], rtol=1e-15)


def test_scalar_inputs_are_weak_operands() -> None:
    a = _RNG.normal(size=(4,)).astype(np.float32)
    graph = Graph()
    x = graph.placeholder("x", meta_of(a))
    s = graph.placeholder("s", meta_of(1.5))
    graph.output = graph.call(_op("multiply"), x, s)
    fn = inductor(graph, [a, 1.5])
    got = fn(a, 0.25)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, a * 0.25)


def test_wrong_inputs_raise_instead_of_reading_out_of_bounds() -> None:
    a = np.ones((3, 4))
    graph = _graph([a], lambda g, x: g.call(_op("sin"), x))
    fn = inductor(graph, [a])
    with pytest.raises(TypeError, match="shape"):
        fn(np.ones((4, 4)))
    with pytest.raises(TypeError, match="float64"):
        fn(np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        fn()


def test_trace_option_writes_the_generated_code(tmp_path: Path) -> None:
    a = np.ones((3,))
    graph = _graph([a], lambda g, x: g.call(_op("cos"), x))
    options = {"trace.enabled": True, "trace.debug_dir": str(tmp_path)}
    inductor(graph, [a], options=options)
    files = sorted(p.name for p in tmp_path.glob("*/*"))
    assert files == ["graph.txt", "ir_post_fusion.txt", "ir_pre_fusion.txt", "output_code.c"]
    code = next(tmp_path.glob("*/output_code.c")).read_text()
    assert code.startswith("/* numpile inductor") and "cos(" in code
    with pytest.raises(ValueError, match="unknown inductor option"):
        inductor(graph, [a], options={"no.such.option": 1})


def test_backend_entry_point_is_registered() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="numpile.backends")}
    assert names.get("inductor") == "numpile_inductor.backend:inductor"
