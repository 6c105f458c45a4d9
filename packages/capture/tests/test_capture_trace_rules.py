"""The trace-rule registries alone: disable, allow/disallow_in_graph, graph_break, substitute."""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import sympy

from numpile_capture import ArrayMeta, Graph, ScalarMeta, Unsupported, compile_function, run_graph
from numpile_capture.op import OpKind
from numpile_capture.trace_rules import (
    RuleKind,
    allow_in_graph,
    clear,
    disable,
    disallow_in_graph,
    graph_break,
    in_disabled_region,
    rule_for,
    scoped_rules,
    substitute_in_graph,
)


@pytest.fixture(autouse=True)
def _fresh_rules() -> Iterator[None]:
    # Each test starts from no registrations; those made elsewhere come back after it.
    with scoped_rules():
        clear()
        yield


def _scale(x: Any, factor: float = 2.0) -> Any:
    return x * factor


# --- disable ---------------------------------------------------------------------------------


def test_disable_returns_a_wrapper_that_computes_the_same() -> None:
    wrapped = disable(_scale)
    assert wrapped is not _scale
    x = np.arange(4.0)
    np.testing.assert_array_equal(wrapped(x, factor=3.0), _scale(x, 3.0))
    assert wrapped.__name__ == "_scale"
    assert wrapped.__doc__ == _scale.__doc__


def test_disable_rule_says_break_with_the_reason() -> None:
    wrapped = disable(_scale, reason="talks to a database")
    rule = rule_for(wrapped)
    assert rule is not None
    assert rule.kind is RuleKind.DISABLED
    assert rule.breaks
    assert rule.original is _scale
    assert rule.recursive
    assert "_scale" in rule.reason
    assert "talks to a database" in rule.reason
    assert rule_for(_scale) is None  # the original stays compilable


def test_disable_as_a_decorator_with_arguments() -> None:
    @disable(recursive=False)
    def f(x: Any) -> Any:
        return x + 1

    rule = rule_for(f)
    assert rule is not None and rule.kind is RuleKind.DISABLED
    assert not rule.recursive
    assert f(1) == 2


def test_disable_as_a_bare_decorator_keeps_methods_binding() -> None:
    class Box:
        def __init__(self) -> None:
            self.value = 5

        @disable
        def get(self) -> int:
            return self.value

    box = Box()
    assert box.get() == 5
    rule = rule_for(box.get)
    assert rule is not None and rule.kind is RuleKind.DISABLED


def test_recursive_disable_marks_a_disabled_region_on_this_thread_only() -> None:
    seen: list[bool] = []

    def probe() -> None:
        seen.append(in_disabled_region())
        other: list[bool] = []
        thread = threading.Thread(target=lambda: other.append(in_disabled_region()))
        thread.start()
        thread.join()
        seen.append(other[0])

    disable(probe)()
    disable(probe, recursive=False)()
    assert seen == [True, False, False, False]
    assert not in_disabled_region()


def test_disabled_region_ends_when_the_function_raises() -> None:
    def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        disable(boom)()
    assert not in_disabled_region()


def test_disable_survives_clear() -> None:
    wrapped = disable(_scale)
    clear()
    rule = rule_for(wrapped)
    assert rule is not None and rule.kind is RuleKind.DISABLED


def test_disable_of_a_compiled_function_wraps_the_python_function() -> None:
    compiled = compile_function(_scale, backend="eager")
    wrapped = disable(compiled)
    rule = rule_for(wrapped)
    assert rule is not None and rule.original is _scale
    assert not hasattr(wrapped, "_numpile_original")
    np.testing.assert_array_equal(wrapped(np.ones(2)), np.full(2, 2.0))


def test_disable_rejects_what_is_not_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        disable(3)  # type: ignore[call-overload]


# --- disallow_in_graph and graph_break -------------------------------------------------------


def test_disallow_in_graph_registers_a_break_and_returns_fn() -> None:
    assert disallow_in_graph(np.cumsum) is np.cumsum
    rule = rule_for(np.cumsum)
    assert rule is not None
    assert rule.kind is RuleKind.DISALLOW
    assert rule.breaks
    assert "cumsum" in rule.reason
    clear()
    assert rule_for(np.cumsum) is None


