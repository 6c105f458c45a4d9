"""The seeds' allow/disallow/disable/graph_break/substitute examples on NumPy, end to end."""

from __future__ import annotations

import contextlib
import io
import operator
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile
from numpile_capture.trace_rules import clear, scoped_rules


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    # Each test starts from no registrations; those made elsewhere come back after it.
    with scoped_rules():
        clear()
        yield
    numpile.reset()


def _sorted_copy(x: Any) -> Any:
    # Capture cannot see into this (a Python list round trip), so it must be allowed or break.
    return np.asarray(sorted(x.tolist()), dtype=x.dtype)


def _seed_fn(x: Any) -> Any:
    x = np.add(x, 1)
    x = _sorted_copy(x)
    x = np.add(x, 1)
    return x


def test_seed_allow_in_graph_makes_one_graph_with_an_opaque_node() -> None:
    x = np.array([3.0, -1.0, 2.0, 0.5])
    expected = _seed_fn(x)
    assert numpile.explain(_seed_fn)(x).graph_break_count >= 1  # not traceable as it is
    numpile.allow_in_graph(_sorted_copy)
    report = numpile.explain(_seed_fn)(x)
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    (ops,) = report.ops_per_graph
    assert len(ops) == 3 and ops[0] == ops[2] == "add" and "_sorted_copy" in ops[1]
    compiled = numpile.compile(_seed_fn, backend="eager", fullgraph=True)
    for values in (x, np.array([9.0, 8.0, 7.0, 6.0])):
        got = compiled(values)
        np.testing.assert_array_equal(got, _seed_fn(values))
        assert got.dtype == expected.dtype


def test_allow_in_graph_keeps_dtype_and_shape_rules_of_the_function() -> None:
    numpile.allow_in_graph(_sorted_copy)

    def f(x: Any) -> Any:
        return _sorted_copy(x * 2) + 1

    compiled = numpile.compile(f, backend="eager", fullgraph=True)
    for x in (np.array([3, 1, 2], dtype=np.int16), np.array([2.5, -1.0], dtype=np.float32)):
        got = compiled(x)
        np.testing.assert_array_equal(got, f(x))
        assert got.dtype == f(x).dtype


def test_disallow_in_graph_turns_a_traceable_call_into_a_break() -> None:
    def helper(x: Any) -> Any:
        return x * 2.0

    def f(x: Any) -> Any:
        return helper(x + 1.0) - 1.0

    x = np.arange(4.0)
    assert numpile.explain(f)(x).graph_break_count == 0
    numpile.disallow_in_graph(helper)
    report = numpile.explain(f)(x)
    assert report.graph_break_count == 1
    assert "disallow_in_graph" in str(report.break_reasons[0])
    np.testing.assert_array_equal(numpile.compile(f, backend="eager")(x), f(x))
    with pytest.raises(numpile.Unsupported, match="disallow"):
        numpile.compile(f, backend="eager", fullgraph=True)(x)


def test_graph_break_splits_the_graph_and_fullgraph_refuses_it() -> None:
    def f(x: Any) -> Any:
        y = np.sin(x)
        numpile.graph_break()
        return np.cos(y)

    x = np.linspace(0.0, 1.0, 5)
    assert numpile.graph_break() is None  # eagerly, a no-op
    report = numpile.explain(f)(x)
    assert (report.graph_count, report.graph_break_count) == (2, 1)
    assert report.ops_per_graph == (("sin",), ("cos",))
    assert report.break_reasons[0].lineno == f.__code__.co_firstlineno + 2
    np.testing.assert_array_equal(numpile.compile(f, backend="eager")(x), f(x))
    with pytest.raises(numpile.Unsupported, match="graph_break") as error:
        numpile.compile(f, backend="eager", fullgraph=True)(x)
    assert error.value.lineno == f.__code__.co_firstlineno + 2


def test_disable_breaks_at_the_call_and_shows_the_reason() -> None:
    @numpile.disable(reason="writes a log line")
    def log(x: Any) -> Any:
        print("log", x.shape)
        return x

    def f(x: Any) -> Any:
        return log(x * 2.0) + 1.0

    x = np.ones(3)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = numpile.explain(f)(x)
    assert report.graph_break_count == 1
    assert "writes a log line" in str(report.break_reasons[0])
    with contextlib.redirect_stdout(out):
        np.testing.assert_array_equal(numpile.compile(f, backend="eager")(x), f(x))
    assert out.getvalue() == "log (3,)\n" * 3


