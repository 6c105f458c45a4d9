"""Transforms called from captured code: forward and backward nodes in the caller's graph.

Checked with capture and `run_graph` only (no backend): the captured graph of
a function calling `grad` / `value_and_grad` / `vjp` computes what the eager
transform computes, and holds no transform call, only canonical ops.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import (
    append_backward,
    grad,
    input_cotangent,
    value_and_grad,
    vjp,
)
from numpile_capture import (
    ArrayMeta,
    Graph,
    Unsupported,
    capture_function,
    get_op,
    run_graph,
)
from numpile_guards import compile_fetch


def _loss(w: Any, x: Any) -> Any:
    return np.sum(np.tanh(x @ w) ** 2) + np.mean(w * w)


def _run_captured(fn: Any, *args: Any) -> tuple[Any, Graph]:
    result = capture_function(fn, args, {})
    local = dict(inspect.signature(fn).bind(*args).arguments)
    inputs = compile_fetch(result.input_sources)(local, fn.__globals__, fn)
    return run_graph(result.graph, list(inputs)), result.graph


def _arrays() -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return rng.normal(size=3), rng.normal(size=(4, 3))


def test_grad_traces_into_the_graph() -> None:
    w, x = _arrays()
    got, graph = _run_captured(lambda *args: grad(_loss)(*args), w, x)
    np.testing.assert_allclose(got, grad(_loss)(w, x), rtol=1e-13)
    names = [node.op.name for node in graph.nodes if node.op is not None]
    assert names[0] == "alias" and "ones" in names and names.count("matmul") == 2


def test_value_and_grad_with_argnums_and_aux() -> None:
    w, x = _arrays()

    def fn(a: Any, b: Any) -> Any:
        return np.sum(a * np.sin(b)), b * 2

    transform = value_and_grad(fn, argnums=(0, 1), has_aux=True)
    got, _ = _run_captured(lambda *args: transform(*args), w, x)
    want = transform(w, x)
    (value, aux), grads = got
    (want_value, want_aux), want_grads = want
    np.testing.assert_allclose(value, want_value, rtol=1e-13)
    np.testing.assert_array_equal(aux, want_aux)
    for g, expected in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, expected, rtol=1e-13)


def test_vjp_pullback_traces_into_the_graph() -> None:
    _, x = _arrays()

    def caller(a: Any, ct: Any) -> Any:
        out, pullback = vjp(lambda b: np.cos(b), a)
        return out, pullback(ct)

    got, _ = _run_captured(caller, x, np.ones_like(x))
    np.testing.assert_allclose(got[1][0], -np.sin(x), rtol=1e-13)


def test_integer_argument_gets_no_gradient() -> None:
    x = np.arange(3.0)
    got, _ = _run_captured(
        lambda a, n: grad(lambda b, m: np.sum(b * m), argnums=(0, 1))(a, n), x, np.arange(3)
    )
    np.testing.assert_array_equal(got[0], np.arange(3.0))
    assert got[1] is None


def test_mutating_function_is_unsupported_in_a_graph() -> None:
    def loss(w: Any) -> Any:
        w2 = w.copy()
        w2 += 1
        buffer = np.zeros(3)
        buffer[:] = w
        return np.sum(buffer * w2)

    with pytest.raises(Unsupported, match="writes to arrays"):
        capture_function(lambda a: grad(loss)(a), (np.ones(3),), {})


def test_append_backward_on_a_region() -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((3,), np.float64))
    start = len(graph.nodes)
    y = graph.call(get_op("sin"), x)
    total = graph.call(get_op("sum"), y)
    seed = graph.call(get_op("ones"), shape=(), dtype=np.float64)
    cotangents = append_backward(graph, graph.nodes[start:-1], [x], [(total, seed)])
    other = graph.placeholder("unused", ArrayMeta((2,), np.float64))
    graph.output = (input_cotangent(graph, cotangents, x), input_cotangent(graph, {}, other))
    value = np.linspace(0.0, 1.0, 3)
    got, zeros = run_graph(graph, [value, np.ones(2)])
    np.testing.assert_allclose(got, np.cos(value), rtol=1e-15)
    np.testing.assert_array_equal(zeros, np.zeros(2))


def _penalized(w: Any, x: Any, lam: Any) -> Any:
    return np.sum((x @ w) ** 2) + lam * np.sum(w * w)


def test_scalar_inputs_pass_through_a_transform_unspecialized() -> None:
    # A changing Python float handed to grad inside a compiled step stays a graph input;
    # differentiating with respect to it reads (specializes) its value.
    from numpile_capture import compile_function, reset
    from numpile_capture.capture_events import recording_captures

    reset()
    w, x = _arrays()

    def step(w: Any, x: Any, lr: Any, lam: Any) -> Any:
        return w - lr * grad(_penalized)(w, x, lam), grad(_penalized, argnums=2)(w, x, lam)

    compiled = compile_function(step, backend="eager")
    with recording_captures() as events:
        for k in range(5):
            lr, lam = 0.1 / (k + 1), 0.01 * k
            got, want = compiled(w, x, lr, lam), step(w, x, lr, lam)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
            np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    assert len(events) == 5  # lam specialized by argnums=2: one entry per value
    reset()

    def plain_step(w: Any, x: Any, lr: Any, lam: Any) -> Any:
        return w - lr * grad(_penalized)(w, x, lam)

    compiled = compile_function(plain_step, backend="eager")
    with recording_captures() as events:
        for k in range(5):
            lr, lam = 0.1 / (k + 1), 0.01 * k
            got = compiled(w, x, lr, lam)
            np.testing.assert_allclose(got, plain_step(w, x, lr, lam), rtol=1e-13)
    assert len(events) == 1  # float arguments are graph inputs from the first compile
    reset()


def _recurrence(x: Any, n: int) -> Any:
    h = x
    for _ in range(n):
        h = np.tanh(h * 0.7 + 0.1)
    return np.sum(h * h)


def _breaking(x: Any, n: int) -> Any:
    h = x
    for i in range(n):
        h = np.sin(h) * 0.9
        if i == 3:
            break
    return np.sum(h)


def _loop_ops(graph: Graph) -> list[str]:
    return [n.op.name for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]


@pytest.mark.parametrize("n", [0, 1, 6, 200])
def test_grad_keeps_the_loop_it_traces(n: int) -> None:
    # Two loop nodes whatever the trip count: the loop stacking the carried values, which
    # stands for the forward loop (it runs once), and the reverse loop (at 0 iterations,
    # the forward loop alone).
    x = np.random.default_rng(n).uniform(-1, 1, 3)
    got, graph = _run_captured(lambda x, n: value_and_grad(_recurrence)(x, n), x, n)
    want = value_and_grad(_recurrence, compiler="eager")(x, n)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-15)
    assert _loop_ops(graph) == (["for_loop"] if n == 0 else ["for_loop", "for_loop"])
    assert len(graph.nodes) < 40


def test_vjp_keeps_the_loop_it_traces() -> None:
    x = np.random.default_rng(2).uniform(-1, 1, 3)

    def caller(x: Any) -> Any:
        out, pullback = vjp(lambda v: _recurrence(v, 300), x)
        return out, pullback(1.5)

    got, graph = _run_captured(caller, x)
    out, pullback = vjp(lambda v: _recurrence(v, 300), x, compiler="eager")
    assert got[0] == out
    np.testing.assert_allclose(got[1][0], pullback(1.5)[0], rtol=1e-13, atol=1e-15)
    # The stacking loop (which gives the forward's results: the forward runs once) and the
    # reverse loop.
    assert len(_loop_ops(graph)) == 2


def test_a_loop_without_a_vjp_is_traced_again_unrolled() -> None:
    # A `break` has no loop VJP: the region is traced again with the loop unrolled.
    x = np.random.default_rng(3).uniform(-1, 1, 3)
    got, graph = _run_captured(lambda x: grad(_breaking)(x, 10), x)
    np.testing.assert_allclose(got, grad(_breaking, compiler="eager")(x, 10), rtol=1e-13)
    assert _loop_ops(graph) == []
    ops = [n.op.name for n in graph.nodes if n.op is not None]
    assert (ops.count("sin"), ops.count("cos")) == (4, 4)
