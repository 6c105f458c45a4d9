"""Graph breaks with resume functions, checked against eager: values, prints, mutations."""

from __future__ import annotations

import contextlib
import copy
import json
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import Unsupported, compile_function, explain
from numpile_capture.config import config
from numpile_capture.dispatch import CaptureEvent, CaptureFallbackWarning, recording_captures
from numpile_capture.fallbacks import NumpilePerformanceWarning

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, tuple | list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    else:
        assert a == b


def differential(
    fn: Callable[..., Any],
    make_args: Callable[[], tuple[Any, ...]],
    capsys: pytest.CaptureFixture[str],
    *,
    calls: int = 2,
    **options: Any,
) -> list[CaptureEvent]:
    """Run `fn` eagerly and compiled `calls` times on fresh arguments; compare everything."""
    compiled = compile_function(fn, backend="eager", **options)
    events: list[CaptureEvent] = []
    for _ in range(calls):
        eager_args = make_args()
        compiled_args = copy.deepcopy(eager_args)
        expected = fn(*eager_args)
        expected_out = capsys.readouterr().out
        with recording_captures() as seen, warnings.catch_warnings():
            warnings.simplefilter("error", CaptureFallbackWarning)
            got = compiled(*compiled_args)
        events += seen
        assert capsys.readouterr().out == expected_out
        _same(got, expected)
        _same(list(compiled_args), list(eager_args))
    return events


def _breaks(events: list[CaptureEvent]) -> list[str]:
    return [event.break_reason for event in events if event.break_reason is not None]


def _graphs(events: list[CaptureEvent]) -> int:
    return sum(1 for event in events if event.graph is not None)


def _prints_between(x: np.ndarray) -> np.ndarray:
    y = np.sin(x) * 2
    print("y is", y.shape, y.dtype)
    return np.cos(y) + x


def test_print_breaks_and_resumes(capsys: pytest.CaptureFixture[str]) -> None:
    events = differential(_prints_between, lambda: (np.arange(4.0),), capsys)
    assert _graphs(events) == 2  # before and after the print; the second call hits the cache
    (reason,) = _breaks(events)
    assert "print" in reason
    assert events[0].lineno == _prints_between.__code__.co_firstlineno + 2
    assert events[0].filename == __file__


def _branch(x: np.ndarray) -> np.ndarray:
    y = x * 2
    if y.sum() > 3:
        return y + 1
    return y - 1


def test_data_dependent_branch_takes_both_paths(capsys: pytest.CaptureFixture[str]) -> None:
    compiled = compile_function(_branch, backend="eager")
    with recording_captures() as events:
        for sign in (1.0, -1.0, 1.0, -1.0):
            x = sign * np.arange(4.0)
            _same(compiled(x), _branch(x))
    # the graph before the branch, then one resume function per side, each compiled once
    assert [event.break_reason is not None for event in events] == [True, False, False]
    assert "branching on array values" in str(events[0].break_reason)
    differential(_branch, lambda: (-np.arange(3.0),), capsys)


def _item_and_float(x: np.ndarray) -> Any:
    a = x.max().item()
    b = float(x.sum())
    return x * a + b, a, b


def test_item_breaks_and_float_stays_in_the_graph(capsys: pytest.CaptureFixture[str]) -> None:
    # `.item()` breaks; `float(x.sum())` is a `python_number` node, a run-time Python float.
    events = differential(_item_and_float, lambda: (np.arange(3.0),), capsys)
    assert len(_breaks(events)) == 1


def _shout(x: np.ndarray) -> np.ndarray:
    print("in callee", x.shape)
    return x + 1


def _calls_a_breaking_function(x: np.ndarray) -> np.ndarray:
    return np.cos(_shout(x * 2)) + 1


def test_break_inside_an_inlined_call_compiles_the_callee(
    capsys: pytest.CaptureFixture[str],
) -> None:
    events = differential(_calls_a_breaking_function, lambda: (np.ones(3),), capsys)
    names = [event.name for event in events]
    assert names[0] == "_calls_a_breaking_function"
    assert "_shout" in names  # the callee is compiled on its own, and breaks itself
    assert _graphs(events) >= 3


def _live_stack(x: np.ndarray, n: int) -> Any:
    values = [np.sin(x), print("middle", n, sep="|", end="!\n"), x * n]
    return np.add(x, _shout(values[2])), values