def test_graph_break_is_a_no_op_eagerly_and_always_breaks() -> None:
    graph_break()  # returns nothing, does nothing
    rule = rule_for(graph_break)
    assert rule is not None and rule.kind is RuleKind.GRAPH_BREAK and rule.breaks
    clear()
    assert rule_for(graph_break) is rule


def test_unmarked_callables_have_no_rule() -> None:
    for fn in (np.sin, len, _scale, operator.add, print):
        assert rule_for(fn) is None


def test_a_later_registration_replaces_an_earlier_one() -> None:
    allow_in_graph(_scale)
    disallow_in_graph(_scale)
    rule = rule_for(_scale)
    assert rule is not None and rule.kind is RuleKind.DISALLOW


# --- allow_in_graph --------------------------------------------------------------------------


def _normalize(x: Any) -> Any:
    return (x - x.mean()) / (x.std() + 1.0)


def test_allow_in_graph_registers_an_opaque_extern_op() -> None:
    assert allow_in_graph(_normalize) is _normalize
    rule = rule_for(_normalize)
    assert rule is not None
    assert rule.kind is RuleKind.ALLOW
    assert not rule.breaks
    op = rule.op()
    assert op.kind is OpKind.EXTERN
    assert "_normalize" in op.name
    assert rule.op() is op  # one op per function


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
def test_allowed_op_meta_matches_numpy(dtype: str) -> None:
    allow_in_graph(_normalize)
    op = rule_for(_normalize).op()  # type: ignore[union-attr]
    x = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    expected = _normalize(x)
    meta = op.meta(ArrayMeta(x.shape, x.dtype))
    assert isinstance(meta, ArrayMeta)
    assert meta.shape == expected.shape
    assert meta.dtype == expected.dtype


def test_allowed_op_runs_in_a_graph_like_the_function() -> None:
    allow_in_graph(_scale)
    op = rule_for(_scale).op()  # type: ignore[union-attr]
    graph = Graph()
    a = graph.placeholder("a", ArrayMeta((5,), "float32"))
    b = graph.call(op, a, factor=0.5)
    graph.output = (b,)
    assert "allowed[" in str(graph)
    assert b.meta == ArrayMeta((5,), "float32")
    x = np.arange(5, dtype=np.float32)
    (result,) = run_graph(graph, [x])
    np.testing.assert_array_equal(result, _scale(x, 0.5))
    assert result.dtype == np.float32


def test_allowed_op_takes_weak_python_scalars() -> None:
    def add(x: Any, y: Any) -> Any:
        return x + y

    allow_in_graph(add)
    op = rule_for(add).op()  # type: ignore[union-attr]
    meta = op.meta(ArrayMeta((3,), "int8"), ScalarMeta(int))
    assert meta == ArrayMeta((3,), "int8")  # NEP 50: the Python int stays weak


def test_allowed_functions_with_one_name_get_distinct_ops() -> None:
    def make(k: float) -> Any:
        def f(x: Any) -> Any:
            return x * k

        return f

    first, second = make(1.0), make(2.0)
    allow_in_graph(first)
    allow_in_graph(second)
    assert rule_for(first).op().name != rule_for(second).op().name  # type: ignore[union-attr]


def test_allowed_op_refuses_results_that_are_not_arrays() -> None:
    def shape_of(x: Any) -> Any:
        return x.shape

    allow_in_graph(shape_of)
    op = rule_for(shape_of).op()  # type: ignore[union-attr]
    with pytest.raises(Unsupported, match="must return one array"):
        op.meta(ArrayMeta((2,), "float64"))


def test_allowed_op_refuses_symbolic_shapes() -> None:
    allow_in_graph(_scale)
    op = rule_for(_scale).op()  # type: ignore[union-attr]
    with pytest.raises(Unsupported, match="symbolic"):
        op.meta(ArrayMeta((sympy.Symbol("s0"),), "float64"))


def test_rules_other_than_allow_have_no_op() -> None:
    disallow_in_graph(_scale)
    with pytest.raises(ValueError, match="no op"):
        rule_for(_scale).op()  # type: ignore[union-attr]


def test_a_disabled_function_cannot_be_allowed() -> None:
    with pytest.raises(ValueError, match="disabled"):
        allow_in_graph(disable(_scale))


# --- substitute_in_graph ---------------------------------------------------------------------


