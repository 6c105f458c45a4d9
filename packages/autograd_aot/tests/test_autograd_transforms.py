"""grad / value_and_grad / vjp over pytrees, caching, capture errors, partitions, MLP training."""

from __future__ import annotations

import numpy as np
import pytest

from numpile_autograd_aot import (
    CaptureError,
    build_joint,
    default_partition,
    functionalize,
    grad,
    min_cut_partition,
    saved_bytes,
    value_and_grad,
    vjp,
)
from numpile_capture import capture_function, run_graph


def _numeric_grad(fn, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    result = np.zeros_like(x)
    for i in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus.flat[i] += step
        minus.flat[i] -= step
        result.flat[i] = (fn(plus) - fn(minus)) / (2 * step)
    return result


def mlp_loss(params, x, y):
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]
    return np.mean((out - y) ** 2)


def _mlp_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "w1": rng.normal(size=(3, 8)) * 0.5,
        "b1": np.zeros(8),
        "w2": rng.normal(size=(8, 1)) * 0.5,
        "b2": np.zeros(1),
    }


def test_grad_matches_finite_differences_over_a_dict() -> None:
    rng = np.random.default_rng(0)
    params = _mlp_params(rng)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 1))
    grads = grad(mlp_loss)(params, x, y)
    assert list(grads) == list(params)
    for key, value in params.items():

        def partial(v, key=key):
            return mlp_loss({**params, key: v}, x, y)

        np.testing.assert_allclose(grads[key], _numeric_grad(partial, value), atol=1e-6)


def test_value_and_grad_argnums_tuple_and_list_pytrees() -> None:
    def f(pair, scale):
        a, b = pair
        return np.sum(a * b) * scale

    a, b = np.arange(3.0), np.ones(3)
    value, (g_pair, g_scale) = value_and_grad(f, argnums=(0, 1))([a, b], 2.0)
    assert value == pytest.approx(6.0)
    np.testing.assert_allclose(g_pair[0], 2 * b)
    np.testing.assert_allclose(g_pair[1], 2 * a)
    assert isinstance(g_pair, list)
    assert float(g_scale) == pytest.approx(3.0)


def test_has_aux_and_integer_leaves() -> None:
    def f(x, n):
        y = np.sin(x) * n
        return np.sum(y), y

    g, aux = grad(f, argnums=(0, 1), has_aux=True)(np.zeros(2), np.array([1, 2]))
    np.testing.assert_allclose(g[0], [1.0, 2.0])
    assert g[1] is None
    np.testing.assert_allclose(aux, [0.0, 0.0])


def test_vjp_runs_backward_later_from_saved_values() -> None:
    x = np.linspace(-1, 1, 4)
    out, vjp_fn = vjp(lambda v, w: (np.exp(v) * w, np.sum(v)), x, np.full(4, 2.0))
    x[:] = 100.0  # the backward must not read the caller's arrays again
    gx, gw = vjp_fn((np.ones(4), np.asarray(1.0)))
    original = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(out[0], np.exp(original) * 2)
    np.testing.assert_allclose(gx, np.exp(original) * 2 + 1)
    np.testing.assert_allclose(gw, np.exp(original))


def test_gradient_through_mutation_and_unused_input() -> None:
    def f(x, unused):
        y = x * 1.0
        y[1:] += x[:-1]
        return np.sum(y**2)

    x = np.array([1.0, 2.0, 3.0])
    gx, gu = grad(f, argnums=(0, 1))(x, np.ones(2))
    np.testing.assert_allclose(gx, _numeric_grad(lambda v: f(v, None), x), atol=1e-6)
    np.testing.assert_array_equal(gu, np.zeros(2))


def test_cache_reuses_plan_until_guards_fail() -> None:
    calls = []

    def compiler(graph, example_inputs):
        calls.append(len(graph.nodes))
        return lambda *xs: run_graph(graph, xs)

    g = grad(lambda x: np.sum(x**3), compiler=compiler)
    np.testing.assert_allclose(g(np.ones(3)), np.full(3, 3.0))
    np.testing.assert_allclose(g(np.full(3, 2.0)), np.full(3, 12.0))
    assert len(calls) == 2  # forward + backward once
    g(np.ones(4))  # a new shape: recapture
    assert len(calls) == 4


