"""Pytrees of the transforms: user containers flatten, rebuild and get gradients, never None."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import attrs
import numpy as np
import pytest

from numpile_autograd_aot import grad, register_pytree_node, tree_flatten, tree_unflatten, vjp


@dataclasses.dataclass
class DataParams:
    w: Any
    b: Any


class TupleParams(NamedTuple):
    w: Any
    b: Any


@attrs.define
class AttrsParams:
    w: Any
    b: Any


class Registered:
    def __init__(self, weights: dict[str, Any]) -> None:
        self.weights = weights


register_pytree_node(
    Registered,
    lambda r: ((r.weights["w"], r.weights["b"]), None),
    lambda _, children: Registered(dict(zip(("w", "b"), children, strict=True))),
)


class Unregistered:
    def __init__(self, w: Any, b: Any) -> None:
        self.w = w
        self.b = b


def _loss(p: Any, x: np.ndarray) -> Any:
    return np.sum(np.tanh(x @ p.w + p.b) ** 2)


def _registered_loss(p: Registered, x: np.ndarray) -> Any:
    return np.sum(np.tanh(x @ p.weights["w"] + p.weights["b"]) ** 2)


def _expected(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.tanh(x @ w + b)
    dz = 2 * t * (1 - t**2)
    return x.T @ dz, np.sum(dz, axis=0)


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(4, 3))


@pytest.mark.parametrize("cls", [DataParams, TupleParams, AttrsParams])
def test_grad_of_container_params_has_their_type_and_the_right_values(
    cls: type, data: tuple[np.ndarray, ...]
) -> None:
    w, b, x = data
    got = grad(_loss)(cls(w, b), x)
    assert type(got) is cls
    want_w, want_b = _expected(w, b, x)
    np.testing.assert_allclose(got.w, want_w, rtol=1e-12)
    np.testing.assert_allclose(got.b, want_b, rtol=1e-12)


def test_grad_of_a_registered_class(data: tuple[np.ndarray, ...]) -> None:
    w, b, x = data
    got = grad(_registered_loss)(Registered({"w": w, "b": b}), x)
    want_w, want_b = _expected(w, b, x)
    np.testing.assert_allclose(got.weights["w"], want_w, rtol=1e-12)
    np.testing.assert_allclose(got.weights["b"], want_b, rtol=1e-12)


def test_grad_reuses_its_plan_for_new_values_and_replans_for_a_new_structure(
    data: tuple[np.ndarray, ...],
) -> None:
    w, b, x = data
    step = grad(_loss)
    step(DataParams(w, b), x)
    got = step(DataParams(w * 2, b), x)
    np.testing.assert_allclose(got.w, _expected(w * 2, b, x)[0], rtol=1e-12)
    got_tuple = step(TupleParams(w, b), x)
    assert type(got_tuple) is TupleParams


def test_an_unregistered_container_raises_and_says_how_to_register(
    data: tuple[np.ndarray, ...],
) -> None:
    w, b, x = data
    with pytest.raises(TypeError, match=r"register_pytree_node\(Unregistered"):
        grad(_loss)(Unregistered(w, b), x)


def test_vjp_over_a_dataclass_primal(data: tuple[np.ndarray, ...]) -> None:
    w, b, x = data
    out, pullback = vjp(lambda p: x @ p.w + p.b, DataParams(w, b))
    (cotangent,) = pullback(np.ones_like(out))
    np.testing.assert_allclose(cotangent.w, x.T @ np.ones_like(out))
    np.testing.assert_allclose(cotangent.b, np.full(2, 4.0))


def test_flatten_rebuilds_nested_containers_and_keeps_none_as_a_leaf() -> None:
    tree = {"a": DataParams(1.0, [2.0, None]), "b": TupleParams(3.0, (4.0,))}
    leaves, spec = tree_flatten(tree)
    assert leaves == [1.0, 2.0, None, 3.0, 4.0]
    rebuilt = tree_unflatten(spec, [10.0, 20.0, None, 30.0, 40.0])
    assert rebuilt == {"a": DataParams(10.0, [20.0, None]), "b": TupleParams(30.0, (40.0,))}


def test_registering_a_class_twice_is_an_error() -> None:
    with pytest.raises(ValueError, match="already"):
        register_pytree_node(Registered, lambda r: ((), None), lambda _, c: Registered({}))


def test_a_leaf_repeated_in_the_tree_gets_the_gradient_of_each_place() -> None:
    w = np.array([1.0, 2.0])

    def loss(ws: list[np.ndarray]) -> Any:
        return np.sum(ws[0] * 3.0) + np.sum(ws[1] ** 2)

    first, second = grad(loss)([w, w])
    np.testing.assert_allclose(first, [3.0, 3.0])
    np.testing.assert_allclose(second, 2 * w)
