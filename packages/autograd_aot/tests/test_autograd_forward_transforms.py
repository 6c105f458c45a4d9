"""jvp, linearize, jacfwd, jacrev, hessian against finite differences, on float32 and float64."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import grad, hessian, jacfwd, jacrev, jvp, linearize


def _mlp(x: np.ndarray, w: np.ndarray) -> Any:
    return np.tanh(x @ w) ** 2 + np.sin(x).sum()


def _fd_jacobian(fn: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    step = 1e-6
    out = np.asarray(fn(x))
    jac = np.zeros(out.shape + x.shape)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += step
        minus[index] -= step
        jac[(..., *index)] = (np.asarray(fn(plus)) - np.asarray(fn(minus))) / (2 * step)
    return jac


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.normal(size=(2, 3)), rng.normal(size=(3, 4))


TOLERANCE = {np.float64: 1e-6, np.float32: 2e-3}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jvp_matches_finite_differences(dtype: type, data: tuple[np.ndarray, ...]) -> None:
    x, w = (a.astype(dtype) for a in data)
    tx, tw = np.ones_like(x), np.full_like(w, 0.5)
    out, tangent = jvp(_mlp, (x, w), (tx, tw))
    np.testing.assert_allclose(out, _mlp(x, w), rtol=TOLERANCE[dtype])
    assert tangent.dtype == dtype
    step = 1e-6
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    expected = (_mlp(x64 + step * tx, w64 + step * tw) - _mlp(x64 - step * tx, w64 - step * tw)) / (
        2 * step
    )
    np.testing.assert_allclose(tangent, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_jvp_over_pytrees() -> None:
    @dataclasses.dataclass
    class Params:
        a: Any
        b: Any

    def fn(p: Params) -> dict[str, Any]:
        return {"sum": p.a * p.b, "a": np.exp(p.a)}

    p = Params(np.array([1.0, 2.0]), np.array(3.0))
    _, tangent = jvp(fn, (p,), (Params(np.ones(2), np.array(1.0)),))
    np.testing.assert_allclose(tangent["sum"], p.b + p.a)
    np.testing.assert_allclose(tangent["a"], np.exp(p.a))
    with pytest.raises(ValueError, match="structure"):
        jvp(fn, (p,), ((np.ones(2), np.array(1.0)),))


def test_linearize_reuses_the_residuals(data: tuple[np.ndarray, ...]) -> None:
    x, w = data
    out, f_jvp = linearize(lambda a: _mlp(a, w), x)
    np.testing.assert_allclose(out, _mlp(x, w))
    for scale in (1.0, -2.0):
        t = np.full_like(x, scale)
        np.testing.assert_allclose(f_jvp(t), jvp(lambda a: _mlp(a, w), (x,), (t,))[1])


@pytest.mark.parametrize("make", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobians_match_finite_differences(
    make: Any, dtype: type, data: tuple[np.ndarray, ...]
) -> None:
    x, w = (a.astype(dtype) for a in data)
    got = make(_mlp, argnums=1)(x, w)
    assert got.shape == (2, 4, 3, 4)
    expected = _fd_jacobian(lambda v: _mlp(x.astype(np.float64), v), w)
    np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_jacfwd_and_jacrev_agree_over_several_arguments(data: tuple[np.ndarray, ...]) -> None:
    x, w = data
    forward = jacfwd(_mlp, argnums=(0, 1))(x, w)
    reverse = jacrev(_mlp, argnums=(0, 1))(x, w)
    for a, b in zip(forward, reverse, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hessian_matches_finite_differences_of_the_gradient(dtype: type) -> None:
    def fn(x: np.ndarray) -> Any:
        return np.sum(np.tanh(x) * x**2) + np.prod(x[:2])

    x = np.array([0.3, -0.7, 1.1], dtype)
    got = hessian(fn)(x)
    expected = _fd_jacobian(grad(fn), x)
    np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    np.testing.assert_allclose(got, got.T, rtol=1e-5)


def test_jacfwd_replans_only_for_new_structure() -> None:
    jac = jacfwd(lambda v: np.cumsum(v))
    np.testing.assert_allclose(jac(np.ones(2)), [[1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(jac(np.ones(3)), np.tril(np.ones((3, 3))))
