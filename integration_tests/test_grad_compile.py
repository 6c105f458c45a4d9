"""Transforms and `numpile.compile` together, checked against the eager transforms.

Three placements of `numpile.grad` / `value_and_grad` / `vjp` around and
inside `numpile.compile`, each compared with the same transform run eagerly
(`compiler="eager"`: capture, partition, `run_graph`):

- `numpile.compile(numpile.grad(f))`: the wrapper is compiled; its graph holds
  the forward and the backward of `f`;
- a compiled function that calls `numpile.grad(f)(x)`: the transform traces
  into the caller's graph (one graph, no break);
- `numpile.grad(numpile.compile(f))`: the compiled function's graph is
  differentiated (forward and backward compiled with its backend).

A graph break on the differentiated path raises `CaptureError` naming the
break and its line, in every placement. Tolerances are those of
test_training.py (the inductor may sum in another order).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile
from numpile_autograd_aot import CaptureError

_TOLERANCE = {
    np.dtype(np.float64): {"rtol": 1e-10, "atol": 1e-12},
    np.dtype(np.float32): {"rtol": 2e-4, "atol": 1e-6},
}


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
    if want is None:
        assert got is None
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_allclose(got, want, **_TOLERANCE[want.dtype])


def _mlp_loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    return np.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def _softmax_loss(w: Any, x: Any) -> Any:
    z = x @ w
    z = z - np.max(z, axis=1, keepdims=True)
    p = np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True)
    return -np.sum(np.log(p[:, 0]))


def _aux_loss(w: Any, x: Any) -> Any:
    z = np.sin(x * w)
    return np.sum(z**2), np.max(z)


def _scaled_loss(w: Any, scale: Any, x: Any) -> Any:
    return np.sum(np.cos(w * scale) * x)


def _mlp_args(dtype: Any = np.float64) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(3, 8)).astype(dtype),
        "b1": rng.normal(size=8).astype(dtype),
        "w2": rng.normal(size=(8, 2)).astype(dtype),
        "b2": np.zeros(2, dtype),
    }
    return params, rng.normal(size=(16, 3)).astype(dtype), rng.normal(size=(16, 2)).astype(dtype)


def _rng_arrays(*shapes: tuple[int, ...]) -> tuple[Any, ...]:
    rng = np.random.default_rng(1)
    return tuple(rng.normal(size=shape) for shape in shapes)


# (name, transform maker, function, arguments)
_CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = [
    ("grad_mlp", lambda f, **kw: numpile.grad(f, **kw), _mlp_loss, _mlp_args()),
    ("grad_mlp_f32", lambda f, **kw: numpile.grad(f, **kw), _mlp_loss, _mlp_args(np.float32)),
    (
        "value_and_grad_mlp",
        lambda f, **kw: numpile.value_and_grad(f, **kw),
        _mlp_loss,
        _mlp_args(),
    ),
    (
        "grad_softmax",
        lambda f, **kw: numpile.grad(f, **kw),
        _softmax_loss,
        _rng_arrays((4, 3), (5, 4)),
    ),
    (
        "grad_has_aux",
        lambda f, **kw: numpile.grad(f, has_aux=True, **kw),
        _aux_loss,
        _rng_arrays((3,), (2, 3)),
    ),
    (
        "value_and_grad_aux",
        lambda f, **kw: numpile.value_and_grad(f, has_aux=True, **kw),
        _aux_loss,
        _rng_arrays((3,), (2, 3)),
    ),
    (
        "grad_argnums",
        lambda f, **kw: numpile.grad(f, argnums=(0, 1), **kw),
        _scaled_loss,
        (*_rng_arrays((3,)), 2.5, *_rng_arrays((3,))),
    ),
]
_IDS = [case[0] for case in _CASES]


@pytest.mark.parametrize(("name", "make", "fn", "args"), _CASES, ids=_IDS)
def test_compile_of_grad_matches_eager(
    name: str, make: Callable[..., Any], fn: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    want = make(fn, compiler="eager")(*args)
    compiled = numpile.compile(make(fn), fullgraph=True)
    _assert_trees_close(compiled(*args), want)
    _assert_trees_close(compiled(*args), want)  # the cached entry


@pytest.mark.parametrize(("name", "make", "fn", "args"), _CASES, ids=_IDS)
def test_grad_inside_compile_matches_eager(
    name: str, make: Callable[..., Any], fn: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    want = make(fn, compiler="eager")(*args)

    def caller(*inner: Any) -> Any:
        return make(fn)(*inner)

    explained = numpile.explain(caller)(*args)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    _assert_trees_close(numpile.compile(caller, fullgraph=True)(*args), want)


@pytest.mark.parametrize(("name", "make", "fn", "args"), _CASES, ids=_IDS)
def test_grad_of_compile_matches_eager(
    name: str, make: Callable[..., Any], fn: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    want = make(fn, compiler="eager")(*args)
    _assert_trees_close(make(numpile.compile(fn))(*args), want)


def test_grad_inside_compile_is_one_graph_with_the_backward() -> None:
    # A training step: forward, backward and the update in one compiled graph.
    params, x, y = _mlp_args()

    def step(params: dict[str, Any], x: Any, y: Any) -> Any:
        loss, grads = numpile.value_and_grad(_mlp_loss)(params, x, y)
        return loss, {key: params[key] - 0.1 * grads[key] for key in params}

    explained = numpile.explain(step)(params, x, y)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    ops = {node.op.name for node in explained.graphs[0].nodes if node.op is not None}
    assert {"tanh", "matmul", "subtract"} <= ops and "transpose" in ops  # backward of matmul
    loss, grads = numpile.value_and_grad(_mlp_loss, compiler="eager")(params, x, y)
    want = (loss, {key: params[key] - 0.1 * grads[key] for key in params})
    _assert_trees_close(numpile.compile(step)(params, x, y), want)


def test_vjp_inside_compile_matches_eager() -> None:
    (x,) = _rng_arrays((4, 3))
    cotangent = np.linspace(-1.0, 1.0, 12).reshape(4, 3)

    def fn(a: Any) -> Any:
        return np.tanh(a) * a

    def caller(a: Any, ct: Any) -> Any:
        out, pullback = numpile.vjp(fn, a)
        return out, pullback(ct)

    out, pullback = numpile.vjp(fn, x, compiler="eager")
    want = (out, pullback(cotangent))
    explained = numpile.explain(caller)(x, cotangent)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    _assert_trees_close(numpile.compile(caller, fullgraph=True)(x, cotangent), want)


def test_grad_of_grad_inside_compile() -> None:
    x = np.linspace(-1.0, 1.0, 5)

    def inner(a: Any) -> Any:
        return np.sum(np.sin(a) * a)

    def outer(a: Any) -> Any:
        return np.sum(numpile.grad(inner)(a))

    compiled = numpile.compile(numpile.grad(outer), fullgraph=True)
    # d/da sum(cos(a) * a + sin(a)) = 2 cos(a) - a sin(a)
    np.testing.assert_allclose(compiled(x), 2 * np.cos(x) - x * np.sin(x), rtol=1e-12)


def test_closure_over_the_differentiated_array_is_a_constant() -> None:
    # As in JAX: only the path through the argument is differentiated.
    x = np.arange(1.0, 4.0)

    def caller(a: Any) -> Any:
        return numpile.grad(lambda w: np.sum(w * a))(a)

    want = numpile.grad(lambda w: np.sum(w * x), compiler="eager")(x)
    np.testing.assert_array_equal(want, x)
    np.testing.assert_array_equal(numpile.compile(caller, fullgraph=True)(x), want)


def test_transforms_of_lambdas_made_inside_compile() -> None:
    x, w = _rng_arrays((4, 3), (3,))

    def caller(w: Any, x: Any) -> Any:
        value, gradient = numpile.value_and_grad(lambda v: np.sum(np.tanh(x @ v)))(w)
        _, pullback = numpile.vjp(lambda v: np.sin(x * v), w)
        return value, gradient, pullback(np.ones_like(x))

    value, gradient = numpile.value_and_grad(lambda v: np.sum(np.tanh(x @ v)), compiler="eager")(w)
    _, pullback = numpile.vjp(lambda v: np.sin(x * v), w, compiler="eager")
    want = (value, gradient, pullback(np.ones_like(x)))
    _assert_trees_close(numpile.compile(caller, fullgraph=True)(w, x), want)


def test_mutating_function_runs_the_transform_eagerly() -> None:
    def loss(w: Any, buffer: Any) -> Any:
        buffer[:] = w * 2
        return np.sum(buffer * w)

    w = np.arange(3.0)

    def caller(w: Any, buffer: Any) -> Any:
        return numpile.grad(loss)(w, buffer)

    buffer_eager, buffer_compiled = np.zeros(3), np.zeros(3)
    want = numpile.grad(loss, compiler="eager")(w, buffer_eager)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = numpile.compile(caller)(w, buffer_compiled)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(buffer_compiled, buffer_eager)


def _breaking_loss(w: Any) -> Any:
    print("loss")  # the graph break the error must name
    return np.sum(w * w)


_BREAK_LINE = _breaking_loss.__code__.co_firstlineno + 1


@pytest.mark.parametrize(
    "placement",
    [
        lambda: numpile.compile(numpile.grad(_breaking_loss)),
        lambda: numpile.compile(lambda w: numpile.grad(_breaking_loss)(w) + 1),
        lambda: numpile.grad(numpile.compile(_breaking_loss)),
    ],
    ids=["compile_of_grad", "grad_inside_compile", "grad_of_compile"],
)
def test_graph_break_on_the_differentiated_path_names_it(placement: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CaptureError) as info:
            placement()(np.ones(3))
    text = str(info.value)
    assert f"test_grad_compile.py:{_BREAK_LINE}" in text
    assert "print" in text and "_breaking_loss" in text
