"""Data-dependent (unbacked) sizes: the bounds each op implies, recorded in the shape
environment; slices of them simplified under those bounds; two of them broadcast through a
`broadcast_unbacked` check node instead of a graph break (issue 24, items 1 and 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_capture import ArrayMeta, Graph, compile_function, run_graph
from numpile_capture.dynamic_shapes import shape_env_in_use
from numpile_capture.numpy_bindings import lookup_function
from numpile_capture.ops._shapes import symbolic_slice_length
from numpile_guards import DataDependentGuard, ShapeEnv


@pytest.fixture
def env() -> Iterator[ShapeEnv]:
    shape_env = ShapeEnv()
    with shape_env_in_use(shape_env):
        yield shape_env


def _bind(graph: Graph, fn: Any, *args: Any, **kwargs: Any) -> Any:
    binding = lookup_function(fn)
    assert binding is not None
    return binding.apply(graph, *args, **kwargs)


def test_each_op_records_its_bounds(env: ShapeEnv) -> None:
    s0 = env.create_symbol(6, "L['x'].shape[0]")
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((s0, 3), "float64"))
    (flat,) = [_bind(graph, np.flatnonzero, x)]
    keys = _bind(graph, np.unique, x)
    labels = graph.placeholder("labels", ArrayMeta((s0,), "int64"))
    counts = _bind(graph, np.bincount, labels, minlength=4)
    bounds = [env.unbacked_bounds(node.meta.shape[0]) for node in (flat, keys, counts)]
    assert bounds == [(0, 3 * s0), (1, 3 * s0), (4, None)]
    u = keys.meta.shape[0]
    assert env.decide(sympy.Le(u, 3 * s0)) is True
    assert env.decide(sympy.Ge(u, 1)) is True
    assert env.decide(sympy.Le(u, s0)) is None
    with pytest.raises(DataDependentGuard, match="data-dependent size"):
        env.evaluate(sympy.Le(u, s0))


def test_slices_of_an_unbacked_size_need_no_clamp_the_bounds_prove(env: ShapeEnv) -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((6,), "float64"))
    index = _bind(graph, np.flatnonzero, x)
    keys = _bind(graph, np.unique, x)
    u, k = index.meta.shape[0], keys.meta.shape[0]
    assert symbolic_slice_length(u, slice(None, 6)) == u  # u <= 6: no Min
    assert symbolic_slice_length(u, slice(None, 4)) == sympy.Min(4, u)
    assert symbolic_slice_length(k, slice(1, None)) == k - 1  # unique: k >= 1, no Max
    assert symbolic_slice_length(u, slice(1, None)) == sympy.Max(0, u - 1)
    assert symbolic_slice_length(u, slice(None, -1)) == sympy.Max(0, u - 1)


_BOUND = st.one_of(st.none(), st.integers(-9, 9))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 8), _BOUND, _BOUND, st.sampled_from([1, 2, 3, -1, -2]))
def test_slice_lengths_of_unbacked_sizes_match_python(
    n: int, start: int | None, stop: int | None, step: int
) -> None:
    shape_env = ShapeEnv()
    with shape_env_in_use(shape_env):
        u = sympy.Symbol("u9", integer=True, nonnegative=True)
        shape_env.create_unbacked(u, 0, 8)
        length = symbolic_slice_length(u, slice(start, stop, step))
    value = sympy.sympify(length).subs(u, n)
    assert int(value) == len(range(n)[start:stop:step])


def _masked_sum_graph() -> tuple[Graph, Any]:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((5,), "float64"))
    y = graph.placeholder("y", ArrayMeta((5,), "float64"))
    add = lookup_function(np.add)
    assert add is not None
    a = _bind(graph, np.flatnonzero, x)
    b = _bind(graph, np.flatnonzero, y)
    graph.output = add.apply(graph, a, b)
    return graph, graph.output


def test_two_unbacked_sizes_broadcast_through_a_check_node(env: ShapeEnv) -> None:
    graph, out = _masked_sum_graph()
    ops = [node.op.name for node in graph.nodes if node.op is not None]
    assert "broadcast_unbacked" in ops
    size = out.meta.shape[0]
    assert env.unbacked_bounds(size) == (0, 5)
    cases = [
        ([1, 0, 2, 0, 3], [0, 4, 0, 5, 6]),  # 3 and 3
        ([1, 0, 0, 0, 0], [0, 4, 0, 5, 6]),  # 1 broadcasts against 3
        ([0, 0, 0, 0, 0], [0, 0, 0, 0, 0]),  # 0 and 0
        ([1, 0, 0, 0, 0], [0, 0, 0, 0, 0]),  # 1 against 0 is 0
    ]
    for x, y in cases:
        args = (np.array(x, float), np.array(y, float))
        expected = np.flatnonzero(args[0]) + np.flatnonzero(args[1])
        np.testing.assert_array_equal(run_graph(graph, args), expected)


def test_sizes_that_do_not_broadcast_raise_numpys_error(env: ShapeEnv) -> None:
    graph, _ = _masked_sum_graph()
    args = (np.array([1.0, 2, 0, 0, 0]), np.array([1.0, 2, 3, 0, 0]))
    with pytest.raises(ValueError) as eager:
        np.flatnonzero(args[0]) + np.flatnonzero(args[1])
    with pytest.raises(ValueError) as compiled:
        run_graph(graph, args)
    assert str(compiled.value) == str(eager.value)


# --- one mask, one count ---------------------------------------------------------------------


def _mask_on_both_sides(x: Any, row: Any) -> Any:
    z = x.copy()
    m = row > 0
    z[:, m] = row[m]
    return z


def _mask_written_twice(x: Any, row: Any) -> Any:
    z = x.copy()
    z[:, row > 0] = row[row > 0]
    return z


def _scaled_through_its_mask(x: Any, row: Any) -> Any:
    y = x.copy()
    y[y > 0] *= 2
    return y, x[x > 0] * y[x > 0]


def _mask_input_mutated_between(x: Any, row: Any) -> Any:
    earlier = row > 0
    row += 1.0
    z = x.copy()
    z[:, row > 0] = x[0, earlier].sum()
    return z, row


def _mask_itself_mutated_between(x: Any, row: Any) -> Any:
    m = row > 0
    first = row[m]
    m[0] = True
    return first, row[m]


@pytest.mark.parametrize(
    "fn",
    [
        _mask_on_both_sides,
        _mask_written_twice,
        _scaled_through_its_mask,
        _mask_input_mutated_between,
        _mask_itself_mutated_between,
    ],
)
def test_indexing_by_one_mask_twice_shares_its_count(fn: Any) -> None:
    # `z[m] = v[m]` broadcasts v[m] into the view z[m]: the two counts are one size (they
    # used to be two symbols, and the assignment a graph break); a mutation that may change
    # the mask in between keeps them apart.
    rng = np.random.default_rng(5)
    compiled = compile_function(fn, backend="eager", fullgraph=True)
    for size in (5, 5, 8):
        x, row = rng.standard_normal((3, size)), rng.standard_normal(size)
        row[0] = -1.0
        want = fn(x.copy(), row.copy())
        got = compiled(x, row)
        for a, b in zip(
            want if isinstance(want, tuple) else (want,),
            got if isinstance(got, tuple) else (got,),
            strict=True,
        ):
            np.testing.assert_array_equal(a, b)
