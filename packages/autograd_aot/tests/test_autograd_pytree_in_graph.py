"""Dataclass and attrs parameters through transforms traced inside compiled code: one graph,
gradients of the same class with the same values as the eager transforms."""

from __future__ import annotations

import dataclasses
from typing import Any

import attrs
import numpy as np
import pytest

from numpile_autograd_aot import grad, jacrev, vmap
from numpile_capture import compile_function, explain


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


@attrs.frozen
class Frozen:
    w: np.ndarray
    b: np.ndarray


def _loss(p: Any, x: np.ndarray, y: np.ndarray) -> Any:
    return np.sum((np.tanh(x @ p.w + p.b) - y) ** 2)


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    return (
        rng.normal(size=(3, 2)),
        rng.normal(size=2),
        rng.normal(size=(5, 3)),
        rng.normal(size=(5, 2)),
    )


def _one_graph(fn: Any, *args: Any) -> None:
    report = explain(fn)(*args)
    assert report.graph_count == 1 and report.graph_break_count == 0, report


@pytest.mark.parametrize("cls", [Params, Frozen])
def test_grad_of_field_container_inside_compiled_code(cls: type) -> None:
    w, b, x, y = _data()
    params = cls(w, b)

    def step(p: Any, x: np.ndarray, y: np.ndarray) -> Any:
        g = grad(_loss)(p, x, y)
        return g, p.w - 0.1 * g.w, p.b - 0.1 * g.b

    eager = step(params, x, y)
    _one_graph(step, params, x, y)
    got = compile_function(step)(params, x, y)
    assert type(got[0]) is cls
    np.testing.assert_allclose(got[0].w, eager[0].w, rtol=1e-12)
    for have, want in zip(got[1:], eager[1:], strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-12)
    np.testing.assert_array_equal(params.w, w)  # inputs untouched


def test_returned_gradient_is_a_new_instance_of_the_class() -> None:
    w, b, x, y = _data()
    params = Params(w, b)
    got = compile_function(lambda p, x, y: grad(_loss)(p, x, y), fullgraph=True)(params, x, y)
    want = grad(_loss)(params, x, y)
    assert type(got) is Params and got is not params
    np.testing.assert_allclose(got.w, want.w, rtol=1e-12)
    np.testing.assert_allclose(got.b, want.b, rtol=1e-12)


def test_per_example_gradients_of_dataclass_parameters_are_one_graph() -> None:
    w, b, x, y = _data()
    params = Params(w, b)
    per_example = vmap(grad(_loss), in_axes=(None, 0, 0))
    _one_graph(lambda p, a, c: per_example(p, a, c), params, x, y)
    got = per_example(params, x, y)
    assert type(got) is Params and got.w.shape == (5, 3, 2)
    for i in range(len(x)):
        want = grad(_loss)(params, x[i : i + 1], y[i : i + 1])
        np.testing.assert_allclose(got.w[i], want.w, rtol=1e-10, atol=1e-12)


def test_jacobian_with_respect_to_a_dataclass() -> None:
    w, b, x, _ = _data()
    params = Params(w, b)

    def predict(p: Params) -> Any:
        return np.tanh(x[0] @ p.w + p.b)

    got = compile_function(lambda p: jacrev(predict)(p), fullgraph=True)(params)
    want = jacrev(predict)(params)
    assert type(got) is Params
    np.testing.assert_allclose(got.w, want.w, rtol=1e-12)
    np.testing.assert_allclose(got.b, want.b, rtol=1e-12)
