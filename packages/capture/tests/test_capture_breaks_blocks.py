"""Graph breaks inside loops, with blocks and try/except: the graph so far is compiled, the
breaking instruction runs in Python and a resume function continues inside the block."""

from __future__ import annotations

import copy
import io
import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, explain, run_graph
from numpile_capture.config import config
from numpile_capture.dispatch import CaptureEvent, CaptureFallbackWarning, recording_captures
from numpile_capture.graph_breaks import MAX_NESTED_RESUMES

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
    elif isinstance(a, Tracker):
        assert vars(a) == vars(b)
    else:
        assert a == b


def _run(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> list[CaptureEvent]:
    # Eager, then compiled twice (compile, cache hit): values, prints, input mutations.
    compiled = compile_function(fn, backend="eager")
    events: list[CaptureEvent] = []
    for _ in range(2):
        eager_args = make_args()
        compiled_args = copy.deepcopy(eager_args)
        try:
            expected: Any = fn(*eager_args)
        except Exception as exc:  # the program's own exception, compared below
            expected = exc
        printed = capsys.readouterr().out
        with recording_captures() as seen, warnings.catch_warnings():
            warnings.simplefilter("error", CaptureFallbackWarning)
            try:
                got: Any = compiled(*compiled_args)
            except Exception as exc:
                got = exc
        events += seen
        assert capsys.readouterr().out == printed
        if isinstance(expected, Exception):
            assert type(got) is type(expected) and str(got) == str(expected)
        else:
            _same(got, expected)
        _same(list(compiled_args), list(eager_args))
    return events


def _no_whole_frame_fallback(events: list[CaptureEvent]) -> None:
    assert not any(event.eager and not event.internal for event in events)


def _ops(events: list[CaptureEvent]) -> list[str]:
    return [node.op.name for e in events if e.graph is not None for node in e.graph if node.op]


# -- loops -----------------------------------------------------------------------------------


def _print_in_range_loop(x: np.ndarray) -> np.ndarray:
    y = np.exp(x)
    for i in range(4):
        y = y + i
        print("step", i)
        y = np.sin(y)
    return y


def _graph_break_in_list_loop(xs: list[np.ndarray]) -> np.ndarray:
    total = xs[0] * 0.0
    for a in xs:
        total = total + a
        print("added")
        total = total * 0.5
    return total


def _data_branch_in_while(x: np.ndarray) -> np.ndarray:
    k = 0
    while k < 4:
        x = np.cos(x)
        if x.sum() > 1.0:
            x = x - 0.25
        k += 1
    return x


def _break_statement_after_a_print(xs: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for a in xs:
        print("visit")
        if a.sum() > 5:
            break
        out.append(a * 2)
    return out


def _nested_loops(x: np.ndarray) -> np.ndarray:
    for i in range(2):
        for j in range(2):
            x = x + i * j
            print(i, j)
    return x


def _arrays() -> tuple[Any, ...]:
    return ([np.arange(3.0) + i for i in range(3)],)


@pytest.mark.parametrize(
    ("fn", "make_args"),
    [
        (_print_in_range_loop, lambda: (np.ones(3),)),
        (_graph_break_in_list_loop, _arrays),
        (_data_branch_in_while, lambda: (np.linspace(0.0, 1.0, 3),)),
        (_break_statement_after_a_print, _arrays),
        (_nested_loops, lambda: (np.ones(2),)),
    ],
)
def test_a_break_in_a_loop_resumes_inside_the_loop(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> None:
    events = _run(fn, make_args, capsys)
    _no_whole_frame_fallback(events)
    assert any(event.break_reason for event in events)


def test_the_loop_body_after_the_break_is_captured(capsys: Any) -> None:
    # A body this small would run whole in Python by default (loop_region).
    with config.patch(small_loops_in_python=False):
        events = _run(_print_in_range_loop, lambda: (np.ones(3),), capsys)
    first = events[0]
    assert first.graph is not None
    assert [node.op.name for node in first.graph if node.op] == ["exp", "add"]
    # the sin after the print is captured by resume functions, not run eagerly
    assert "sin" in _ops(events[1:])


def test_a_long_loop_that_breaks_each_iteration_stays_correct(capsys: Any) -> None:
    def long_loop(x: np.ndarray) -> np.ndarray:
        for i in range(3 * MAX_NESTED_RESUMES):
            x = x + 1.0
            print(i)
        return x

    compiled = compile_function(long_loop, backend="eager")
    with warnings.catch_warnings(), recording_captures() as events:
        warnings.simplefilter("error", CaptureFallbackWarning)  # no cache-size-limit fallback
        got = compiled(np.zeros(2))
        again = compiled(np.zeros(2))
    printed = capsys.readouterr().out
    np.testing.assert_array_equal(got, np.full(2, 3.0 * MAX_NESTED_RESUMES))
    np.testing.assert_array_equal(again, got)
    assert printed == 2 * "".join(f"{i}\n" for i in range(3 * MAX_NESTED_RESUMES))
    # The body resumes in one code object: a few compiles, not one per iteration.
    assert len(events) <= 6
    assert all(not event.eager for event in events)


def test_a_loop_that_breaks_each_iteration_runs_at_constant_stack_depth(capsys: Any) -> None:
    # Resume calls are made by the runner's loop (TailCall), not nested per iteration.
    def loop(x: np.ndarray, n: int) -> np.ndarray:
        for i in range(n):
            x = x * 0.5 + i
            print(i)
        return x

    graph_runs: list[int] = []

    def counting(graph: Any, example_inputs: Any) -> Callable[..., Any]:
        def run(*inputs: Any) -> Any:
            graph_runs.append(1)
            return run_graph(graph, list(inputs))

        return run

    compiled = compile_function(loop, backend=counting)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        # A body this small would run whole in Python by default (loop_region).
        with config.patch(small_loops_in_python=False):
            got = compiled(np.ones(3), 1000)
    finally:
        sys.setrecursionlimit(limit)
    np.testing.assert_array_equal(got, loop(np.ones(3), 1000))
    assert len(graph_runs) >= 1000  # every iteration's body ran compiled, none eagerly


def test_explain_counts_each_compiled_break_of_a_loop_once() -> None:
    out = explain(_graph_break_in_list_loop)([np.ones(2)] * 3)
    # The first print; the loop's step in Python after it; the print in the resumed body.
    # Later iterations resume in those same code objects and hit their cache entries.
    assert out.graph_break_count == 3
    assert any("resumed after a graph break" in reason.reason for reason in out.break_reasons)


# -- try/except --------------------------------------------------------------------------------


def _raise_caught(x: np.ndarray) -> np.ndarray:
    y = x + 1
    try:
        y = y * 2
        raise ValueError("caught below")
    except ValueError as error:
        print("caught", error)
        y = y - 1
    return y


def _print_in_try_finally(x: np.ndarray) -> np.ndarray:
    y = np.sqrt(x)
    try:
        print("in try")
        y = y + 1
    finally:
        print("finally")
    return y * 2


def _python_error_caught(x: np.ndarray) -> np.ndarray:
    y = x + 1
    try:
        index = int(y.sum())
        scale = [1.0, 2.0][index]
    except IndexError:
        scale = -1.0
    return y * scale


def _uncaught_error_propagates(x: np.ndarray) -> np.ndarray:
    try:
        print("about to fail")
        raise KeyError("not caught")
    except ValueError:
        return x
    return x + 1


def _library_error_caught(x: np.ndarray) -> np.ndarray:
    try:
        config = json.loads("not json")
    except ValueError:
        config = {"scale": 3.0}
    return x * config["scale"]


def _try_in_loop(xs: list[np.ndarray]) -> np.ndarray:
    out = xs[0] * 0
    for a in xs:
        try:
            out = out + a
            if a.sum() > 4:
                raise RuntimeError("big")
        except RuntimeError:
            out = out - 100
    return out


@pytest.mark.parametrize(
    ("fn", "make_args"),
    [
        (_raise_caught, lambda: (np.arange(3.0),)),
        (_print_in_try_finally, lambda: (np.arange(3.0),)),
        (_python_error_caught, lambda: (np.arange(3.0),)),
        (_python_error_caught, lambda: (np.full(3, -1 / 3),)),
        (_uncaught_error_propagates, lambda: (np.arange(3.0),)),
        (_try_in_loop, _arrays),
        (_library_error_caught, lambda: (np.arange(3.0),)),
    ],
)
def test_a_break_in_a_try_block_resumes_and_its_handler_runs_in_python(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> None:
    events = _run(fn, make_args, capsys)
    _no_whole_frame_fallback(events)


def test_the_try_body_before_the_break_is_captured(capsys: Any) -> None:
    events = _run(_print_in_try_finally, lambda: (np.arange(3.0),), capsys)
    assert events[0].graph is not None
    assert [node.op.name for node in events[0].graph if node.op] == ["sqrt"]
    assert "add" in _ops(events[1:])


# -- ops that raise on some data, inside a try block ----------------------------------------


def _inv_caught(m: np.ndarray) -> np.ndarray:
    y = np.sin(m)
    try:
        r = np.linalg.inv(m) * 2
    except np.linalg.LinAlgError:
        r = np.zeros_like(m)
    return r + y


def _index_caught(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    y = np.exp(x)
    try:
        return y[index] + 1
    except IndexError as error:
        print("caught", error)
        return y * 0


def _inv_uncaught(m: np.ndarray) -> np.ndarray:
    return np.linalg.inv(np.sin(m)) * 2


@pytest.mark.parametrize(
    ("fn", "make_args"),
    [
        (_inv_caught, lambda: (np.eye(3) * 2,)),
        (_inv_caught, lambda: (np.ones((3, 3)),)),
        (_index_caught, lambda: (np.arange(4.0), np.array([0, 3]))),
        (_index_caught, lambda: (np.arange(4.0), np.array([0, 4]))),
        (_index_caught, lambda: (np.arange(4.0), np.array([-5]))),
    ],
)
def test_an_op_that_raises_on_some_data_runs_where_its_handler_sees_it(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> None:
    # A graph runs outside the user's exception table: without the break, the singular
    # matrix's LinAlgError would escape the except clause that eager runs.
    events = _run(fn, make_args, capsys)
    _no_whole_frame_fallback(events)
    assert events[0].graph is not None
    first_ops = [node.op.name for node in events[0].graph if node.op]
    assert first_ops == ["sin"] if fn is _inv_caught else ["exp"]


def test_outside_a_try_block_an_op_that_may_raise_stays_in_the_graph() -> None:
    report = explain(_inv_uncaught)(np.eye(3))
    assert report.graph_break_count == 0
    assert report.op_count == 3
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        compile_function(_inv_uncaught, backend="eager")(np.zeros((3, 3)))


def _float_and_mask_ops_in_try(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    try:
        y = x**k + x[x > 0].sum() + np.nanargmax(x) * 0
    except ValueError:
        y = x
    return y


def _integer_power_in_try(a: np.ndarray, k: np.ndarray) -> np.ndarray:
    try:
        return a**k
    except ValueError:
        return a * 0


def test_only_ops_that_can_raise_on_their_data_break_in_a_try_block() -> None:
    # Float powers and boolean masks never raise; nanargmax can (an all-NaN slice), integer
    # powers can (a negative exponent).
    report = explain(_float_and_mask_ops_in_try)(np.arange(4.0), np.arange(4))
    assert [reason.reason.split(" may raise ")[0] for reason in report.break_reasons] == [
        "nanargmax"
    ]
    report = explain(_integer_power_in_try)(np.arange(4), np.arange(4))
    assert report.graph_break_count == 1
    assert "power may raise ValueError" in report.break_reasons[0].reason
    compiled = compile_function(_integer_power_in_try, backend="eager")
    _same(compiled(np.arange(4), np.array([1, 2, -1, 0])), np.zeros(4, dtype=np.int64))


# -- with blocks -------------------------------------------------------------------------------


class Tracker:
    """A context manager written in Python (inlined when the capture meets it)."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.depth = 0

    def __enter__(self) -> Tracker:
        self.depth += 1
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        self.depth -= 1
        self.log.append("exit" if kind is None else f"exit {kind.__name__}")
        return kind is KeyError  # swallows KeyError


def _errstate_with_a_print(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        y = np.log(x * 0)
        print("inside errstate", np.geterr()["divide"])
        y = y + 1
    print("after", np.geterr()["divide"])
    return y


def _user_manager_with_a_print(tracker: Tracker, x: np.ndarray) -> np.ndarray:
    with tracker as t:
        y = x * t.depth
        print("inside")
        y = y + t.depth
    return y


def _user_manager_swallows_an_error(tracker: Tracker, x: np.ndarray) -> np.ndarray:
    y = x
    with tracker:
        y = x * 2
        raise KeyError("swallowed by __exit__")
    return y


def _user_manager_sees_an_error(tracker: Tracker, x: np.ndarray) -> np.ndarray:
    with tracker:
        print("inside")
        raise ValueError("propagates through __exit__")
    return x


@pytest.mark.parametrize(
    ("fn", "make_args"),
    [
        (_errstate_with_a_print, lambda: (np.arange(3.0),)),
        (_user_manager_with_a_print, lambda: (Tracker(), np.arange(3.0))),
        (_user_manager_swallows_an_error, lambda: (Tracker(), np.arange(3.0))),
        (_user_manager_sees_an_error, lambda: (Tracker(), np.arange(3.0))),
    ],
)
def test_a_break_in_a_with_block_resumes_inside_it(
    fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], capsys: Any
) -> None:
    events = _run(fn, make_args, capsys)
    _no_whole_frame_fallback(events)


def test_exit_runs_once_whatever_the_path() -> None:
    for fn in (_user_manager_with_a_print, _user_manager_swallows_an_error):
        eager, compiled = Tracker(), Tracker()
        fn(eager, np.ones(2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile_function(fn, backend="eager")(compiled, np.ones(2))
        assert compiled.log == eager.log and compiled.depth == eager.depth == 0
    tracker = Tracker()
    with pytest.raises(ValueError, match="propagates"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile_function(_user_manager_sees_an_error, backend="eager")(tracker, np.ones(2))
    assert tracker.log == ["exit ValueError"] and tracker.depth == 0


def test_errstate_is_restored_after_the_block() -> None:
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with io.StringIO() as sink:
            import contextlib

            with contextlib.redirect_stdout(sink):
                compile_function(_errstate_with_a_print, backend="eager")(np.arange(3.0))
            assert "inside errstate ignore" in sink.getvalue()
    assert np.geterr() == before
