"""Gradients and loops: a `for_loop` with array carries has a VJP (a loop stacking the
carried values, then a reverse loop: numpile_autograd_aot/vjp_loop.py); a loop without one
(a while loop, a loop that breaks) makes grad unroll, and a loop node whose VJP is not
built is an error naming the loop and its line, never a wrong gradient."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import build_joint, config, functionalize, grad
from numpile_capture import ArrayMeta, capture_function, run_graph


def polynomial(x: Any) -> Any:
    y = x
    for _ in range(3):
        y = y * x + 1.0
    return y.sum()


def test_grad_through_a_range_loop_is_exact() -> None:
    x = np.arange(3.0)
    np.testing.assert_allclose(grad(polynomial)(x), 4 * x**3 + 2 * x + 1)


def _loop_ops(graph: Any) -> list[str]:
    return [n.op.name for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]


def test_joint_graph_of_a_loop_has_a_reverse_loop() -> None:
    # The joint graph of a kept loop holds the loop that stacks its carried values (and
    # gives the forward's results: the forward loop runs once) and the reverse loop: two
    # loop nodes, whatever the trip count.
    graph = capture_function(polynomial, (np.arange(3.0),), {}).graph
    assert _loop_ops(graph) == ["for_loop"]
    joint = build_joint(functionalize(graph).graph, (0,), (0,))
    assert _loop_ops(joint.graph) == ["for_loop"] * 2


def while_polynomial(x: Any) -> Any:
    y = x
    k = 0
    while k < 3:
        y = y * x + 1.0
        k += 1
    return y.sum()


def _doubling_loop(step: Any) -> Any:
    # x -> (x * 2 applied once per iteration of range(0, n, step)).sum(), n an input.
    from numpile_capture import Graph, ScalarMeta, add_loop, get_op

    body = Graph()
    body.placeholder("i", ScalarMeta(int))
    y = body.placeholder("y", ArrayMeta((3,), "float64"))
    body.output = (body.call(get_op("multiply"), y, 2.0),)
    graph = Graph()
    graph.placeholder("x", ArrayMeta((3,), "float64"))
    n = graph.placeholder("n", ScalarMeta(int))
    steps = step if isinstance(step, int) else graph.placeholder("step", ScalarMeta(int))
    (out,) = add_loop(graph, (0, n, steps), [graph.placeholders[0]], [], body, ())
    graph.output = (graph.call(get_op("sum"), out),)
    return graph


@pytest.mark.parametrize("step", [1, 3])
def test_joint_graph_of_a_loop_with_a_run_time_trip_count_stacks_as_many_rows(step: int) -> None:
    # The trip count is an input: the stacks take their length at run time, and one joint
    # graph serves every trip count (an empty loop included).
    joint = build_joint(_doubling_loop(step), (0,), (0,))
    assert _loop_ops(joint.graph) == ["for_loop"] * 2
    x = np.array([0.5, -1.0, 2.0])
    for n in (0, 1, 2, 7, 12):
        trips = len(range(0, n, step))
        (value,), (gradient,) = run_graph(joint.graph, [x, n, np.float64(1.0)])
        assert value == pytest.approx(x.sum() * 2.0**trips)
        np.testing.assert_array_equal(gradient, np.full(3, 2.0**trips))


def test_joint_graph_of_a_loop_without_a_vjp_names_the_loop() -> None:
    # A step known only at run time: no VJP built (the stacks' length needs its sign).
    with pytest.raises(NotImplementedError, match=r"grad through the loop .* a step known"):
        build_joint(_doubling_loop(None), (0,), (0,))


@pytest.mark.parametrize("steps", [0, 1, 2, 7])
def test_grad_through_a_kept_loop_equals_the_unrolled_one(steps: int) -> None:
    def recurrence(x: Any, w: Any) -> Any:
        h = x
        s = 0.0
        for i in range(1, 1 + 2 * steps, 2):
            h = np.tanh(h * w[i % 3] + x[i % 3])
            s = s + h[0] * i
        return h.sum() + s

    rng = np.random.default_rng(steps)
    x, w = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    kept = grad(recurrence, argnums=(0, 1), compiler="eager")(x, w)
    with config.patch(keep_loops=False):
        unrolled = grad(recurrence, argnums=(0, 1), compiler="eager")(x, w)
    for mine, want in zip(kept, unrolled, strict=True):
        np.testing.assert_allclose(mine, want, rtol=1e-12, atol=1e-14)


def test_a_loop_writing_an_array_in_place_is_unrolled() -> None:
    # Functionalization does not take a loop that writes an outer array in place: grad
    # captures the function again with the loop unrolled (the gradient of eager's program).
    def rows_in_place(a: Any) -> Any:
        b = a * 1.0
        for i in range(3):
            b[i + 1] = b[i] * 2.0 + b[i + 1]
        return (b * b).sum()

    a = np.random.default_rng(5).uniform(-1, 1, (4, 2))
    got = grad(rows_in_place, compiler="eager")(a)
    eps, want = 1e-6, np.zeros_like(a)
    for k in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[k] = eps
        want[k] = (rows_in_place(a + step) - rows_in_place(a - step)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def _branch_on_the_index(x: Any, steps: int) -> Any:
    h = x * 1.0
    for i in range(steps):
        if i % 3 == 0:  # noqa: SIM108 - the if statement is the construct tested
            h = h * np.cos(h) + x
        else:
            h = h + 0.5 * h * h
    return h.sum()


def _branch_on_a_value(x: Any, steps: int) -> Any:
    h = x * 1.0
    for _ in range(steps):
        if h.sum() > 0:  # noqa: SIM108 - the if statement is the construct tested
            h = np.sin(h) * x - 0.3
        else:
            h = h + 0.25
    return (h * h).sum()


def _central_differences(f: Any, x: Any, eps: float = 1e-6) -> Any:
    want = np.zeros_like(x)
    for k in range(x.size):
        step = np.zeros_like(x)
        step[k] = eps
        want[k] = (f(x + step) - f(x - step)) / (2 * eps)
    return want


@pytest.mark.parametrize("steps", [0, 1, 2, 7])
def test_grad_through_a_loop_with_an_if_keeps_the_loop_and_equals_the_unrolled_one(
    steps: int,
) -> None:
    # `cond` has a VJP (a `cond` of its branches' VJPs): the loop stays a loop.
    x = np.random.default_rng(steps).uniform(-0.8, 0.8, 3)
    graph = capture_function(_branch_on_the_index, (x, steps), {}).graph
    joint = build_joint(functionalize(graph).graph, (0,), (0,))
    assert 1 <= len(_loop_ops(joint.graph)) <= 2  # kept (stacking and reverse loop)
    kept = grad(_branch_on_the_index, compiler="eager")(x, steps)
    with config.patch(keep_loops=False):
        unrolled = grad(_branch_on_the_index, compiler="eager")(x, steps)
    np.testing.assert_allclose(kept, unrolled, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("steps", [0, 1, 2, 7, 1200])
def test_grad_through_a_loop_branching_on_a_value_matches_central_differences(
    steps: int,
) -> None:
    # An `if` on an array value cannot be unrolled (capture breaks on it): before `cond`
    # had a VJP, grad of this loop raised at any trip count.
    x = np.random.default_rng(steps).uniform(-0.8, 0.8, 3)
    got = grad(_branch_on_a_value, compiler="eager")(x, steps)
    want = _central_differences(lambda v: _branch_on_a_value(v, steps), x)
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
