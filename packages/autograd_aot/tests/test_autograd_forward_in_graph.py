"""jvp, linearize, jacfwd, jacrev and hessian inside compiled code and under vmap: one graph,
the same values as the eager transforms (which the finite-difference tests check)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import grad, hessian, jacfwd, jacrev, jvp, linearize, vmap
from numpile_capture import compile_function, explain


def _f(x: np.ndarray) -> Any:
    return np.sin(x) * x + np.cumsum(x) ** 2


def _two(x: np.ndarray, w: np.ndarray) -> Any:
    return np.tanh(x @ w), np.sum(x) * w


def _loss(x: np.ndarray) -> Any:
    return np.sum(np.exp(x[:-1]) * x[1:] ** 3)


def _one_graph(fn: Callable[..., Any], *args: Any) -> None:
    report = explain(fn)(*args)
    assert report.graph_count == 1 and report.graph_break_count == 0, report


TOLERANCE = {np.float64: 1e-12, np.float32: 1e-5}

CASES: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "jacfwd": lambda dtype: lambda x: jacfwd(_f)(x),
    "jacrev": lambda dtype: lambda x: jacrev(_f)(x),
    "hessian": lambda dtype: lambda x: hessian(_loss)(x),
    "jvp": lambda dtype: lambda x: jvp(_f, (x,), (np.ones_like(x),)),
    "jacfwd of grad": lambda dtype: lambda x: jacfwd(grad(_loss))(x) * 2.0,
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_inside_compiled_code_is_one_graph(name: str, dtype: type) -> None:
    fn = CASES[name](dtype)
    x = np.linspace(0.1, 1.3, 4).astype(dtype)
    eager = fn(x)
    _one_graph(fn, x)
    got = compile_function(fn)(x)
    for want, have in zip(np.atleast_1d(eager), np.atleast_1d(got), strict=True):
        assert np.asarray(have).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(have, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("make", [jacfwd, jacrev])
def test_jacobian_over_trees_of_inputs_and_outputs(make: Callable[..., Any]) -> None:
    x, w = np.linspace(0.1, 0.6, 6).reshape(2, 3), np.linspace(-1, 1, 12).reshape(3, 4)
    jacobian = make(_two, argnums=(0, 1))
    eager = jacobian(x, w)
    got = compile_function(jacobian, fullgraph=True)(x, w)
    assert len(got) == 2 and all(len(block) == 2 for block in got)
    for out_eager, out_got in zip(eager, got, strict=True):
        for want, have in zip(out_eager, out_got, strict=True):
            assert have.shape == want.shape
            np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12)


def test_jacobian_function_compiles_as_the_root() -> None:
    x = np.linspace(0.1, 1.3, 5)
    for make in (jacfwd, jacrev):
        jacobian = make(_f)
        np.testing.assert_allclose(compile_function(jacobian, fullgraph=True)(x), jacobian(x))
    np.testing.assert_allclose(
        compile_function(hessian(_loss), fullgraph=True)(x), hessian(_loss)(x), rtol=1e-12
    )


def test_constructor_called_on_a_lambda_made_in_compiled_code() -> None:
    def fn(x: np.ndarray, scale: float) -> Any:
        return jacfwd(lambda y: np.sin(y) * scale)(x), hessian(lambda y: np.sum(y**3) * scale)(x)

    x = np.linspace(0.1, 1.3, 3)
    eager = fn(x, 2.0)
    got = compile_function(fn, fullgraph=True)(x, 2.0)
    for want, have in zip(eager, got, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-12)


def test_linearize_inside_compiled_code() -> None:
    def fn(x: np.ndarray, t: np.ndarray) -> Any:
        out, f_jvp = linearize(_f, x)
        return out, f_jvp(t), f_jvp(2 * t)

    x, t = np.linspace(0.1, 1.3, 4), np.linspace(1.0, -1.0, 4)
    eager = fn(x, t)
    _one_graph(fn, x, t)
    for want, have in zip(eager, compile_function(fn)(x, t), strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-12)


@pytest.mark.parametrize("make", [jacfwd, jacrev])
def test_vmap_of_jacobians_is_one_batched_graph(make: Callable[..., Any]) -> None:
    batch = np.linspace(0.1, 2.0, 12).reshape(3, 4)
    batched = vmap(make(_f))
    want = np.stack([make(_f)(row) for row in batch])
    np.testing.assert_allclose(batched(batch), want)
    _one_graph(lambda b: batched(b), batch)
    got = compile_function(lambda b: batched(b), fullgraph=True)(batch)
    np.testing.assert_allclose(got, want)


def test_jacobian_of_integer_input_runs_the_eager_transform() -> None:
    # The rule cannot express it: a graph break, and the eager transform's own error.
    def fn(x: np.ndarray) -> Any:
        return jacfwd(_f)(x)

    with pytest.raises(TypeError, match="float or complex inputs"):
        compile_function(fn)(np.arange(3))


def test_grad_through_jvp_and_jacfwd_is_the_second_derivative() -> None:
    x, t = np.linspace(0.1, 1.0, 3), np.ones(3)

    def f(v: np.ndarray) -> Any:
        return np.sin(v) * v

    second = 2 * np.cos(x) - x * np.sin(x)
    through_jvp = grad(lambda v: np.sum(jvp(f, (v,), (t,))[1]))(x)
    through_jacfwd = grad(lambda v: np.sum(jacfwd(f)(v)))(x)
    np.testing.assert_allclose(through_jvp, second, rtol=1e-12)
    np.testing.assert_allclose(through_jacfwd, second, rtol=1e-12)