def _sign_of_compiling(x: Any) -> Any:
    if numpile.is_compiling():
        return x + 1
    return x - 1


def test_a_disabled_function_is_never_compiled() -> None:
    compiled = numpile.compile(numpile.disable(_sign_of_compiling), backend="eager")
    np.testing.assert_array_equal(compiled(np.zeros(2)), [-1.0, -1.0])
    assert numpile.compile(_sign_of_compiling, backend="eager")(np.zeros(2))[0] == 1.0


def test_recursive_disable_runs_compiled_callees_eagerly_and_shallow_does_not() -> None:
    inner = numpile.compile(_sign_of_compiling, backend="eager")

    def outer(x: Any) -> Any:
        return inner(x)

    assert numpile.disable(outer)(np.zeros(1))[0] == -1.0
    assert numpile.disable(outer, recursive=False)(np.zeros(1))[0] == 1.0
    assert inner(np.zeros(1))[0] == 1.0


def _index_of_three(items: list[int]) -> int:
    return operator.indexOf(items, 3)


def test_seed_substitute_in_graph_operator_index_of() -> None:
    items = [1, 2, 3, 4, 5]
    assert operator.indexOf(items, 3) == 2
    with pytest.raises(numpile.Unsupported):
        numpile.compile(_index_of_three, backend="eager", fullgraph=True)(items)

    @numpile.substitute_in_graph(operator.indexOf)
    def index_of(a: Any, b: Any, /) -> int:
        for i, item in enumerate(a):
            if item is b or item == b:
                return i
        raise ValueError("sequence.index(x): x not in sequence")

    numpile.reset()
    assert numpile.compile(_index_of_three, backend="eager", fullgraph=True)(items) == 2
    assert index_of(items, 4) == 3  # eagerly the original runs

    def scale(x: Any, labels: list[str]) -> Any:
        return x * operator.indexOf(labels, "c")

    compiled = numpile.compile(scale, backend="eager", fullgraph=True)
    np.testing.assert_array_equal(compiled(np.ones(2), ["a", "b", "c"]), [2.0, 2.0])
    assert numpile.explain(scale)(np.ones(2), ["a", "b", "c"]).graph_break_count == 0


def test_seed_substitute_in_graph_compiles_the_builtin_itself() -> None:
    # The Compiler APIs page: Unsupported before the polyfill exists, 2 after.
    with pytest.raises(numpile.Unsupported, match="indexOf"):
        numpile.compile(operator.indexOf, fullgraph=True)([1, 2, 3, 4, 5], 3)

    @numpile.substitute_in_graph(operator.indexOf)
    def index_of(a: Any, b: Any, /) -> int:
        for i, item in enumerate(a):
            if item is b or item == b:
                return i
        raise ValueError("sequence.index(x): x not in sequence")

    compiled = numpile.compile(operator.indexOf, backend="eager", fullgraph=True)
    assert compiled([1, 2, 3, 4, 5], 3) == 2


def test_substitute_in_graph_checks_the_signature() -> None:
    def wrong(a: Any, b: Any) -> int:  # not positional-only, unlike operator.indexOf
        return 0

    with pytest.raises(TypeError, match="signature mismatch"):
        numpile.substitute_in_graph(operator.indexOf)(wrong)
    numpile.substitute_in_graph(operator.indexOf, skip_signature_check=True)(wrong)


def test_constant_folding_through_a_substituted_function() -> None:
    calls: list[str] = []

    def original(n: int) -> int:
        return n * 10

    @numpile.substitute_in_graph(original, can_constant_fold_through=True)
    def polyfill(n: int) -> int:
        calls.append("polyfill traced")
        return n * 10

    def f(x: Any) -> Any:
        return x + original(3)

    compiled = numpile.compile(f, backend="eager", fullgraph=True)
    np.testing.assert_array_equal(compiled(np.zeros(2)), [30.0, 30.0])
    assert calls == []  # folded by calling the original at capture time