def test_substitute_in_graph_registers_the_polyfill_for_the_original() -> None:
    @substitute_in_graph(operator.indexOf)
    def index_of(a: Any, b: Any, /) -> int:
        for i, item in enumerate(a):
            if item is b or item == b:
                return i
        raise ValueError("sequence.index(x): x not in sequence")

    for target in (operator.indexOf, index_of):
        rule = rule_for(target)
        assert rule is not None
        assert rule.kind is RuleKind.SUBSTITUTE
        assert not rule.breaks
        assert rule.original is operator.indexOf
        assert rule.polyfill is not None and rule.polyfill.__name__ == "index_of"
        assert not rule.can_constant_fold_through
    # The polyfill agrees with the original, and the returned function is the original eagerly.
    assert rule.polyfill([1, 2, 3, 4, 5], 3) == operator.indexOf([1, 2, 3, 4, 5], 3) == 2
    assert index_of([1, 2, 3], 1) == 0
    with pytest.raises(ValueError):
        index_of([1, 2, 3], 9)


def test_the_substituted_function_calls_the_original_eagerly() -> None:
    def original(x: int, y: int = 1) -> str:
        return "original"

    @substitute_in_graph(original, can_constant_fold_through=True)
    def polyfill(x: int, y: int = 1) -> str:
        return "polyfill"

    assert polyfill(1) == "original"
    rule = rule_for(original)
    assert rule is not None and rule.can_constant_fold_through
    assert rule.polyfill is not None and rule.polyfill(1) == "polyfill"


@pytest.mark.parametrize(
    "source",
    [
        "def p(a, b): pass",  # positional-only in the original
        "def p(a, /): pass",  # a parameter missing
        "def p(a, b, /, c=None): pass",  # an extra one
    ],
)
def test_substitute_in_graph_checks_the_signature(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(TypeError, match="signature mismatch"):
        substitute_in_graph(operator.indexOf)(namespace["p"])
    assert rule_for(operator.indexOf) is None


def test_signature_check_compares_names_kinds_and_defaults() -> None:
    def original(x: int, *, scale: float = 1.0) -> float:
        return x * scale

    def renamed(y: int, *, scale: float = 1.0) -> float:
        return y * scale

    def other_default(x: int, *, scale: float = 2.0) -> float:
        return x * scale

    def annotated_differently(x: Any, *, scale: Any = 1.0) -> Any:
        return x * scale

    for polyfill in (renamed, other_default):
        with pytest.raises(TypeError, match="signature mismatch"):
            substitute_in_graph(original)(polyfill)
    substitute_in_graph(original)(annotated_differently)
    assert rule_for(original) is not None


def test_skip_signature_check() -> None:
    def loose(*args: Any) -> int:
        return 0

    substitute_in_graph(operator.indexOf, skip_signature_check=True)(loose)
    assert rule_for(operator.indexOf) is not None


def test_substitute_in_graph_refuses_a_second_polyfill_and_non_functions() -> None:
    def first(a: Any, b: Any, /) -> int:
        return 0

    def second(a: Any, b: Any, /) -> int:
        return 1

    substitute_in_graph(operator.indexOf)(first)
    with pytest.raises(ValueError, match="already has a polyfill"):
        substitute_in_graph(operator.indexOf)(second)
    with pytest.raises(TypeError, match="Python function"):
        substitute_in_graph(operator.countOf)(len)
    with pytest.raises(TypeError, match="callable"):
        substitute_in_graph(42)  # type: ignore[arg-type]


def test_allowed_ops_are_found_by_name_until_cleared() -> None:
    from numpile_capture.trace_rules import allowed_op_named

    allow_in_graph(_normalize)
    op = rule_for(_normalize).op()  # type: ignore[union-attr]
    assert allowed_op_named(op.name) is op
    assert allowed_op_named("add") is None  # canonical ops live in the op registry
    clear()
    assert allowed_op_named(op.name) is None


def test_scoped_rules_undo_only_what_was_registered_inside() -> None:
    def kept(x: Any) -> Any:
        return x

    def dropped(x: Any) -> Any:
        return x

    disallow_in_graph(kept)
    with scoped_rules():
        allow_in_graph(dropped)
        clear()
        assert rule_for(kept) is None
    assert rule_for(dropped) is None
    rule = rule_for(kept)
    assert rule is not None and rule.kind is RuleKind.DISALLOW