def test_live_stack_values_and_keywords(capsys: pytest.CaptureFixture[str]) -> None:
    differential(_live_stack, lambda: (np.arange(3.0), 4), capsys)


def _nested_call_argument(x: np.ndarray) -> Any:
    return np.maximum(x * 3, _identity_printing(x + 1))


def _identity_printing(value: Any) -> Any:
    print(value)
    return value


def test_null_below_the_break_on_the_stack(capsys: pytest.CaptureFixture[str]) -> None:
    differential(_nested_call_argument, lambda: (np.arange(3.0),), capsys)


def _library_call(x: np.ndarray) -> Any:
    y = x * 2
    text = json.dumps({"n": int(y.shape[0])})
    return y + len(text), text


def test_unknown_library_call_runs_in_python(capsys: pytest.CaptureFixture[str]) -> None:
    events = differential(_library_call, lambda: (np.ones(2),), capsys)
    assert any("json" in reason for reason in _breaks(events))


def _loop_with_print(x: np.ndarray) -> np.ndarray:
    for i in range(3):
        x = x + i
        print(i)
    return x


def _cells_with_print_then_rebound(x: np.ndarray) -> np.ndarray:
    def inner() -> np.ndarray:
        return x + 1

    print("inside")
    x = x * 2  # rebinds the cell the live closure reads
    return inner()


def _break_in_try(x: np.ndarray) -> np.ndarray:
    try:
        print("inside")
        return x + 1
    except ValueError:
        return x