def test_capture_failure_names_the_line() -> None:
    def f(x):
        print("side effect")
        return np.sum(x)

    with pytest.raises(CaptureError, match=r"test_autograd_transforms.py:\d+"):
        grad(f)(np.ones(2))


def test_grad_needs_a_scalar_output() -> None:
    with pytest.raises(TypeError, match="scalar"):
        grad(lambda x: x * 2)(np.ones(2))


def test_mlp_trains_with_value_and_grad() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3))
    y = np.sin(x @ np.array([[1.0], [-2.0], [0.5]]))
    params = _mlp_params(rng)
    step = value_and_grad(mlp_loss)
    first, _ = step(params, x, y)
    for _ in range(300):
        loss, grads = step(params, x, y)
        params = {k: params[k] - 0.1 * grads[k] for k in params}
    assert loss < 0.2 * first


# --- partitions ------------------------------------------------------------------------------


def softmax_layernorm(x, gamma):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    p = e / np.sum(e, axis=-1, keepdims=True)
    mu = np.mean(p, axis=-1, keepdims=True)
    var = np.var(p, axis=-1, keepdims=True)
    return np.sum(((p - mu) / np.sqrt(var + 1e-5) * gamma) ** 2)


def pointwise_chain(x):
    y = x
    for _ in range(10):
        y = np.sin(y) * 1.5 + 0.1
    return np.sum(y)


def relu_mlp_loss(params, x, y):
    hidden = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    out = hidden @ params["w2"] + params["b2"]
    return np.mean((out - y) ** 2)


def _mlp_args():
    rng = np.random.default_rng(0)
    return (_mlp_params(rng), rng.normal(size=(16, 3)), rng.normal(size=(16, 1)))


PROGRAMS = [
    (relu_mlp_loss, _mlp_args, (0,)),
    (
        softmax_layernorm,
        lambda: (np.random.default_rng(0).normal(size=(8, 16)), np.ones(16)),
        (0, 1),
    ),
    (pointwise_chain, lambda: (np.random.default_rng(0).normal(size=(32,)),), (0,)),
]


def _joint(fn, make, argnums):
    args = make()
    result = capture_function(fn, args, {}, keep_loops=False)  # as grad captures
    functional = functionalize(result.graph)
    names = [s.name for s in result.input_sources]
    param_names = fn.__code__.co_varnames
    diff = [
        i
        for i, n in enumerate(names)
        if any(n.startswith(f"L[{param_names[a]!r}]") for a in argnums)
    ]
    joint = build_joint(functional.graph, diff, (0,))
    local = dict(zip(param_names, args, strict=False))
    return joint, [s.get(local, {}, None) for s in result.input_sources]


@pytest.mark.parametrize(("fn", "make", "argnums"), PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_min_cut_saves_fewer_bytes_and_gives_the_same_gradients(fn, make, argnums) -> None:
    joint, inputs = _joint(fn, make, argnums)
    default = default_partition(joint)
    min_cut = min_cut_partition(joint)
    assert saved_bytes(min_cut) < saved_bytes(default)
    results = []
    for part in (default, min_cut):
        forward = run_graph(part.forward, inputs)
        saved = forward[part.num_fw_outputs :]
        grads = run_graph(part.backward, [*saved, np.ones(())])
        results.append((forward[0], grads))
    _, reference_grads = run_graph(joint.graph, [*inputs, np.ones(())])
    for value, grads in results:
        assert value == pytest.approx(results[0][0])
        for got, want in zip(grads, reference_grads, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_memory_budget_recomputes_reductions() -> None:
    joint, _ = _joint(*PROGRAMS[1])
    full = saved_bytes(min_cut_partition(joint))
    tight = saved_bytes(min_cut_partition(joint, memory_budget=0.0))
    assert tight <= full
