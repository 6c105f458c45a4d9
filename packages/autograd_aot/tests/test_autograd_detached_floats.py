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
