"""custom_vjp / custom_jvp: the user's rules are used in both modes, eagerly and compiled;
allow_in_graph functions without a rule give an error naming them; ufuncs differentiate."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import custom_jvp, custom_vjp, grad, jacfwd, jvp, value_and_grad, vjp
from numpile_capture import allow_in_graph, compile_function


@custom_vjp
def clipped_sin(x: np.ndarray) -> np.ndarray:
    return np.sin(x)


def _clipped_fwd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sin(x), np.cos(x)


def _clipped_bwd(cos: np.ndarray, g: np.ndarray) -> tuple[np.ndarray]:
    return (np.clip(g * cos, -0.5, 0.5),)


clipped_sin.defvjp(_clipped_fwd, _clipped_bwd)


@custom_vjp
def scaled_product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x * y


scaled_product.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (10 * g * r[1], 100 * g * r[0]))


@custom_jvp
def softplus(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.exp(x))


def _softplus_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1 + np.exp(-x))


softplus.defjvp(_softplus_jvp)


def _sum_clipped(x: np.ndarray) -> Any:
    return np.sum(clipped_sin(x) * 2)


def test_custom_vjp_runs_the_user_backward() -> None:
    x = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(grad(_sum_clipped)(x), np.clip(2 * np.cos(x), -0.5, 0.5))
    np.testing.assert_allclose(clipped_sin(x), np.sin(x))


def test_custom_vjp_of_two_arguments_gets_each_cotangent() -> None:
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gy = grad(lambda a, b: np.sum(scaled_product(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 10 * y)
    np.testing.assert_allclose(gy, 100 * x)


def test_custom_vjp_given_to_grad_directly() -> None:
    assert float(grad(clipped_sin)(np.array(0.0))) == 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_custom_jvp_serves_forward_and_reverse_mode(dtype: type) -> None:
    x = np.array([-2.0, 0.0, 1.5], dtype)
    sigmoid = 1 / (1 + np.exp(-x))
    _, tangent = jvp(softplus, (x,), (np.ones(3, dtype),))
    np.testing.assert_allclose(tangent, sigmoid, rtol=1e-6)
    np.testing.assert_allclose(
        grad(lambda v: np.sum(softplus(v) * v))(x), sigmoid * x + softplus(x), rtol=1e-5
    )
    np.testing.assert_allclose(jacfwd(softplus)(x), np.diag(sigmoid), rtol=1e-6)


def test_custom_rules_inside_a_compiled_function() -> None:
    @compile_function
    def step(x: np.ndarray) -> Any:
        return grad(_sum_clipped)(x) + grad(lambda v: np.sum(softplus(v)))(x)

    x = np.array([0.0, 1.0, 3.0])
    want = np.clip(2 * np.cos(x), -0.5, 0.5) + 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(step(x), want)


def test_custom_vjp_in_forward_mode_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="clipped_sin in forward mode"):
        jvp(_sum_clipped, (np.zeros(2),), (np.ones(2),))


def test_a_rule_not_yet_given_is_named() -> None:
    @custom_vjp
    def undefined(x: np.ndarray) -> np.ndarray:
        return x * 2

    with pytest.raises(NotImplementedError, match=r"undefined has no rule yet.*defvjp"):
        grad(lambda x: np.sum(undefined(x)))(np.ones(2))


def test_allow_in_graph_function_without_rule_is_named() -> None:
    def opaque_cube(x: np.ndarray) -> np.ndarray:
        return x**3

    allow_in_graph(opaque_cube)
    with pytest.raises(NotImplementedError, match=r"opaque_cube.*custom_vjp or numpile.custom_jvp"):
        grad(lambda x: np.sum(opaque_cube(x)))(np.ones(2))


@pytest.mark.parametrize("ufunc", [np.tanh, np.sin, np.exp, np.sqrt])
def test_ufuncs_are_differentiated_directly(ufunc: Any) -> None:
    x = np.array(0.7)
    step = 1e-6
    expected = (ufunc(x + step) - ufunc(x - step)) / (2 * step)
    np.testing.assert_allclose(grad(ufunc)(x), expected, rtol=1e-6)
    value, slope = value_and_grad(ufunc)(0.7)
    np.testing.assert_allclose(value, ufunc(0.7))
    np.testing.assert_allclose(slope, expected, rtol=1e-6)


def test_numpy_functions_are_differentiated_directly() -> None:
    x = np.arange(3.0)
    np.testing.assert_allclose(grad(np.sum)(x), np.ones(3))
    _, pullback = vjp(np.cumsum, x)
    np.testing.assert_allclose(pullback(np.ones(3))[0], [3.0, 2.0, 1.0])
