"""The compiled check: clause order, shape relations, guard filters, timing and logs."""

from __future__ import annotations

import logging
from typing import Any

import attrs
import numpy as np
import pytest

import numpile_runtime as rt
from numpile_guards import (
    ArraySpec,
    AttrSource,
    GlobalSource,
    Guard,
    GuardFilterEntry,
    GuardKind,
    ItemSource,
    LocalSource,
    ShapeRelation,
    Source,
    compile_guards,
    differentiating_guards,
    filter_guards,
    guard_failure,
    keep_array_guards_unsafe,
    skip_all_guards_unsafe,
    skip_guard_on_globals_unsafe,
    split_guard_filter,
)


def spec_of(array: np.ndarray[Any, Any]) -> ArraySpec:
    return ArraySpec(type(array), array.dtype, tuple(array.shape), tuple(array.strides))


def array_guard(name: str, array: np.ndarray[Any, Any]) -> Guard:
    return Guard(GuardKind.ARRAY_MATCH, LocalSource(name), spec_of(array))


@attrs.frozen
class Relation:
    # A stand-in for the shape environment's guards: Python text over sources.
    text: str

    def evaluate(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> bool:
        try:
            return bool(eval(self.text, {"L": L, "G": G, "F": F}))
        except Exception:
            return False


@attrs.frozen
class TextSource(Source):
    text: str

    @property
    def name(self) -> str:
        return f"({self.text})"


def relation_guard(text: str) -> Guard:
    relation = Relation(text)
    return Guard(GuardKind.SHAPE_RELATION, TextSource(text), relation)


def body(source: str) -> list[str]:
    # The clauses of the generated `and` chain, in order.
    lines = [line.strip() for line in source.splitlines()]
    start = lines.index("if (") + 1
    end = lines.index("):")
    return [line.removeprefix("and ") for line in lines[start:end]]


def test_clauses_run_types_then_dtypes_then_shapes_then_strides_then_values() -> None:
    guards = [
        Guard(GuardKind.EQUALS_MATCH, LocalSource("n"), 3),
        Guard(GuardKind.ID_MATCH, GlobalSource("np"), np),
        array_guard("x", np.zeros(3)),
        array_guard("y", np.zeros((2, 2), np.float32)),
        Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int),
    ]
    clauses = body(compile_guards(guards).source)
    kinds = []
    for clause in clauses:
        if clause.startswith("type("):
            kinds.append("type")
        elif ".dtype" in clause:
            kinds.append("dtype")
        elif ".shape" in clause:
            kinds.append("shape")
        elif ".strides" in clause:
            kinds.append("strides")
        elif " is " in clause:
            kinds.append("identity")
        else:
            kinds.append("other")
    expected = ["type", "type", "type", "dtype", "dtype", "shape", "shape", "type"]
    expected += ["strides", "strides", "identity"]
    assert kinds == expected
    # The value of the argument n (with its own type check) runs after the shapes; the
    # identity of a global runs last.
    assert clauses[7].endswith("== 3")
    assert clauses[-1].startswith("G['np'] is _c")


def test_identity_of_an_argument_runs_with_the_type_checks() -> None:
    guards = [
        Guard(GuardKind.ID_MATCH, GlobalSource("np"), np),
        array_guard("x", np.zeros(3)),
        Guard(GuardKind.ID_MATCH, LocalSource("fn"), len),
    ]
    clauses = body(compile_guards(guards).source)
    assert clauses[1] == "L['fn'] is _c1"
    assert clauses[-1] == "G['np'] is _c3"


def test_each_value_is_fetched_once_per_call() -> None:
    check = compile_guards([array_guard("x", np.zeros(3)), array_guard("y", np.zeros(3))])
    assert check.source.count("L['x']") == 1
    assert check.source.count("L['y']") == 1


def test_shape_relation_is_inlined_and_agrees_with_its_failure_text() -> None:
    x_rows = ItemSource(AttrSource(LocalSource("x"), "shape"), 0)
    y_rows = ItemSource(AttrSource(LocalSource("y"), "shape"), 0)
    relation = relation_guard(f"{y_rows.name} == {x_rows.name}")
    assert isinstance(relation.expected, ShapeRelation)
    guards = [relation, relation_guard(f"{x_rows.name} % 4 == 0")]
    check = compile_guards(guards)
    assert "(L['y'].shape[0] == L['x'].shape[0])" in check.source
    for x, y, ok in [(8, 8, True), (8, 9, False), (6, 6, False), (12, 12, True)]:
        L = {"x": np.zeros(x), "y": np.zeros(y)}
        assert check(L, {}, None) is ok
        assert (check.failure(L, {}, None) is None) is ok
    failure = check.failure({"x": np.zeros(8), "y": np.zeros(9)}, {}, None)
    assert failure == (
        "L['y'].shape[0] == L['x'].shape[0]: false for L['y'].shape[0] = 9, L['x'].shape[0] = 8"
    )
    missing = check.failure({"x": np.zeros(8)}, {}, None)
    assert missing is not None and "L['y'].shape[0] not found (KeyError" in missing


