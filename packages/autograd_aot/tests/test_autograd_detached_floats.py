"""`float()` of a traced value on a differentiated path raises (`detached_floats`); `int()`,
comparisons and floats off the differentiated paths keep working, with eager's values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import DetachedFloatError, grad, value_and_grad, vjp


def scaled_by_float(x: Any) -> Any:
    s = float(x.sum())
    return (x * s).sum()


def scaled_by_float_arithmetic(x: Any) -> Any:
    s = 2.0 * float(x.max()) + 1.0
    return (x * s).sum()


def scaled_by_int(x: Any) -> Any:
    n = int(x.sum())
    return (x * n).sum()


def masked_by_a_float_comparison(x: Any) -> Any:
    return (x * x * (float(x.sum()) > 0)).sum()


def float_of_an_undifferentiated_input(x: Any, y: Any) -> Any:
    return (x * float(y.sum())).sum()


def test_grad_through_float_names_the_line() -> None:
    x = np.array([1.0, 2.0, 3.0])
    line = scaled_by_float.__code__.co_firstlineno + 1
    with pytest.raises(DetachedFloatError, match=rf"float\(\).*{__file__}:{line}\b"):
        grad(scaled_by_float)(x)
    with pytest.raises(DetachedFloatError, match="carries no gradient"):
        grad(scaled_by_float_arithmetic)(x)
    with pytest.raises(TypeError, match="float"):  # as JAX's ConcretizationTypeError is one
        vjp(scaled_by_float, x)


def test_int_branches_and_undifferentiated_floats_keep_working() -> None:
    x = np.array([1.0, 2.0, 3.5])
    np.testing.assert_allclose(grad(scaled_by_int)(x), np.full(3, 6.0))
    np.testing.assert_allclose(grad(masked_by_a_float_comparison)(x), 2 * x)
    y = np.array([0.5, 1.5])
    np.testing.assert_allclose(grad(float_of_an_undifferentiated_input)(x, y), np.full(3, 2.0))
    value, _ = value_and_grad(scaled_by_int)(x)
    assert value == scaled_by_int(x)


def summed_through_floats_in_a_loop(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = s + float(x[i])
    return (x * s).sum()


def summed_in_a_loop(x: Any) -> Any:
    s = x.sum() * 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
    return (x * s).sum()


def loop_floats_of_an_undifferentiated_input(x: Any, y: Any) -> Any:
    t = 0.0
    for i in range(y.shape[0]):
        t = t + float(y[i])
    return (x * t).sum()


def test_a_float_inside_a_loop_body_raises_too() -> None:
    # The carried Python float took x's values through float(): the gradient gave 6 for
    # eager's 12, silently (the walk did not look into loop bodies).
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(DetachedFloatError, match="carries no gradient"):
        grad(summed_through_floats_in_a_loop)(x)
    np.testing.assert_allclose(grad(summed_in_a_loop)(x), np.full(3, 12.0))
    y = np.array([0.5, 1.5])
    np.testing.assert_allclose(
        grad(loop_floats_of_an_undifferentiated_input)(x, y), np.full(3, 2.0)
    )
