"""functionalize/run_functionalized against run_graph on the original graph: values, mutations,
aliasing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import aot_eager, functionalize, run_functionalized, trace_joint
from numpile_capture import OpKind, capture_function, run_graph, tree_flatten


def f_iadd(x, y):
    x += y
    return x * 2


def f_setitem(x, y):
    x[1:3] = y * 2
    return x.sum()


def f_view_iadd(x):
    v = x[::2]
    v += 1
    return v


def f_copyto(x, y):
    np.copyto(x, y)


def f_fill_transpose(x):
    x.fill(3.0)
    return x.T


def f_intermediate(x):
    a = x * 2
    a[0] = 5
    return a


def f_mask(x, m):
    x[m] = 0.0
    return x[x > 0]


def f_slice_2d(a):
    a[1:-1, 2:] = a[1:-1, 2:] * 3 + 1
    return a


def f_chain_views(x):
    v = x.reshape(3, 4)[:, 1:].T
    v *= -1.0
    return x.sum(), v


def f_read_after_write(x, y):
    t = x[1:]
    x += y
    return t + 0.0, x


def f_mixed_dtype(x, y):
    x += y  # float32 += float64: computed in float64, cast back
    return x


def f_int_idiv(x):
    x //= 2
    x[0] = -7
    return x


def f_two_mutations(x):
    x[0] = 1.0
    x[1:] += x[:-1]
    return x[1:]


def f_element(x):
    x[1, 2] = 9.0
    return x[1, 2] + x[0, 0]


def f_no_mutation(x, y):
    return x.T, np.sin(y)


def f_intermediate_view(x):
    a = x + 1.0
    v = a[::2]
    a *= 2.0
    return v


CASES: list[tuple[Callable[..., Any], Callable[[], tuple[Any, ...]]]] = [
    (f_iadd, lambda: (np.arange(3.0), np.ones(3))),
    (f_setitem, lambda: (np.arange(5.0), np.ones(2))),
    (f_view_iadd, lambda: (np.arange(6.0),)),
    (f_copyto, lambda: (np.ones(3), np.arange(3.0))),
    (f_fill_transpose, lambda: (np.ones((2, 3)),)),
    (f_intermediate, lambda: (np.arange(3.0),)),
    (f_mask, lambda: (np.arange(-1.0, 2.0), np.array([True, False, False]))),
    (f_slice_2d, lambda: (np.arange(20.0).reshape(4, 5),)),
    (f_chain_views, lambda: (np.arange(12.0),)),
    (f_read_after_write, lambda: (np.arange(4.0), np.ones(4))),
    (f_mixed_dtype, lambda: (np.linspace(0, 1, 5, dtype=np.float32), np.full(5, 0.1))),
    (f_int_idiv, lambda: (np.arange(6, dtype=np.int16),)),
    (f_two_mutations, lambda: (np.arange(5.0),)),
    (f_element, lambda: (np.arange(12.0).reshape(3, 4),)),
    (f_no_mutation, lambda: (np.ones((2, 3)), np.arange(2.0))),
    (f_intermediate_view, lambda: (np.arange(6.0),)),
]


def _inputs(result: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> list[Any]:
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    local = dict(zip(names, args, strict=True))
    return [source.get(local, {}, None) for source in result.input_sources]


def _check_same(expected: Any, got: Any, expected_inputs: list[Any], got_inputs: list[Any]) -> None:
    expected_leaves, expected_spec = tree_flatten(expected)
    got_leaves, got_spec = tree_flatten(got)
    assert expected_spec == got_spec
    for want, have in zip(expected_leaves, got_leaves, strict=True):
        if want is None:
            assert have is None
            continue
        want_array, have_array = np.asarray(want), np.asarray(have)
        assert want_array.dtype == have_array.dtype
        np.testing.assert_array_equal(have_array, want_array)
        # NOTE: an output aliases an input compiled exactly when it does eagerly.
        for want_input, have_input in zip(expected_inputs, got_inputs, strict=True):
            if isinstance(want, np.ndarray) and isinstance(want_input, np.ndarray):
                assert np.shares_memory(want, want_input) == np.shares_memory(have, have_input)
    for want_input, have_input in zip(expected_inputs, got_inputs, strict=True):
        np.testing.assert_array_equal(have_input, want_input)


@pytest.mark.parametrize(("fn", "make"), CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_functionalized_matches_original(fn: Callable[..., Any], make: Any) -> None:
    result = capture_function(fn, make(), {})
    functional = functionalize(result.graph)
    assert all(node.op is None or not node.op.mutates for node in functional.graph.nodes)
    expected_inputs = _inputs(result, fn, make())
    got_inputs = _inputs(result, fn, make())
    expected = run_graph(result.graph, expected_inputs)
    got = run_functionalized(functional, got_inputs)
    _check_same(expected, got, expected_inputs, got_inputs)


@pytest.mark.parametrize(("fn", "make"), CASES[:6], ids=[fn.__name__ for fn, _ in CASES[:6]])
def test_aot_eager_backend_matches_numpy(fn: Callable[..., Any], make: Any) -> None:
    result = capture_function(fn, make(), {})
    eager_args = make()
    expected = fn(*eager_args)
    args = make()
    inputs = _inputs(result, fn, args)
    got = aot_eager(result.graph, inputs)(*inputs)
    _check_same(expected, got, list(eager_args), list(args))


def test_pure_graph_reports_write_backs_and_aliases() -> None:
    result = capture_function(f_view_iadd, (np.arange(6.0),), {})
    functional = functionalize(result.graph)
    assert functional.mutated_inputs == ((0, 1),)
    (alias,) = functional.output_aliases
    assert (alias.output, alias.input) == (0, 0)
    assert alias.views[0][0] == "getitem"
    assert {node.op.kind for node in functional.graph.nodes if node.op} <= {
        OpKind.VIEW,
        OpKind.POINTWISE,
        OpKind.EXTERN,
    }


def test_mutation_through_read_only_view_raises_like_numpy() -> None:
    def f(x):
        d = np.broadcast_to(x, (2, 3))
        d += 1.0
        return d

    result = capture_function(f, (np.ones(3),), {})
    with pytest.raises(ValueError, match="read-only"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="read-only"):
        run_functionalized(functionalize(result.graph), [np.ones(3)])


def test_aliased_inputs_fall_back_to_the_original_graph() -> None:
    def f(x, y):
        x += y
        return x

    base = np.arange(5.0)
    result = capture_function(f, (np.arange(4.0), np.arange(4.0)), {})
    functional = functionalize(result.graph)
    expected_base = np.arange(5.0)
    f(expected_base[1:], expected_base[:-1])
    run_functionalized(functional, [base[1:], base[:-1]])
    np.testing.assert_array_equal(base, expected_base)


def f_log_in_place(x):
    x += 1.0
    return np.log(x)


def test_functionalized_and_joint_nodes_keep_the_users_lines() -> None:
    # NumPy's warnings from the rewritten graphs name the lines the ops came from.
    x = np.array([0.5, -3.0])
    graph = capture_function(f_log_in_place, (x.copy(),), {}).graph
    pure = functionalize(graph).graph
    first = f_log_in_place.__code__.co_firstlineno
    lines = {line.lineno for line in pure.locations.values()}
    assert lines == {first + 1, first + 2}
    ops = [node for node in pure.nodes if node.op is not None]
    assert all(node in pure.locations for node in ops)
    joint = trace_joint(lambda v: np.log(v).sum(), np.ones(2)).graph
    log = next(node for node in joint.nodes if node.op is not None and node.op.name == "log")
    assert joint.locations[log].filename == __file__


def f_write_at(x, v, i):
    x[i] = v * 2
    return x.sum() + x[i - 1] * 3


@pytest.mark.parametrize("i", [0, 2, -1])
def test_a_write_at_a_run_time_index_is_functionalized(i: int) -> None:
    # `x[i] = ...` with an unspecialized int (a resumed loop's index): `setitem_at`, whose
    # pure form is `setitem_at_scatter`; a read after it sees the write (the view's scalars
    # are replayed); the input is written back as eager writes it.
    from numpile_capture.dynamic_shapes import DynamicPolicy, capturing_with

    def make() -> tuple[Any, ...]:
        return (np.arange(8.0).reshape(4, 2), np.array([1.0, -1.0]), 1)

    with capturing_with(DynamicPolicy(True)):
        result = capture_function(f_write_at, make(), {})
    functional = functionalize(result.graph)
    assert "setitem_at_scatter" in str(functional.graph)
    eager_args = (*make()[:2], i)
    expected = f_write_at(*eager_args)
    args = (*make()[:2], i)
    inputs = _inputs(result, f_write_at, args)
    got = aot_eager(result.graph, inputs)(*inputs)
    _check_same(expected, got, list(eager_args[:2]), list(args[:2]))


def f_add_at(x, i):
    x[i] += 1  # an in-place op on a view by a run-time index: no pure form yet
    return x[i] * 2


def test_an_in_place_op_on_a_view_by_a_run_time_index_compiles_static() -> None:
    from numpile_capture import compile_function

    compiled = compile_function(f_add_at, backend="aot_eager")
    for i in (0, 1, 2, -1):
        got_x, want_x = np.arange(4.0), np.arange(4.0)
        _check_same(f_add_at(want_x, i), compiled(got_x, i), [want_x], [got_x])
