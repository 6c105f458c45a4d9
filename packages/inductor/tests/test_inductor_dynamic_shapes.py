"""Graphs with symbolic sizes: one compiled module serves every size, checked against NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import sympy

from numpile_capture import (
    ArrayMeta,
    Graph,
    Op,
    OpKind,
    compile_function,
    get_op,
    register_op,
    reset,
    run_graph,
)
from numpile_inductor import compile_graph

_RNG = np.random.default_rng(11)
S0 = sympy.Symbol("s0", integer=True, positive=True)
S1 = sympy.Symbol("s1", integer=True, positive=True)


def _meta(shape: tuple[Any, ...], dtype: str = "float64") -> ArrayMeta:
    # Contiguous strides over the symbols, as capture's shape environment makes them.
    strides: list[Any] = []
    step: Any = sympy.Integer(1)
    for dim in reversed(shape):
        strides.append(step)
        step = step * dim
    return ArrayMeta(shape, np.dtype(dtype), tuple(reversed(strides)))


def _graph(metas: list[ArrayMeta], build: Callable[..., Any]) -> Graph:
    graph = Graph()
    nodes = [graph.placeholder(f"in{i}", meta) for i, meta in enumerate(metas)]
    graph.output = build(graph, *nodes)
    return graph


def _op(g: Graph, name: str, *args: Any, **kwargs: Any) -> Any:
    return g.call(get_op(name), *args, **kwargs)


def _check(
    graph: Graph, fn: Any, inputs: list[Any], *, rtol: float = 0.0, atol: float = 1e-12
) -> None:
    got = fn(*inputs)
    want = run_graph(graph, inputs)
    got_leaves = got if isinstance(got, tuple) else (got,)
    want_leaves = want if isinstance(want, tuple) else (want,)
    assert len(got_leaves) == len(want_leaves)
    for g_, w_ in zip(got_leaves, want_leaves, strict=True):
        assert np.shape(g_) == np.shape(w_)
        assert np.asarray(g_).dtype == np.asarray(w_).dtype
        if rtol:
            np.testing.assert_allclose(g_, w_, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g_, w_)


def _normal(*shape: int, dtype: str = "float64") -> np.ndarray:
    return _RNG.normal(size=shape).astype(dtype)


def test_pointwise_chain_with_broadcast_serves_every_size() -> None:
    def build(g: Graph, x: Any, b: Any) -> Any:
        t = _op(g, "multiply", _op(g, "add", x, b), x)  # (x + b) * x
        return _op(g, "subtract", _op(g, "divide", t, 3.0), 1.0)

    graph = _graph([_meta((S0, 4)), _meta((4,))], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == [] and compiled.kernel_count == 1
    for n in (2, 3, 17, 1000, 70_000):
        _check(graph, compiled.fn, [_normal(n, 4), _normal(4)])


def test_two_symbols_and_an_output_row_vector_broadcast() -> None:
    def build(g: Graph, x: Any, row: Any, col: Any) -> Any:
        return _op(g, "add", _op(g, "multiply", x, row), col)

    graph = _graph([_meta((S0, S1)), _meta((S1,)), _meta((S0, 1))], build)
    compiled = compile_graph(graph)
    for n, m in ((2, 3), (5, 2), (64, 129), (300, 7)):
        _check(graph, compiled.fn, [_normal(n, m), _normal(m), _normal(n, 1)])


def test_non_contiguous_inputs_of_symbolic_size() -> None:
    def build(g: Graph, x: Any) -> Any:
        return _op(g, "sqrt", _op(g, "absolute", x))

    graph = _graph([_meta((S0, S1), "float32")], build)
    compiled = compile_graph(graph)
    for n, m in ((3, 4), (40, 33)):
        base = _normal(n, 2 * m, dtype="float32")
        _check(graph, compiled.fn, [base[:, ::2]], rtol=1e-6)
        _check(graph, compiled.fn, [np.asfortranarray(base)[:, :m]], rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_sum_and_max_over_symbolic_axes(axis: int | None) -> None:
    def build(g: Graph, x: Any) -> Any:
        return _op(g, "sum", x, axis=axis), _op(g, "max", x, axis=axis)

    graph = _graph([_meta((S0, S1))], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == []
    for n, m in ((2, 3), (7, 300), (500, 9)):
        _check(graph, compiled.fn, [_normal(n, m)], rtol=1e-12)


def test_softmax_over_rows_of_symbolic_size() -> None:
    def build(g: Graph, x: Any) -> Any:
        shifted = _op(g, "subtract", x, _op(g, "max", x, axis=1, keepdims=True))
        e = _op(g, "exp", shifted)
        return _op(g, "divide", e, _op(g, "sum", e, axis=1, keepdims=True))

    graph = _graph([_meta((S0, S1), "float32")], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == []
    for n, m in ((2, 5), (33, 128), (256, 31)):
        _check(graph, compiled.fn, [_normal(n, m, dtype="float32")], rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mean_var_and_std_over_symbolic_sizes_are_kernels(dtype: str) -> None:
    # The count is known only at run time: a sum of ones in the same loop, the division in
    # float64 as with a static count. Layernorm's two means fuse into one row group.
    def build(g: Graph, x: Any) -> Any:
        centered = _op(g, "subtract", x, _op(g, "mean", x, axis=1, keepdims=True))
        var = _op(g, "mean", _op(g, "multiply", centered, centered), axis=1, keepdims=True)
        normed = _op(g, "divide", centered, _op(g, "sqrt", _op(g, "add", var, 1e-5)))
        return (
            normed,
            _op(g, "mean", x),
            _op(g, "var", x, axis=0, ddof=1),
            _op(g, "std", x, axis=1, keepdims=True),
        )

    graph = _graph([_meta((S0, S1), dtype)], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == []
    # NOTE: centered values near zero carry the float32 rounding of the mean (summed in
    # another order than NumPy's pairwise sum): an absolute tolerance of a few float32 ulps.
    single = dtype == "float32"
    for n, m in ((2, 3), (7, 300), (300, 9)):
        _check(
            graph,
            compiled.fn,
            [_normal(n, m, dtype=dtype)],
            rtol=1e-5 if single else 1e-12,
            atol=1e-6 if single else 1e-12,
        )


def test_ops_that_need_static_sizes_run_as_extern_calls() -> None:
    def build(g: Graph, x: Any, w: Any) -> Any:
        var = _op(g, "var", x, axis=1, ddof=2)  # n - 2 may be 0 at run time: extern
        t = _op(g, "transpose", x, axes=(1, 0))  # a view of symbolic shape: extern
        m = _op(g, "matmul", x, w)
        return _op(g, "add", var, 1.0), _op(g, "multiply", t, 2.0), _op(g, "maximum", m, 0.0)

    graph = _graph([_meta((S0, S1)), _meta((S1, 3))], build)
    compiled = compile_graph(graph)
    assert sorted(compiled.extern_ops) == ["matmul", "transpose", "var"]
    for n, m in ((2, 3), (19, 40)):
        _check(graph, compiled.fn, [_normal(n, m), _normal(m, 3)], rtol=1e-12)


def test_a_size_expression_dim_is_computed_from_the_bound_symbol() -> None:
    def build(g: Graph, x: Any, y: Any) -> Any:
        both = _op(g, "concatenate", x, x, axis=0)  # extern, float64[2*s0]
        return _op(g, "add", both, y)

    graph = _graph([_meta((S0,)), _meta((2 * S0,))], build)
    compiled = compile_graph(graph)
    for n in (2, 9, 1000):
        _check(graph, compiled.fn, [_normal(n), _normal(2 * n)])


def test_inputs_that_break_the_shape_relations_are_refused() -> None:
    def build(g: Graph, x: Any, y: Any) -> Any:
        return _op(g, "add", x, y)

    graph = _graph([_meta((S0, 3)), _meta((S0, 3))], build)
    fn = compile_graph(graph).fn
    with pytest.raises(ValueError, match="shapes do not match"):
        fn(_normal(4, 3), _normal(5, 3))
    with pytest.raises(TypeError):
        fn(_normal(4, 4), _normal(4, 4))  # a static dim differs
    _check(graph, fn, [_normal(6, 3), _normal(6, 3)])


def test_large_symbolic_results_come_from_the_buffer_pool() -> None:
    from numpy._core.multiarray import get_handler_name

    def build(g: Graph, x: Any) -> Any:
        return _op(g, "multiply", x, 2.0)

    graph = _graph([_meta((S0,))], build)
    fn = compile_graph(graph).fn
    assert get_handler_name(fn(np.ones(1 << 18))) == "numpile_pool"
    assert get_handler_name(fn(np.ones(10))) == "default_allocator"


def test_a_data_dependent_size_is_bound_from_the_extern_result() -> None:
    u0 = sympy.Symbol("u0", integer=True, positive=True)
    name = "test_inductor_positive_entries"
    try:
        positive = get_op(name)
    except KeyError:
        meta = lambda x: ArrayMeta((u0,), x.dtype, (sympy.Integer(1),))  # noqa: E731
        positive = register_op(Op(name, OpKind.EXTERN, meta, lambda x: x[x > 0]))

    def build(g: Graph, x: Any) -> Any:
        kept = g.call(positive, _op(g, "multiply", x, 2.0))
        return _op(g, "add", _op(g, "sqrt", kept), 1.0), _op(g, "sum", kept)

    graph = _graph([_meta((S0,))], build)
    compiled = compile_graph(graph)
    assert compiled.extern_ops == [name]
    for n in (2, 50, 3000):
        _check(graph, compiled.fn, [_normal(n)], rtol=1e-12)


def test_strided_slice_lengths_are_exact_integer_arithmetic() -> None:
    # x[1::3] has floor(s0/3 + 1/3) elements: evaluated in double, s0 = 8 would give 2.
    name = "test_inductor_every_third"
    length = sympy.floor(S0 / 3 + sympy.Rational(1, 3))
    try:
        every_third = get_op(name)
    except KeyError:
        meta = lambda x: ArrayMeta((length,), x.dtype, (sympy.Integer(1),))  # noqa: E731
        every_third = register_op(
            Op(name, OpKind.EXTERN, meta, lambda x: np.ascontiguousarray(x[1::3]))
        )

    def build(g: Graph, x: Any) -> Any:
        return _op(g, "multiply", g.call(every_third, x), 2.0)

    graph = _graph([_meta((S0,))], build)
    fn = compile_graph(graph).fn
    for n in range(2, 14):
        _check(graph, fn, [_normal(n)])


def _prefix_and_suffix(x: Any, i: int) -> Any:
    return x[: i + 1].sum() + x[i:].sum()


def test_an_extern_result_sized_by_a_run_time_int_binds_its_whole_dim() -> None:
    # `x[: i + 1]` of a run-time int `i` (capture reads it at run time, not pinned per
    # value) has length `Max(0, Min(r0 + 1, s0))`: no input binds `r0`, so the wrapper binds
    # the whole dim from the extern's result. Before, that dim failed the C build and each
    # value of `i` compiled static.
    from numpile_capture import compile_function
    from numpile_capture.capture_events import recording_captures

    compiled = compile_function(_prefix_and_suffix, backend="inductor")
    x = np.arange(10.0)
    with recording_captures() as events:
        for i in (0, 1, 2, 3, 9, 12, 40):
            got, want = compiled(x, i), _prefix_and_suffix(x, i)
            assert type(got) is type(want) and got == want, i
    graphs = [event.graph for event in events if event.graph is not None]
    assert len(graphs) <= 2
    dims = [str(dim) for g in graphs for node in g.nodes for dim in getattr(node.meta, "shape", ())]
    assert any(dim.startswith("Max(") for dim in dims), dims


def _square_counts(x: Any, bins: int) -> Any:
    counts = np.zeros((bins, bins), dtype=np.int16)
    for i in range(x.shape[0]):
        b = int(x[i] * bins)
        counts[b, bins - 1 - b] += 1
    return counts


def test_an_extern_result_whose_dims_share_a_fresh_symbol_builds() -> None:
    # `np.zeros((bins, bins))` of a run-time int: dim 1 was checked against the symbol
    # dim 0 binds before its C declaration, and the module did not build (main, unseen4:
    # capture fell back to static sizes, one compile per size).
    reset()
    failures: list[BaseException] = []

    def backend(graph: Graph, example_inputs: Any) -> Any:
        try:
            return compile_graph(graph).fn
        except Exception as error:
            failures.append(error)
            raise

    compiled = compile_function(_square_counts, backend=backend, dynamic=True)
    for n, bins in ((20, 4), (31, 6), (5, 3)):
        x = _RNG.random(n)
        np.testing.assert_array_equal(compiled(x, bins), _square_counts(x, bins))
    assert failures == []
