"""The autograd config (compilers, partitioners by name), trace_joint, graph-break errors, and
saved values that alias the caller's arrays."""

from __future__ import annotations

import importlib.util
import itertools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import (
    AutogradConfig,
    CaptureError,
    Partition,
    config,
    default_partition,
    grad,
    min_cut_partition,
    resolve_compiler,
    resolve_partitioner,
    run_graph_compiler,
    saved_bytes,
    trace_joint,
    value_and_grad,
    vjp,
)
from numpile_capture import (
    Graph,
    InvalidBackendError,
    lookup_backend,
    preferred_backend,
    register_backend,
    run_graph,
)
from numpile_capture import config as capture_config

_names = itertools.count()


def _recording_backend(seen: list[Graph]) -> str:
    # A backend registered under a fresh name that records every graph it compiles.
    def backend(graph: Graph, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        seen.append(graph)
        assert len(example_inputs) == len(graph.placeholders)
        return lambda *inputs: run_graph(graph, inputs)

    name = f"_autograd_test_backend_{next(_names)}"
    register_backend(backend, name=name)
    return name


def _loss(w: np.ndarray, x: np.ndarray) -> Any:
    return np.sum(np.tanh(x @ w) ** 2)


def test_default_config() -> None:
    fresh = AutogradConfig()
    assert (fresh.compiler, fresh.partitioner) == (None, "min_cut")
    assert resolve_compiler("eager") is run_graph_compiler
    assert resolve_partitioner("default") is default_partition
    assert resolve_partitioner("min_cut") is min_cut_partition


def test_compiler_by_name_compiles_forward_and_backward() -> None:
    seen: list[Graph] = []
    name = _recording_backend(seen)
    w, x = np.linspace(-1, 1, 3), np.linspace(0, 2, 6).reshape(2, 3)
    got = grad(_loss, compiler=name)(w, x)
    np.testing.assert_allclose(got, grad(_loss)(w, x), rtol=1e-14)
    assert len(seen) == 2  # the forward graph, then the backward graph
    forward, backward = seen
    assert [p.name for p in forward.placeholders] == ["x", "w"]
    assert backward.placeholders[-1].name == "tangent_0"  # saved values, then the seed
    grad(_loss, compiler=name)  # making a transform compiles nothing
    assert len(seen) == 2


def test_config_compiler_is_the_default_and_patch_restores_it() -> None:
    seen: list[Graph] = []
    name = _recording_backend(seen)
    before = config.compiler  # None: the best backend installed
    with config.patch(compiler=name):
        transform = value_and_grad(_loss)
        assert config.compiler == name
    assert config.compiler == before
    transform(np.ones(3), np.ones((2, 3)))
    assert len(seen) == 2  # read when the transform was made, inside the patch
    with pytest.raises(AttributeError, match="no field"), config.patch(no_such_field=1):
        pass


def test_partitioner_by_name_and_callable() -> None:
    used: list[Partition] = []

    def recording(joint: Any) -> Partition:
        used.append(default_partition(joint))
        return used[-1]

    x = np.linspace(0.1, 1, 4)
    f = lambda v: np.sum(np.exp(np.sin(v)))  # noqa: E731
    want = np.cos(x) * np.exp(np.sin(x))
    np.testing.assert_allclose(grad(f, partitioner="default")(x), want, rtol=1e-13)
    np.testing.assert_allclose(grad(f, partitioner=recording)(x), want, rtol=1e-13)
    assert len(used) == 1
    with config.patch(partitioner="default"):
        _out, vjp_fn = vjp(lambda v: np.sin(v) * 2, x)
    np.testing.assert_allclose(vjp_fn(np.ones(4))[0], 2 * np.cos(x), rtol=1e-14)


def test_unknown_names_raise() -> None:
    with pytest.raises(InvalidBackendError, match="no_such_backend"):
        grad(_loss, compiler="no_such_backend")
    with pytest.raises(ValueError, match="min_cut"):
        grad(_loss, partitioner="no_such_partitioner")
    with pytest.raises(TypeError, match="compiler must be"):
        grad(_loss, compiler=3)  # type: ignore[arg-type]


def _breaks_in_helper(x: np.ndarray) -> Any:
    y = np.sin(x)
    print("logged", end="")  # the graph break: line of this call
    return y


def _loss_through_break(x: np.ndarray) -> Any:
    return np.sum(_breaks_in_helper(x) * 2)


def test_graph_break_error_names_the_break_and_its_line() -> None:
    line = _breaks_in_helper.__code__.co_firstlineno + 2
    with pytest.raises(CaptureError) as info:
        grad(_loss_through_break)(np.ones(3))
    message = str(info.value)
    assert f"graph break at {__file__}:{line}" in message
    assert "print" in message
    assert "_loss_through_break" in message


def test_trace_joint_is_what_the_transform_partitions() -> None:
    def loss(params: dict[str, np.ndarray], x: np.ndarray) -> Any:
        return np.sum(np.tanh(x @ params["w"]) ** 2) + 0.5 * np.sum(params["b"] ** 2)

    params = {"w": np.linspace(-1, 1, 6).reshape(3, 2), "b": np.ones(2)}
    x = np.linspace(0, 1, 12).reshape(4, 3)
    joint = trace_joint(loss, params, x)
    assert joint.num_primals == 3 and len(joint.tangents) == 1
    assert len(joint.diff_inputs) == 2  # the two leaves of params, not x
    default, min_cut = default_partition(joint), min_cut_partition(joint)
    assert saved_bytes(min_cut) <= saved_bytes(default)
    seen: list[Partition] = []

    def recording(j: Any) -> Partition:
        seen.append(min_cut_partition(j))
        return seen[-1]

    grad(loss, partitioner=recording)(params, x)
    assert str(seen[0]) == str(min_cut)
    both = trace_joint(loss, params, x, argnums=(0, 1))
    assert len(both.diff_inputs) == 3


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_deferred_backward_ignores_later_writes_to_saved_primals(partitioner: str) -> None:
    # Both partitioners save a primal here (w, or x itself for x ** 2); vjp must copy it.
    x, w = np.linspace(0.5, 2.0, 4), np.full(4, 3.0)
    _, vjp_fn = vjp(lambda a, b: np.exp(a) * b + a**2, x, w, partitioner=partitioner)
    x[:] = -7.0
    w[:] = 100.0
    gx, gw = vjp_fn(np.ones(4))
    original = np.linspace(0.5, 2.0, 4)
    np.testing.assert_allclose(gx, np.exp(original) * 3.0 + 2 * original, rtol=1e-14)
    np.testing.assert_allclose(gw, np.exp(original), rtol=1e-14)


def test_min_cut_prefers_saving_a_primal_on_a_tie() -> None:
    joint = trace_joint(lambda v: np.sum(v**2), np.ones(3, np.float32))
    partition = min_cut_partition(joint)
    assert [node.name for node in partition.saved] == ["v"]
    assert "multiply" not in str(partition.forward)  # 2 * v is computed in the backward


def _square_then_increment(x: np.ndarray) -> Any:
    y = np.sum(x**2)
    x += 1.0  # written after the read: the gradient is at the value passed in
    return y


def _scale_weights_in_place(x: np.ndarray, w: np.ndarray) -> Any:
    y = np.sum(np.exp(x) * w)
    w *= 2.0
    return y


@pytest.mark.parametrize("partitioner", ["default", "min_cut"])
def test_gradient_is_at_the_inputs_before_the_function_writes_them(partitioner: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(
        grad(_square_then_increment, partitioner=partitioner)(x), [2, 4, 6]
    )
    np.testing.assert_array_equal(x, [2.0, 3.0, 4.0])
    x, w = np.array([0.0, 1.0]), np.ones(2)
    gx, gw = grad(_scale_weights_in_place, argnums=(0, 1), partitioner=partitioner)(x, w)
    np.testing.assert_allclose(gx, np.exp([0.0, 1.0]), rtol=1e-15)
    np.testing.assert_allclose(gw, np.exp([0.0, 1.0]), rtol=1e-15)
    np.testing.assert_array_equal(w, [2.0, 2.0])


def test_no_compiler_is_the_best_backend_installed_not_capture_s_default() -> None:
    # The inductor when its entry point is installed (the full stack), else run_graph.
    expected = preferred_backend()
    want = run_graph_compiler if expected == "eager" else lookup_backend(expected)
    with capture_config.patch(default_backend="aot_eager"):
        assert resolve_compiler(None) is want


def test_config_patch_and_key_come_from_the_shared_base() -> None:
    fresh = AutogradConfig(compiler="eager", partitioner=default_partition)
    assert fresh.key() == (
        "compiler='eager' partitioner=numpile_autograd_aot.partition.default_partition "
        "keep_loops=True"
    )


@pytest.mark.skipif(
    not os.environ.get("NOX_CURRENT_SESSION", "").startswith("tests-autograd_aot"),
    reason="checks the layer session's environment (noxfile.py's tests-autograd_aot)",
)
def test_the_layer_session_runs_transforms_with_run_graph() -> None:
    # `nox -s tests-autograd_aot` runs on every Python with this layer and those below it
    # alone: a transform given no compiler runs its graphs with `run_graph`, and no test of
    # the layer waits on the C compiler (docs/performance_notes.md).
    assert importlib.util.find_spec("numpile_inductor") is None
    assert resolve_compiler(None) is run_graph_compiler
