"""The backend registry: entry points, run-time registration, lookup errors, the eager backend."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    PREFERRED_BACKENDS,
    Graph,
    InvalidBackendError,
    config,
    default_backend,
    eager,
    get_op,
    list_backends,
    lookup_backend,
    meta_of,
    preferred_backend,
    register_backend,
)
from numpile_capture import backends as backends_module
from numpile_capture.backends import accepted_options, backend_name


@pytest.fixture
def registry() -> Iterator[None]:
    saved = dict(backends_module._REGISTRY)
    yield
    backends_module._REGISTRY.clear()
    backends_module._REGISTRY.update(saved)


def test_eager_is_declared_as_an_entry_point() -> None:
    try:
        distribution("numpile-capture")
    except PackageNotFoundError:
        pytest.skip("numpile-capture is not installed (running from source): no entry points")
    names = {ep.name: ep.value for ep in entry_points(group="numpile.backends")}
    assert names.get("eager") == "numpile_capture.backends:eager"
    assert lookup_backend("eager") is eager
    assert "eager" in list_backends()


def test_eager_runs_the_graph_with_numpy() -> None:
    x = np.arange(6.0).reshape(2, 3)
    graph = Graph()
    a = graph.placeholder("a", meta_of(x))
    b = graph.call(get_op("sin"), a)
    graph.output = (graph.call(get_op("multiply"), b, 2), [a])
    compiled = eager(graph, [x])
    out, _ = compiled(x + 1)
    np.testing.assert_array_equal(out, np.sin(x + 1) * 2)
    assert out.dtype == np.float64
    y = x + 1
    assert compiled(y)[1][0] is y


def test_register_backend_as_decorator_and_function(registry: None) -> None:
    @register_backend
    def plain(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    @register_backend(name="renamed", tags=("debug",))
    def tagged(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    def later(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    assert register_backend(later, "later", ("experimental",)) is later
    assert lookup_backend("plain") is plain
    assert lookup_backend("renamed") is tagged
    assert "plain" in list_backends()
    assert "renamed" not in list_backends()
    assert "later" not in list_backends()
    assert {"renamed", "later", "plain", "eager"} <= set(list_backends(exclude_tags=None))
    assert list_backends(exclude_tags=("experimental",)).count("renamed") == 1
    assert list_backends() == sorted(list_backends())
    assert backend_name(tagged) == "renamed"


def test_duplicate_names_are_rejected(registry: None) -> None:
    def one(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    def two(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    register_backend(one, "dup")
    register_backend(one, "dup")  # the same function again: fine
    with pytest.raises(ValueError, match="'dup' is already registered"):
        register_backend(two, "dup")


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(InvalidBackendError) as info:
        lookup_backend("inductorr")
    message = str(info.value)
    assert "unknown backend 'inductorr'" in message
    assert "eager" in message
    assert "numpile.backends" in message


def test_callables_pass_through_and_bad_types_fail() -> None:
    def mine(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    assert lookup_backend(mine) is mine
    with pytest.raises(TypeError, match="a name or a callable"):
        lookup_backend(3)  # type: ignore[arg-type]


def test_registered_names_resolve_without_reading_entry_points(
    registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Running from source without metadata, or a warm start that must not import
    # importlib.metadata: numpile's own backends are registered by their packages.
    def no_metadata() -> list[Any]:
        raise AssertionError("entry points read for a registered name")

    monkeypatch.setattr(backends_module, "_entry_points", no_metadata)
    monkeypatch.setattr(backends_module, "_entry_points_merged", False)
    backends_module.register_backend_path("by_path", "numpile_capture.backends:eager")
    assert lookup_backend("eager") is eager
    assert lookup_backend("by_path") is eager
    assert backends_module._entry_points_merged is False


def test_a_name_no_package_registers_is_looked_up_in_the_entry_points(
    registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def plugin(graph: Graph, example_inputs: list[Any]) -> Any:
        return eager(graph, example_inputs)

    monkeypatch.setattr(backends_module, "_entry_points", lambda: [("plugin", lambda: plugin)])
    monkeypatch.setattr(backends_module, "_entry_points_merged", False)
    assert lookup_backend("plugin") is plugin
    assert backends_module._entry_points_merged is True
    # A path registration never replaces a name registered before it.
    backends_module.register_backend_path("plugin", "numpile_capture.backends:eager")
    assert lookup_backend("plugin") is plugin


def test_accepted_options() -> None:
    def both(graph: Any, inputs: Any, *, mode: Any = None, options: Any = None) -> Any:
        return None

    def kwargs(graph: Any, inputs: Any, **extra: Any) -> Any:
        return None

    assert accepted_options(eager) == frozenset()
    assert accepted_options(both) == {"mode", "options"}
    assert accepted_options(kwargs) == {"mode", "options"}


def test_the_default_backend_is_the_first_preferred_one_the_registry_knows(registry: None) -> None:
    assert config.default_backend is None
    installed = [name for name in PREFERRED_BACKENDS if name in list_backends(exclude_tags=None)]
    assert preferred_backend() == installed[0]
    assert default_backend() == installed[0]
    with config.patch(default_backend="eager"):
        assert default_backend() == "eager"
    backends_module._REGISTRY.pop("inductor", None)
    assert preferred_backend() == "eager"  # a layer alone runs graphs with NumPy


def test_a_preferred_backend_registered_at_run_time_becomes_the_default(registry: None) -> None:
    backends_module._REGISTRY.pop("inductor", None)
    assert preferred_backend() == "eager"

    @register_backend(name="inductor")
    def stand_in(graph: Graph, example_inputs: Any) -> Any:
        return eager(graph, example_inputs)

    assert preferred_backend() == "inductor"
    assert lookup_backend(default_backend()) is stand_in


@pytest.mark.skipif(
    not os.environ.get("NOX_CURRENT_SESSION", "").startswith("tests-capture"),
    reason="checks the layer session's environment (noxfile.py's tests-capture)",
)
def test_the_layer_session_holds_no_backend_above_capture() -> None:
    # `nox -s tests-capture` runs on every Python with capture alone installed, so the
    # layer's tests run their graphs with `run_graph`: beside the inductor, CI's runs of
    # them on 3.12 and 3.13 compiled every graph to C (docs/performance_notes.md).
    assert importlib.util.find_spec("numpile_inductor") is None
    assert preferred_backend() == "eager"
