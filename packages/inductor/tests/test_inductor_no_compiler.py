"""Without a C compiler the inductor runs graphs op by op with NumPy and warns once."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import Graph, get_op, meta_of, run_graph
from numpile_inductor import InductorConfig, NoCompilerWarning, inductor
from numpile_inductor.no_compiler import _reset_warning_for_tests


@pytest.fixture
def no_compiler(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.delenv("NUMPILE_NO_COMPILER", raising=False)
    _reset_warning_for_tests()
    yield
    _reset_warning_for_tests()


def _graph() -> tuple[Graph, np.ndarray]:
    a = np.linspace(-1, 1, 40).reshape(8, 5)
    g = Graph()
    p = g.placeholder("a", meta_of(a))
    g.output = g.call(get_op("sum"), g.call(get_op("sin"), p), axis=(1,))
    return g, a


def test_graphs_run_op_by_op_with_one_warning_per_process(no_compiler: None) -> None:
    graph, a = _graph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = inductor(graph, [a])
        again = inductor(graph, [a])
    assert [w.category for w in caught] == [NoCompilerWarning]
    assert "CC=" in str(caught[0].message) and "apt-get install gcc" in str(caught[0].message)
    np.testing.assert_array_equal(fn(a), run_graph(graph, [a]))
    np.testing.assert_array_equal(again(a * 2), np.sin(a * 2).sum(axis=1))


def test_option_raise_makes_a_missing_compiler_an_error(no_compiler: None) -> None:
    graph, a = _graph()
    with pytest.raises(rt.CompilerNotFoundError, match="needs a C compiler"):
        inductor(graph, [a], options={"cpp.no_compiler": "raise"})


def test_env_sets_the_default_and_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NUMPILE_NO_COMPILER", "raise")
    assert InductorConfig.from_options(None).no_compiler == "raise"
    with pytest.raises(ValueError, match="'fallback' or 'raise'"):
        InductorConfig.from_options({"cpp.no_compiler": "ignore"})
