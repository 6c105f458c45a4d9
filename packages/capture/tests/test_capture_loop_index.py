"""The loop index as a bounded size symbol (loop_index.py): slice lengths against Python's
own slices, simplification under the bounds, and graphs whose shapes depend on the index."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_capture import capture_function, compile_function, explain
from numpile_capture.loop_index import index_scope, range_bounds, slice_length
from numpile_guards import LoopIndexGuard, ShapeEnv

_BOUND = st.one_of(st.none(), st.tuples(st.integers(-2, 2), st.integers(-12, 12)))


def _value(bound: tuple[int, int] | None, i: Any) -> Any:
    return None if bound is None else bound[0] * i + bound[1]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_BOUND, _BOUND, st.sampled_from([-3, -2, -1, 1, 2, 3]))
def test_symbolic_slice_length_is_python_slice_length(
    start: tuple[int, int] | None, stop: tuple[int, int] | None, step: int
) -> None:
    # for i in range(n): x[a*i + b : c*i + d : step], for every n >= 2 and every i.
    env = ShapeEnv()
    n = env.create_symbol(6, "L['x'].shape[0]")
    with index_scope(env, 0, n - 1) as i:
        length = slice_length(n, _value(start, i), _value(stop, i), step, env)
        for size in (2, 3, 6, 9):
            for index in range(size):
                item = slice(_value(start, index), _value(stop, index), step)
                want = len(range(*item.indices(size)))
                got = sympy.sympify(length).xreplace(
                    {n: sympy.Integer(size), i: sympy.Integer(index)}
                )
                assert int(got) == want, (item, size, length)


def test_bounds_remove_clamps_they_prove() -> None:
    env = ShapeEnv()
    n = env.create_symbol(8, "L['x'].shape[0]")
    with index_scope(env, *range_bounds(0, n, 1)) as i, index_scope(env, 0, i - 1) as j:
        assert slice_length(n, None, j, 1, env) == j  # A[i, :j]
        assert slice_length(n, i + 1, None, 1, env) == n - i - 1  # U[i, i + 1:]
        assert slice_length(n, j, None, -1, env) == j + 1  # r[j::-1]
        unproven = slice_length(n, None, j - 3, 1, env)  # j - 3 may be negative
        assert isinstance(unproven, sympy.Basic) and unproven.has(sympy.Piecewise)


def test_range_bounds_for_each_sign_of_step() -> None:
    assert range_bounds(2, 9, 3) == (2, 8)
    assert range_bounds(9, 2, -1) == (3, 9)
    assert range_bounds(0, 5, sympy.Symbol("k")) == (None, None)


def test_a_relation_the_bounds_do_not_decide_is_no_guard() -> None:
    env = ShapeEnv()
    n = env.create_symbol(8, "L['x'].shape[0]")
    with index_scope(env, 0, n - 1) as i:
        assert env.evaluate(sympy.Lt(i, n))
        with pytest.raises(LoopIndexGuard, match="i0"):
            env.evaluate(sympy.Eq(i, 3))
    assert [guard.text for guard in env.produce_guards()] == ["L['x'].shape[0] >= 2"]


def _triangular(a: Any) -> Any:
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            a[i, j] = (a[i, j] - a[i, :j] @ a[:j, j]) / a[j, j]
    return a


def test_graph_shapes_follow_the_index() -> None:
    text = str(capture_function(_triangular, (np.ones((5, 5)),), {}).graph)
    assert "getitem_at(a, i, j, index=(scalars[0], slice(None, scalars[1], None)))" in text
    assert "# float64[i1]\n" in text and "# float64[i1]{5}\n" in text


def _suffixes(x: Any) -> Any:
    n = x.shape[0]
    s = 0.0
    for i in range(n - 1, -1, -1):
        s += (x[i:] * x[: n - i][::-1]).sum() + x[i + 2 : n + 5].sum()
    return s


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_index_sliced_loops_match_eager(n: int) -> None:
    a = np.arange(float(n * n)).reshape(n, n) + 10 * np.eye(n)
    assert explain(_triangular)(a.copy()).loops_not_kept == ()
    np.testing.assert_allclose(compile_function(_triangular, backend="eager")(a.copy()),
                               _triangular(a.copy()))  # fmt: skip
    x = np.arange(float(n))
    assert compile_function(_suffixes, backend="eager")(x) == _suffixes(x)


def _time_steps(x: Any, steps: int) -> Any:
    acc = x.copy()
    for _ in range(steps):  # an index nothing reads: no symbol
        for j in range(x.shape[0]):  # read: i1, as at depth 1 before
            acc[j] = acc[j] * 0.5 + x[:j].sum()
    return acc


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_a_loop_whose_index_is_never_read_is_kept_and_inner_indices_keep_their_depth(
    steps: int,
) -> None:
    x = np.arange(5.0)
    assert explain(_time_steps)(x, steps).loops_not_kept == ()
    text = str(capture_function(_time_steps, (x, steps), {}).graph)
    assert "getitem_at(x, j, index=(slice(None, scalars[0], None),))  # float64[i1]" in text
    got = compile_function(_time_steps, backend="eager")(x, steps)
    np.testing.assert_array_equal(got, _time_steps(x, steps))


def test_an_unread_index_scope_makes_no_symbol_and_pushes_nothing() -> None:
    env = ShapeEnv()
    n = env.create_symbol(8, "L['x'].shape[0]")
    with index_scope(env, 0, n - 1, read=False) as unread, index_scope(env, 0, n - 1) as j:
        assert unread is None and str(j) == "i1"
        assert env.decide(sympy.Lt(j, n)) is True
    assert env.decide(sympy.Lt(j, n)) is None  # popped with its scope
