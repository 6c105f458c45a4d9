"""Side effects replayed after the graph, trace rules at calls, and explain() across breaks."""

from __future__ import annotations

import copy
import operator
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import Unsupported, compile_function, explain, reset, trace_rules
from numpile_capture.dispatch import CaptureFallbackWarning, recording_captures

COUNTER = 0


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    global COUNTER
    reset()
    COUNTER = 0
    yield
    reset()
    # NOTE: no trace_rules.clear(): it would drop rules other modules registered at import.


class Box:
    """A user object whose attributes compiled code writes."""

    def __init__(self) -> None:
        self.note = "initial"


def _mutates_everything(x: np.ndarray, items: list[Any], table: dict[str, Any], box: Box) -> Any:
    global COUNTER
    y = np.sin(x)
    items.append(y)
    items[0] = "first"
    table["double"] = y * 2
    box.value = y + 1
    box.note = "written"
    COUNTER = COUNTER + 1
    return y.sum() + COUNTER


def _arguments() -> tuple[Any, ...]:
    return (np.arange(3.0), [0, 1], {"keep": 1}, Box())


def _assert_same_state(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    np.testing.assert_array_equal(a[0], b[0])
    assert len(a[1]) == len(b[1]) and a[1][0] == b[1][0]
    np.testing.assert_array_equal(a[1][-1], b[1][-1])
    assert list(a[2]) == list(b[2])
    np.testing.assert_array_equal(a[2]["double"], b[2]["double"])
    assert a[3].note == b[3].note
    np.testing.assert_array_equal(a[3].value, b[3].value)


@pytest.mark.parametrize("fullgraph", [False, True])
def test_side_effects_replay_without_a_break(fullgraph: bool) -> None:
    global COUNTER
    eager_args = _arguments()
    compiled_args = copy.deepcopy(eager_args)
    expected = _mutates_everything(*eager_args)
    COUNTER = 0
    compiled = compile_function(_mutates_everything, backend="eager", fullgraph=fullgraph)
    with recording_captures() as events:
        got = compiled(*compiled_args)
    assert got == expected
    assert COUNTER == 1
    _assert_same_state(compiled_args, eager_args)
    assert [event.break_reason for event in events] == [None]
    assert "G['COUNTER']" in {guard.source.name for guard in events[0].guards}


def _appends_then_prints(x: np.ndarray, items: list[Any]) -> Any:
    items.append(x * 2)
    print("items:", len(items))
    items.append(x * 3)
    return items[-1] + items[-2]


def test_side_effects_happen_before_the_break_in_program_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    items: list[Any] = [1]
    compiled = compile_function(_appends_then_prints, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)
        got = compiled(np.ones(2), items)
    assert capsys.readouterr().out == "items: 2\n"
    np.testing.assert_array_equal(got, np.full(2, 5.0))
    assert items[0] == 1 and len(items) == 3


def _global_read_after_write(x: np.ndarray) -> Any:
    global COUNTER
    COUNTER = 5
    return x + COUNTER


def test_global_written_then_read_sees_the_write() -> None:
    compiled = compile_function(_global_read_after_write, backend="eager", fullgraph=True)
    np.testing.assert_array_equal(compiled(np.zeros(2)), np.full(2, 5.0))
    assert COUNTER == 5


def _forced_break(x: np.ndarray) -> np.ndarray:
    y = x + 1
    trace_rules.graph_break()
    return y * 2


def test_graph_break_call_splits_the_graph() -> None:
    out = explain(_forced_break)(np.ones(2))
    assert out.graph_count == 2
    assert out.ops_per_graph == (("add",), ("multiply",))
    (reason,) = out.break_reasons
    assert "graph_break" in reason.reason
    assert reason.lineno == _forced_break.__code__.co_firstlineno + 2


def _quiet_helper(x: np.ndarray) -> np.ndarray:
    return x * 10


def _calls_disabled(x: np.ndarray, helper: Any) -> np.ndarray:
    return helper(x + 1) - 1


def test_disabled_and_disallowed_calls_break_and_run_eagerly() -> None:
    disabled = trace_rules.disable(_quiet_helper)
    out = explain(_calls_disabled)(np.ones(2), disabled)
    assert out.graph_break_count == 1 and "disable" in out.break_reasons[0].reason
    compiled = compile_function(_calls_disabled, backend="eager")
    np.testing.assert_array_equal(compiled(np.ones(2), disabled), np.full(2, 19.0))

    def running_total(x: np.ndarray) -> np.ndarray:
        return np.cumsum(x)

    trace_rules.disallow_in_graph(running_total)
    out = explain(lambda x: running_total(x) + 1)(np.ones(3))
    assert out.graph_break_count == 1 and "disallow" in out.break_reasons[0].reason


def test_allow_in_graph_is_one_node_under_fullgraph() -> None:
    def opaque(x: np.ndarray) -> np.ndarray:
        return x * 2 + 1

    trace_rules.allow_in_graph(opaque)

    def uses(x: np.ndarray) -> np.ndarray:
        return opaque(np.sin(x))

    compiled = compile_function(uses, backend="eager", fullgraph=True)
    with recording_captures() as events:
        np.testing.assert_allclose(compiled(np.arange(3.0)), np.sin(np.arange(3.0)) * 2 + 1)
    assert [(event.graph is not None, event.break_reason) for event in events] == [(True, None)]
    assert explain(uses)(np.arange(3.0)).op_count == 2


def test_substitute_in_graph_polyfill_works_with_fullgraph() -> None:
    # A local stand-in for a C function (operator.indexOf is the seeds' example, tested in
    # the api package; registering it here would refuse theirs).
    def index_of(a: Any, b: Any, /) -> int:
        return operator.indexOf(a, b)

    @trace_rules.substitute_in_graph(index_of)
    def index_of_polyfill(a: Any, b: Any, /) -> int:
        for i, item in enumerate(a):
            if item is b or item == b:
                return i
        raise ValueError("sequence.index(x): x not in sequence")

    def uses(x: np.ndarray) -> np.ndarray:
        return x + index_of([1, 2, 3], 3)

    compiled = compile_function(uses, backend="eager", fullgraph=True)
    with recording_captures() as events:
        np.testing.assert_array_equal(compiled(np.zeros(2)), np.full(2, 2.0))
    assert [(event.graph is not None, event.break_reason) for event in events] == [(True, None)]


def _three_graphs(x: np.ndarray) -> np.ndarray:
    a = np.exp(x)
    print("one")
    b = a.sum()
    if b > 1:
        b = b * 2
    return b + x


def test_explain_counts_graphs_breaks_lines_and_ops() -> None:
    out = explain(_three_graphs)(np.ones(2))
    first = _three_graphs.__code__.co_firstlineno
    assert out.graph_count == 3
    assert out.graph_break_count == 2
    assert [reason.lineno for reason in out.break_reasons] == [first + 2, first + 4]
    assert out.ops_per_graph[0] == ("exp",)
    assert "sum" in out.ops_per_graph[1]
    assert {guard.source.name for guard in out.guards} >= {"L['x']"}
    text = str(out)
    assert "Graph count: 3" in text and "Graph break count: 2" in text


def test_explain_reports_an_eager_fallback_as_a_break() -> None:
    def cells(x: np.ndarray) -> np.ndarray:
        def inner() -> np.ndarray:
            return x + 1

        print("tick")
        x = x * 2  # rebinds the cell the live closure reads: the frame runs eagerly
        return inner()

    out = explain(cells)(np.ones(2))
    assert out.graph_count == 0
    assert out.graph_break_count == 1
    assert "cells" in out.break_reasons[0].reason


def test_fullgraph_refuses_a_forced_break() -> None:
    compiled = compile_function(_forced_break, backend="eager", fullgraph=True)
    with pytest.raises(Unsupported, match="graph_break"):
        compiled(np.ones(2))


class Scaler:
    """A user object: attributes read and written, a method inlined."""

    offset = 1.0

    def __init__(self, factor: float) -> None:
        self.factor = factor
        self.calls = 0

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x * self.factor + self.offset


def _uses_an_object(x: np.ndarray, scaler: Scaler) -> np.ndarray:
    y = scaler.apply(x)
    scaler.calls = scaler.calls + 1
    scaler.last = y
    return y + scaler.calls


def test_user_objects_attributes_and_methods_are_captured_and_guarded() -> None:
    eager_obj, compiled_obj = Scaler(2.0), Scaler(2.0)
    expected = _uses_an_object(np.ones(2), eager_obj)
    compiled = compile_function(_uses_an_object, backend="eager", fullgraph=True)
    with recording_captures() as events:
        got = compiled(np.ones(2), compiled_obj)
    np.testing.assert_array_equal(got, expected)
    assert compiled_obj.calls == eager_obj.calls == 1
    np.testing.assert_array_equal(compiled_obj.last, eager_obj.last)
    names = {guard.source.name for guard in events[0].guards}
    assert "L['scaler'].factor" in names or any("factor" in name for name in names)
    compiled(np.ones(2), compiled_obj)  # calls changed: a recompile, not a stale constant
    assert compiled_obj.calls == 2
    np.testing.assert_array_equal(compiled_obj.last, np.full(2, 3.0))


def _write_then_read_through_another_source(values: list[float], read: Any) -> float:
    values[0] = 5.0
    return float(read())


def test_a_list_reached_through_two_sources_is_one_value() -> None:
    # The list is an argument and a closure's cell: a write through one is seen through the
    # other; a call where they are two lists misses the aliased entry (`is not` guard).
    shared = [1.0]
    reader = lambda: shared[0]  # noqa: E731
    compiled = compile_function(_write_then_read_through_another_source, backend="eager")
    assert compiled(shared, reader) == 5.0
    shared[0] = 1.0
    assert compiled([1.0], reader) == 1.0
    assert compiled(shared, reader) == 5.0
    pair = {"a": 1.0}
    assert compiled([1.0], lambda: pair["a"]) == 1.0


class _Holder:
    def __init__(self) -> None:
        self.value = 1.0


def _write_attribute_then_read_through_another_source(holder: _Holder, read: Any) -> float:
    holder.value = 5.0
    return float(read())


def test_an_object_reached_through_two_sources_sees_its_own_writes() -> None:
    shared = _Holder()
    reader = lambda: shared.value  # noqa: E731
    compiled = compile_function(_write_attribute_then_read_through_another_source, backend="eager")
    assert compiled(shared, reader) == 5.0
    shared.value = 1.0
    assert compiled(_Holder(), reader) == 1.0
    assert compiled(shared, reader) == 5.0