@pytest.mark.parametrize(
    ("fn", "why"),
    [(_cells_with_print_then_rebound, "cells")],
)
def test_unresumable_breaks_run_the_frame_eagerly(
    fn: Callable[..., Any], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    compiled = compile_function(fn, backend="eager")
    with pytest.warns(CaptureFallbackWarning, match=why):
        got = compiled(np.ones(2))
    printed = capsys.readouterr().out
    _same(got, fn(np.ones(2)))
    assert capsys.readouterr().out == printed


def _with_block(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        y = x + 1
    return y


def test_with_block_of_a_library_manager_enters_and_exits_in_python(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The manager's constructor, entering it and leaving it break; the body between is
    # captured by a resume function that runs inside the entered block.
    events = differential(_with_block, lambda: (np.ones(2),), capsys)
    assert not any(event.eager and not event.internal for event in events)
    ops = [node.op.name for e in events if e.graph is not None for node in e.graph if node.op]
    assert "add" in ops


def test_break_in_try_resumes_inside_the_try(capsys: pytest.CaptureFixture[str]) -> None:
    events = differential(_break_in_try, lambda: (np.ones(2),), capsys)
    assert not any(event.eager and not event.internal for event in events)


def test_fullgraph_raises_at_the_first_break_with_the_line() -> None:
    compiled = compile_function(_prints_between, backend="eager", fullgraph=True)
    with pytest.raises(Unsupported, match="print") as info:
        compiled(np.ones(2))
    assert info.value.filename == __file__
    assert info.value.lineno == _prints_between.__code__.co_firstlineno + 2
    assert f"{__file__}:{info.value.lineno}" in str(info.value)


def _raises_on_data(x: np.ndarray) -> np.ndarray:
    y = x - 1
    if y.min() < 0:
        raise ValueError(f"negative: {y.shape}")
    return y


def test_exceptions_after_a_break_propagate_as_in_eager() -> None:
    compiled = compile_function(_raises_on_data, backend="eager")
    with pytest.raises(ValueError, match=r"negative: \(3,\)"):
        compiled(np.zeros(3))
    _same(compiled(np.full(3, 5.0)), _raises_on_data(np.full(3, 5.0)))


def _mutates_then_prints(x: np.ndarray) -> np.ndarray:
    x += 1
    print("mutated")
    x *= 2
    return x[1:]


def test_input_mutation_and_views_across_a_break(capsys: pytest.CaptureFixture[str]) -> None:
    differential(_mutates_then_prints, lambda: (np.arange(4.0),), capsys)
    x = np.arange(4.0)
    out = compile_function(_mutates_then_prints, backend="eager")(x)
    assert np.shares_memory(out, x)


def test_closures_resume(capsys: pytest.CaptureFixture[str]) -> None:
    scale = 3.0

    def scaled(x: np.ndarray) -> np.ndarray:
        y = x * scale
        print("scaled")
        return y + scale

    differential(scaled, lambda: (np.ones(2),), capsys)


def _two_breaks(x: np.ndarray) -> np.ndarray:
    a = x + 1
    print("one")
    b = a * 2
    print("two")
    return b - x


def test_two_breaks_make_three_graphs(capsys: pytest.CaptureFixture[str]) -> None:
    events = differential(_two_breaks, lambda: (np.ones(3),), capsys)
    assert _graphs(events) == 3
    assert len(_breaks(events)) == 2


def _returns_a_lambda(x: np.ndarray) -> Any:
    y = x + 1
    return y, lambda: 1


def test_returning_a_value_the_graph_cannot_hold() -> None:
    compiled = compile_function(_returns_a_lambda, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)
        y, made = compiled(np.ones(2))
    _same(y, np.full(2, 2.0))
    assert made() == 1


def test_recompile_after_a_break_is_recorded() -> None:
    from numpile_guards import cache_for

    compiled = compile_function(_prints_between, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(np.ones(2))
        compiled(np.ones(3))
    reasons = cache_for(_prints_between.__code__).recompile_reasons
    assert len(reasons) == 1
    assert "L['x']" in str(reasons[0])


def _work_then_loop(x: np.ndarray) -> np.ndarray:
    y = np.exp(x) * 2
    for i in range(3):
        y = y + i
        print("step", i)
    return y - 1


def _while_on_data(x: np.ndarray) -> np.ndarray:
    y = np.exp(x) * 2
    while y.sum().item() < 100:  # `.item()` breaks (`float()` would be a node)
        y = y * 2
    return y


@pytest.mark.parametrize("fn", [_work_then_loop, _while_on_data, _loop_with_print])
def test_break_in_a_loop_resumes_inside_the_loop(
    fn: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # The graph runs up to the break in the first iteration; resume functions capture the
    # rest of the body and each later iteration; nothing falls back to a whole eager frame.
    # (A body this small would run whole in Python by default: see loop_region.)
    with config.patch(small_loops_in_python=False):
        events = differential(fn, lambda: (np.ones(3),), capsys)
    first = events[0]
    assert first.graph is not None and first.break_reason is not None
    ops = [node.op.name for node in first.graph if node.op is not None]
    if fn is not _loop_with_print:
        assert ops[:2] == ["exp", "multiply"]
    assert not any(event.eager and not event.internal for event in events)
    later = [event for event in events[1:] if event.graph is not None]
    assert any(node.op is not None for event in later for node in event.graph)


def _divide_or_zeros(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    try:
        r = x / y
    except (FloatingPointError, RuntimeWarning):
        r = np.zeros_like(x)
    return r + 1


@contextlib.contextmanager
def _warnings_filter(action: str) -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter(action)
        # The graph break's own performance warning (once per function) is not NumPy's:
        # under "error" it would raise from whichever call captures first.
        warnings.simplefilter("ignore", NumpilePerformanceWarning)
        yield


_QUIET_AND_RAISING = {
    "errstate": (lambda: np.errstate(divide="ignore"), lambda: np.errstate(divide="raise")),
    "warnings filter": (lambda: _warnings_filter("ignore"), lambda: _warnings_filter("error")),
}


@pytest.mark.parametrize("how", list(_QUIET_AND_RAISING))
def test_an_entry_is_guarded_on_whether_numpys_errors_raise(how: str) -> None:
    # While NumPy's errors raise (its error state, or an "error" filter on its warnings)
    # the division in the try block breaks (its handler must see the error); otherwise
    # it is captured. A call under the other state than the capture's fails the entry's
    # guard and captures again, so the handler still sees the error.
    quiet, raising = _QUIET_AND_RAISING[how]
    compiled = compile_function(_divide_or_zeros, backend="eager")
    x, y = np.ones(3), np.zeros(3)
    for _ in range(2):
        with quiet():
            np.testing.assert_array_equal(compiled(x, y), np.full(3, np.inf))
        with raising():
            np.testing.assert_array_equal(compiled(x, y), np.ones(3))
    with quiet():
        guards = [str(guard) for guard in explain(_divide_or_zeros)(x, y).guards]
    assert "EQUALS_MATCH(STATE['numpy_errors_raise'], False)" in guards


# -- locals captured by inner functions (cells) ------------------------------------------------


def _closure_made_after_the_break(x: np.ndarray) -> np.ndarray:
    scale = x.sum()
    print("before the closure")
    scaled = lambda y: y * scale  # noqa: E731
    return scaled(x)


def _closure_dead_at_the_break(x: np.ndarray) -> np.ndarray:
    scale = x.sum()
    y = (lambda v: v * scale)(x)
    print("the closure is gone")
    scale = scale + 1.0
    return y + scale


def _closure_per_iteration(x: np.ndarray, n: int) -> np.ndarray:
    acc = x * 0
    for i in range(n):
        step = lambda y: y + i  # noqa: E731, B023 (a cell per iteration, on purpose)
        acc = step(acc)
        print(i)
    return acc


def _sort_key_over_a_local(values: list[float]) -> list[float]:
    weight = -2
    print("sorting")
    return sorted(values, key=lambda v: v * weight)


def _closure_live_across_the_break(x: np.ndarray) -> np.ndarray:
    scale = x.sum()
    offsets = (1.0, x * 2)

    def shifted(y: np.ndarray, k: float = 2.0) -> np.ndarray:
        return y * scale + k + offsets[0] + offsets[1]

    print("the closure lives on")
    x += 1.0  # in place, after the break; offsets[1] is a copy made before it
    return shifted(x) + shifted(x, k=0.5) + scale


def _recursive_inner_function(x: np.ndarray) -> np.ndarray:
    def fib(n: int) -> int:
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    print("defined")
    return x * fib(6)


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (_closure_live_across_the_break, (np.arange(3.0),)),
        (_recursive_inner_function, (np.arange(3.0),)),
        (_closure_made_after_the_break, (np.arange(3.0),)),
        (_closure_dead_at_the_break, (np.arange(3.0),)),
        (_closure_per_iteration, (np.arange(3.0), 4)),
        (_sort_key_over_a_local, ([3.0, 1.0, 2.0],)),
    ],
)
def test_a_frame_with_cells_resumes_after_a_break(
    fn: Callable[..., Any], args: tuple[Any, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    compiled = compile_function(fn, backend="eager")
    with warnings.catch_warnings(), recording_captures() as events:
        warnings.simplefilter("error", CaptureFallbackWarning)
        got = compiled(*copy.deepcopy(args))
        again = compiled(*copy.deepcopy(args))
    printed = capsys.readouterr().out
    want = fn(*copy.deepcopy(args))
    _same(got, want)
    _same(again, want)
    assert printed == 2 * capsys.readouterr().out
    assert any(event.break_reason for event in events)  # it did break, and resumed compiled


def _closure_whose_variable_is_rebound_after_the_break(x: np.ndarray) -> np.ndarray:
    scale = 2.0
    scaled = lambda y: y * scale  # noqa: E731
    print("rebinding next")
    scale = 3.0
    return scaled(x)


def _closure_that_assigns_its_variable(x: np.ndarray) -> np.ndarray:
    total = 0.0

    def add(value: float) -> None:
        nonlocal total
        total = total + value

    add(1.0)
    print("then again")
    add(2.0)
    return x * total


@pytest.mark.parametrize(
    "fn", [_closure_whose_variable_is_rebound_after_the_break, _closure_that_assigns_its_variable]
)
def test_a_live_closure_whose_cell_is_assigned_runs_the_frame_eagerly(
    fn: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # Fresh cells on both sides would not see each other's assignments: eager, and correct.
    compiled = compile_function(fn, backend="eager")
    with pytest.warns(CaptureFallbackWarning, match="assigns them again"):
        got = compiled(np.arange(3.0))
    _same(got, fn(np.arange(3.0)))


def _closure_over_a_list_mutated_after_the_break(x: np.ndarray) -> np.ndarray:
    offsets = [1.0]
    shifted = lambda y: y + offsets[0]  # noqa: E731
    print("mutating next")
    offsets[0] = 5.0
    return shifted(x)


def test_a_live_closure_over_a_list_runs_the_frame_eagerly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The list would reach the resume function twice (a local, a closure cell) as two
    # sources: capture would not see the mutation through one from the other.
    fn = _closure_over_a_list_mutated_after_the_break
    compiled = compile_function(fn, backend="eager")
    with pytest.warns(CaptureFallbackWarning, match="closes over locals"):
        got = compiled(np.arange(3.0))
    _same(got, fn(np.arange(3.0)))
