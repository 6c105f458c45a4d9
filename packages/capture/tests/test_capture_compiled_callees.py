"""`disable(recursive=False)`: the frame runs in Python, the functions it calls compile."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, is_compiling, reset
from numpile_capture.compiled_callees import (
    CALLEE_COMPILER,
    compiles_callees,
    run_compiling_callees,
)
from numpile_capture.trace_rules import disable, forbid_in_graph, rule_for, scoped_rules

counter = 0


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    with scoped_rules(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    reset()


def _compiled_by(seen: list[str]) -> Any:
    # A stand-in for CompiledFunction._wrap: it records which functions it was asked for.
    def wrap(fn: Any) -> Any:
        seen.append(fn.__name__)
        return fn

    return wrap


def _plus(x: Any) -> Any:
    return x + 1


def _times(x: Any, factor: int = 2, *, offset: int = 0) -> Any:
    return x * factor + offset


def _numbers() -> Iterator[int]:
    yield 1
    yield 2


def test_globals_and_cells_pass_through_the_compiler() -> None:
    local = _times

    def frame(x: Any) -> Any:
        return local(_plus(x), 3, offset=1) + len([np.sum(x)]) + sum(_numbers())

    seen: list[str] = []
    assert run_compiling_callees(frame, _compiled_by(seen), (np.float64(1.0),), {}) == 11.0
    # User functions are compiled; builtins, NumPy and generator functions are not.
    assert seen == ["_times", "_plus"]


def test_the_frame_keeps_pythons_semantics() -> None:
    def frame(x: Any, *rest: Any, scale: int = 1, **named: Any) -> Any:
        global counter
        counter += 1
        try:
            _plus(json.loads("oops"))
        except ValueError:
            total = _plus(x) * scale
        for value in rest:
            total = total + value
        return total, sorted(named)

    before = counter
    result = run_compiling_callees(frame, _compiled_by([]), (1, 2, 3), {"scale": 2, "b": 0})
    assert result == (9, ["b"])
    assert counter == before + 1


def test_outside_a_compiled_caller_nothing_is_compiled() -> None:
    assert CALLEE_COMPILER[_plus] is _plus


def test_marked_functions_keep_their_rule() -> None:
    quiet = disable(_plus)
    forbidden = forbid_in_graph(lambda: None, "test")
    shallow = disable(_times, recursive=False)
    seen: list[str] = []

    def frame() -> Any:
        return quiet, forbidden, shallow  # cells: read through the callee compiler

    got_quiet, got_forbidden, got_shallow = run_compiling_callees(frame, _compiled_by(seen), (), {})
    assert got_quiet is quiet and got_forbidden is forbidden
    assert got_shallow is not shallow and got_shallow(2) == 4  # runs as its own caller does
    assert seen == []
    assert compiles_callees(shallow) and not compiles_callees(quiet)
    assert rule_for(shallow) is not None


def test_a_shallow_disabled_function_called_from_compiled_code() -> None:
    seen: list[tuple[str, bool]] = []

    def leaf(x: Any) -> Any:
        seen.append(("leaf", is_compiling()))
        return x * 3

    @disable(recursive=False)
    def middle(x: Any) -> Any:
        seen.append(("middle", is_compiling()))
        try:
            return leaf(x) + 1
        finally:
            seen.append(("finally", is_compiling()))

    @compile_function(backend="eager")
    def top(x: Any) -> Any:
        return middle(x + 1) * 2

    for _ in range(2):
        np.testing.assert_array_equal(top(np.zeros(2)), [8.0, 8.0])
        assert seen == [("middle", False), ("leaf", True), ("finally", False)]
        seen.clear()


def test_nested_shallow_disabled_functions() -> None:
    seen: list[tuple[str, bool]] = []

    def leaf(x: Any) -> Any:
        seen.append(("leaf", is_compiling()))
        return x + 1

    @disable(recursive=False)
    def inner(x: Any) -> Any:
        seen.append(("inner", is_compiling()))
        return leaf(x)

    @disable(recursive=False)
    def outer(x: Any) -> Any:
        seen.append(("outer", is_compiling()))
        return inner(x)

    @compile_function(backend="eager")
    def top(x: Any) -> Any:
        return outer(x)

    np.testing.assert_array_equal(top(np.zeros(2)), [1.0, 1.0])
    assert seen == [("outer", False), ("inner", False), ("leaf", True)]