def test_shape_relations_run_after_array_clauses() -> None:
    guards = [relation_guard("L['x'].shape[0] >= 2"), array_guard("x", np.zeros(3))]
    clauses = body(compile_guards(guards).source)
    assert clauses[-1] == "(L['x'].shape[0] >= 2)"
    # A wrong type fails on the cheap clause before the relation is evaluated.
    assert not compile_guards(guards)({"x": [1, 2, 3]}, {}, None)


def test_relation_failure_through_guard_failure_names_the_relation() -> None:
    guard = relation_guard("L['n'] > 2")
    assert guard_failure(guard, {"n": 3}, {}, None) is None
    assert guard_failure(guard, {"n": 1}, {}, None) == "L['n'] > 2: false for L['n'] = 1"
    assert str(guard) == "SHAPE_RELATION(L['n'] > 2)"


def test_differentiating_guards_keep_only_relations_that_differ() -> None:
    shared = relation_guard("L['x'].shape[0] >= 2")
    a = [shared, relation_guard("L['x'].shape[0] % 2 == 0")]
    b = [relation_guard("L['x'].shape[0] >= 2"), relation_guard("L['x'].shape[0] % 2 == 1")]
    diffs = differentiating_guards([a, b])
    assert [[g.expected.text for g in diff] for diff in diffs] == [
        ["L['x'].shape[0] % 2 == 0"],
        ["L['x'].shape[0] % 2 == 1"],
    ]


def _guards() -> list[Guard]:
    return [
        array_guard("x", np.zeros(3)),
        Guard(GuardKind.ID_MATCH, GlobalSource("np"), np),
        Guard(GuardKind.EQUALS_MATCH, AttrSource(GlobalSource("cfg"), "scale"), 2.0),
        Guard(GuardKind.EQUALS_MATCH, LocalSource("n"), 4),
        relation_guard("L['x'].shape[0] >= 2"),
    ]


def test_filter_entries_describe_each_guard() -> None:
    seen: list[GuardFilterEntry] = []

    def record(entries: list[GuardFilterEntry]) -> list[bool]:
        seen.extend(entries)
        return [True] * len(entries)

    assert filter_guards(_guards(), record) == tuple(_guards())
    assert [(e.name, e.kind, e.is_global) for e in seen] == [
        ("L['x']", "ARRAY_MATCH", False),
        ("G['np']", "ID_MATCH", True),
        ("G['cfg'].scale", "EQUALS_MATCH", True),
        ("L['n']", "EQUALS_MATCH", False),
        ("(L['x'].shape[0] >= 2)", "SHAPE_RELATION", False),
    ]
    assert seen[3].value == 4 and seen[3].guard == _guards()[3]


@pytest.mark.parametrize(
    ("helper", "kept"),
    [
        (skip_guard_on_globals_unsafe, ["L['x']", "L['n']", "(L['x'].shape[0] >= 2)"]),
        (keep_array_guards_unsafe, ["L['x']", "(L['x'].shape[0] >= 2)"]),
        (skip_all_guards_unsafe, []),
    ],
)
def test_filter_helpers(helper: Any, kept: list[str]) -> None:
    assert [guard.source.name for guard in filter_guards(_guards(), helper)] == kept


def test_filtered_check_ignores_what_was_dropped() -> None:
    check = compile_guards(filter_guards(_guards(), skip_guard_on_globals_unsafe))
    L = {"x": np.ones(3), "n": 4}
    assert check(L, {}, None)  # no globals at all: nothing global is checked
    assert not check({"x": np.ones(3), "n": 5}, {}, None)


@pytest.mark.parametrize("bad", [lambda entries: [True], lambda entries: [1] * len(entries)])
def test_filter_must_return_one_bool_per_guard(bad: Any) -> None:
    with pytest.raises(TypeError, match="one bool per guard entry"):
        filter_guards(_guards(), bad)


def test_split_guard_filter() -> None:
    assert split_guard_filter(None) == (None, None)
    assert split_guard_filter({"a": 1}) == (None, {"a": 1})
    fn = skip_all_guards_unsafe
    assert split_guard_filter({"guard_filter_fn": fn}) == (fn, None)
    assert split_guard_filter({"guard_filter_fn": fn, "a": 1}) == (fn, {"a": 1})
    with pytest.raises(TypeError, match="must be callable"):
        split_guard_filter({"guard_filter_fn": 3})


def test_compiling_guards_is_timed_as_the_guards_stage() -> None:
    rt.reset_compile_times()
    compile_guards(_guards())
    compile_guards(_guards())
    assert rt.compile_time_calls()["guards"] == 2
    assert rt.compile_times()["guards"] > 0.0


def test_named_compiles_list_their_guards_on_the_guards_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="numpile.guards"):
        compile_guards(_guards()[:2], name="model")
        compile_guards(_guards()[:2])
    messages = [record.getMessage() for record in caplog.records if record.levelno == logging.INFO]
    assert messages == [
        "GUARDS of model (2):\n"
        "  ARRAY_MATCH(L['x'], float64[3] strides=(8))\n"
        "  ID_MATCH(G['np'], module numpy)"
    ]
