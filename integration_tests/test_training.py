"""Training through the whole stack: gradients compiled by the inductor, the MLP example, errors.

Gradients from `numpile.grad` / `value_and_grad` / `vjp` compiled with the
inductor (`compiler="inductor"`) are compared with the same transforms run op
by op with NumPy (`compiler="eager"`, `run_graph`). Tolerance: the inductor
fuses reductions and may sum in another order, so float64 gradients agree to
`rtol=1e-10, atol=1e-12` and float32 ones to `rtol=2e-4, atol=1e-6` (the
benchmark suite's float32 tolerance); pointwise-only graphs agree to a few ulp.

The training example `docs/training.py` runs here at a small size and must
reduce the loss of its MLP at least twentyfold.
"""

from __future__ import annotations

import importlib.util
import pathlib
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import numpile

_DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
_TOLERANCE = {
    np.dtype(np.float64): {"rtol": 1e-10, "atol": 1e-12},
    np.dtype(np.float32): {"rtol": 2e-4, "atol": 1e-6},
}


def _load_training_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("numpile_docs_training", _DOCS / "training.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_trees_close(got: Any, want: Any) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want)
        for key in want:
            _assert_trees_close(got[key], want[key])
        return
    if isinstance(want, tuple | list):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_trees_close(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_allclose(got, want, **_TOLERANCE[want.dtype])


# --- differentiated functions -----------------------------------------------------------------


def mlp_loss(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> Any:
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    h = np.tanh(h @ params["w2"] + params["b2"])
    return np.mean((h @ params["w3"] - y) ** 2)


def softmax_layernorm_loss(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    mean = p.mean(axis=1, keepdims=True)
    centered = p - mean
    var = (centered * centered).mean(axis=1, keepdims=True)
    out = centered / np.sqrt(var + 1e-5) * gamma + beta
    return np.sum(out * out * np.linspace(0.0, 1.0, x.shape[1]).astype(x.dtype))


def pointwise_chain_loss(a: np.ndarray, b: np.ndarray) -> Any:
    c = np.sin(a) * b + 1.0
    c = c * c - np.exp(-b) / (1.0 + a * a)
    return np.sum(np.tanh(c) * np.sqrt(np.abs(b) + 1.0))


def _mlp_args(rng: np.random.Generator, dtype: Any) -> tuple[Any, ...]:
    params = {
        "w1": rng.standard_normal((6, 16)) / np.sqrt(6),
        "b1": 0.1 * rng.standard_normal(16),
        "w2": rng.standard_normal((16, 16)) / 4.0,
        "b2": np.zeros(16),
        "w3": rng.standard_normal((16, 1)) / 4.0,
    }
    x = rng.standard_normal((32, 6))
    y = rng.standard_normal((32, 1))
    return (
        {k: v.astype(dtype) for k, v in params.items()},
        x.astype(dtype),
        y.astype(dtype),
    )


def _softmax_args(rng: np.random.Generator, dtype: Any) -> tuple[Any, ...]:
    x = rng.standard_normal((8, 24))
    return (
        x.astype(dtype),
        (1.0 + 0.1 * rng.standard_normal(24)).astype(dtype),
        (0.1 * rng.standard_normal(24)).astype(dtype),
    )


def _chain_args(rng: np.random.Generator, dtype: Any) -> tuple[Any, ...]:
    return tuple(rng.standard_normal((5, 7)).astype(dtype) for _ in range(2))


CASES: dict[str, tuple[Callable[..., Any], Callable[..., tuple[Any, ...]], tuple[int, ...]]] = {
    "mlp": (mlp_loss, _mlp_args, (0,)),
    "softmax_layernorm": (softmax_layernorm_loss, _softmax_args, (0, 1, 2)),
    "pointwise_chain": (pointwise_chain_loss, _chain_args, (0, 1)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(CASES))
def test_inductor_gradients_match_run_graph(name: str, dtype: Any) -> None:
    fn, make, argnums = CASES[name]
    args = make(np.random.default_rng(7), dtype)
    eager = numpile.value_and_grad(fn, argnums=argnums, compiler="eager")
    compiled = numpile.value_and_grad(fn, argnums=argnums, compiler="inductor")
    want = eager(*args)
    _assert_trees_close(compiled(*args), want)
    # a second call reuses the compiled pair on new values
    args = make(np.random.default_rng(8), dtype)
    _assert_trees_close(compiled(*args), eager(*args))
    assert np.asarray(want[0]).dtype == dtype


def test_inductor_vjp_runs_the_backward_later() -> None:
    def f(x: np.ndarray, w: np.ndarray) -> Any:
        h = np.tanh(x @ w)
        return h / np.sqrt(np.sum(h * h, axis=1, keepdims=True) + 1.0), np.sum(h)

    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 4)), rng.standard_normal((4, 5))
    cotangent = (rng.standard_normal((6, 5)), np.float64(0.5))
    out_e, vjp_e = numpile.vjp(f, x, w, compiler="eager")
    out_c, vjp_c = numpile.vjp(f, x, w, compiler="inductor")
    _assert_trees_close(out_c, out_e)
    x[:] = 0.0  # the backward runs from saved values only
    _assert_trees_close(vjp_c(cotangent), vjp_e(cotangent))


def test_training_example_converges() -> None:
    training = _load_training_example()
    losses, _ = training.train(steps=150, size=16, samples=64)
    assert np.isfinite(losses).all()
    assert losses[-1] < losses[0] / 20
    assert all(np.isfinite(loss) for loss in losses)


def test_training_example_same_trajectory_compiled_and_eager() -> None:
    training = _load_training_example()
    compiled, _ = training.train(steps=40, size=16, samples=64, compiler="inductor")
    eager, _ = training.train(steps=40, size=16, samples=64, compiler="eager")
    # float32 training: rounding differences grow slowly over the steps
    np.testing.assert_allclose(compiled, eager, rtol=1e-3)
    assert compiled[-1] < compiled[0] / 4


def test_training_example_compiled_step_same_trajectory() -> None:
    # numpile.compile(value_and_grad(...)): forward and backward traced into one graph.
    training = _load_training_example()
    one_graph, _ = training.train(steps=40, size=16, samples=64, compile_step=True)
    eager, _ = training.train(steps=40, size=16, samples=64, compiler="eager")
    np.testing.assert_allclose(one_graph, eager, rtol=1e-3)
    assert one_graph[-1] < one_graph[0] / 4


def test_training_example_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    training = _load_training_example()
    assert training.main(["--steps", "60", "--size", "8", "--samples", "32"]) == 0
    printed = capsys.readouterr().out
    assert "ms per step" in printed
    assert printed.count("step ") >= 10


def _helper_with_a_break(x: np.ndarray) -> Any:
    y = np.cos(x) * 2.0
    print("debugging", end="")  # the graph break the error must name
    return y


def test_graph_break_on_the_differentiated_path_is_a_clear_error() -> None:
    def loss(x: np.ndarray) -> Any:
        return np.sum(_helper_with_a_break(x) ** 2)

    line = _helper_with_a_break.__code__.co_firstlineno + 2
    for transform in (numpile.grad, numpile.value_and_grad):
        with pytest.raises(TypeError, match="graph break") as info:
            transform(loss)(np.ones(3))
        assert f"{__file__}:{line}" in str(info.value)
        assert "print" in str(info.value)
    with pytest.raises(TypeError, match=f"graph break at .*:{line}"):
        numpile.vjp(loss, np.ones(3))


def test_transforms_inside_and_around_compile_give_the_same_values() -> None:
    grad_fn = numpile.grad(pointwise_chain_loss, argnums=(0, 1))
    args = _chain_args(np.random.default_rng(1), np.float64)
    want = grad_fn(*args)

    def inside(a: np.ndarray, b: np.ndarray) -> Any:
        ga, gb = grad_fn(a, b)
        return ga + 2.0 * gb

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # either may fall back to running eagerly
        got_inside = numpile.compile(inside)(*args)
        got_around = numpile.compile(grad_fn)(*args)
    np.testing.assert_allclose(got_inside, want[0] + 2.0 * want[1], rtol=1e-12)
    _assert_trees_close(got_around, want)
