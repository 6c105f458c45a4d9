"""A loop that cannot be kept compiles its body once: the index is a run-time input.

A loop whose body breaks the graph (a print, a library call, `float()` of an array), or
that is past the unroll budget, runs in Python, and each piece of its body is a resume
function. Those pieces compile once, not once per iteration: the index, counters and
carried scalars of a resume function inside a loop are graph inputs from the start, a
run-time int indexes arrays through `element_at` / `getitem_at`, and a break at a resume
function's entry guards the values it passes on by type. Each program runs eagerly and
compiled (the eager backend) and the compile count is bounded; at 10x the trip count the
pieces compile nothing new. These bodies are small, so by default the whole loop would run
in Python (`test_capture_loop_region.py`); here `small_loops_in_python` is off, as it is in
effect for a body that does array work.
"""

from __future__ import annotations

import contextlib
import io
import json
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, explain, reset
from numpile_capture.capture_events import CaptureEvent, recording_captures
from numpile_capture.config import config
from numpile_capture.testing import assert_same_as_eager as _same


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    with config.patch(small_loops_in_python=False):
        yield
    reset()


def _json_roundtrip(x: Any) -> Any:
    # The lead's example: a library call in every iteration.
    s = 0.0
    for i in range(x.shape[0]):
        y = np.sin(x[i]) * 2.0
        s = s + json.loads(json.dumps(float(y)))
    return s


def _prints(x: Any) -> Any:
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        print(i)
        out[i] = x[i] * 2 + x[i - 1]  # in place, a negative index in the first iteration
    return out


def _data_float(x: Any) -> Any:
    s = 0
    for i in range(x.shape[0]):
        s = s + float(x[i] * x[i])  # data-dependent: the value leaves the graph
    return s


def _past_the_budget(x: Any) -> Any:
    acc = x[0] * 0
    for i in range(x.shape[0] // 4):  # kept? no: `print`; unrolled past the budget
        a = x[i] * 2.0
        acc = acc + np.sin(np.sqrt(a + 1.0)) * np.cos(a)
        print(i)
    return acc


def _growing(x: Any) -> Any:
    out = np.zeros(0)
    for i in range(x.shape[0]):
        out = np.append(out, x[i] * 2)  # a carried array whose shape changes
        print(i)
    return out


def _nested(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0] // 3):
        for j in range(3):
            s = s + x[3 * i + j] * (i - j)
            print(j)
    return s


def _counted_while(x: Any) -> Any:
    k = 0
    s = 0.0
    while k < x.shape[0]:
        s = s + x[k] * k
        print(k)
        k += 1
    return s


def _rows(x: Any) -> Any:
    a = x.reshape(-1, 3)
    s = np.zeros(3)
    for row in a:
        s = s + row * 2
        print(row[0])
    return s


def _enumerated_rows(x: Any) -> Any:
    a = x.reshape(-1, 3)
    s = np.zeros(3)
    for i, row in enumerate(a):
        s = s + row * i
        print(i)
    return s


def _negative_range(x: Any) -> Any:
    s = 0
    for i in range(-x.shape[0], 0):
        s = s + x[i] * 1
        print(i)
    return s


def _int8_with_python_ints(x: Any) -> Any:
    # NEP 50: an int8 NumPy scalar plus the Python int index stays int8.
    s = np.int8(0)
    for i in range(x.shape[0] // 3):
        s = s + x[i] + i
        print(i)
    return s


# (program, dtype, graphs at most in the first run, captures at most at 10x the trip count)
PROGRAMS: list[tuple[Callable[[Any], Any], str, int, int]] = [
    (_json_roundtrip, "float64", 4, 2),
    (_prints, "float64", 4, 2),
    (_data_float, "float64", 4, 2),
    (_past_the_budget, "float64", 4, 2),
    (_growing, "float64", 6, 2),
    (_nested, "float64", 6, 2),
    (_counted_while, "float64", 5, 2),
    (_rows, "float64", 4, 2),
    (_enumerated_rows, "float64", 4, 2),
    (_negative_range, "int64", 4, 2),
    (_int8_with_python_ints, "int8", 5, 2),
]


def _run(compiled: Callable[[Any], Any], fn: Callable[[Any], Any], x: Any) -> list[CaptureEvent]:
    with contextlib.redirect_stdout(io.StringIO()), recording_captures() as events:
        got_x, want_x = x.copy(), x.copy()
        got = compiled(got_x)
        want = fn(want_x)
    _same(got, want)
    _same(got_x, want_x)
    return events


@pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p[0].__name__.strip("_"))
def test_the_pieces_of_a_loop_not_kept_compile_once(
    program: tuple[Callable[[Any], Any], str, int, int],
) -> None:
    fn, dtype, most, at_ten_times = program
    compiled = compile_function(fn, backend="eager")
    first = _run(compiled, fn, np.arange(36).astype(dtype))
    # Before: a new graph per iteration (the index baked in) until the recompile limit.
    assert 1 <= sum(event.graph is not None for event in first) <= most
    assert not any(event.eager for event in first)
    again = _run(compiled, fn, np.arange(36).astype(dtype)[::-1].copy())
    assert not again  # same sizes, other values: every piece hits
    longer = _run(compiled, fn, np.arange(360).astype(dtype))
    assert len(longer) <= at_ten_times  # the top-level function sees a new size, once


@pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")
def test_a_loop_too_long_to_unroll_compiles_nothing_new_at_ten_times_the_trip_count() -> None:
    # 1,100 iterations: not unrolled, so the loop breaks at its head with its bound read from
    # the input's size at call time; 11,000 iterations reuse every piece.
    compiled = compile_function(_json_roundtrip, backend="eager")
    x = np.linspace(0.0, 1.0, 1100)
    first = _run(compiled, _json_roundtrip, x)
    assert sum(event.graph is not None for event in first) <= 3
    assert len(first) <= 6
    assert _run(compiled, _json_roundtrip, np.linspace(0.0, 1.0, 11000)) == []


@pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")
def test_explain_names_the_loop_that_fell_back_once() -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        out = explain(_json_roundtrip)(np.linspace(0.0, 1.0, 1100))
    reasons = [reason.reason for reason in out.break_reasons]
    fell_back = [reason for reason in reasons if "loop not kept as a loop" in reason]
    assert len(fell_back) == 1
    assert "calling json.dumps" in fell_back[0]  # float(y) is a python_number node
    assert "a loop of 1100 iterations" in fell_back[0]
    assert len(reasons) <= 6  # one per piece, not one per iteration
    assert len(out.loops_not_kept) == 1


def _pick(x: Any, i: int) -> Any:
    return x[i] * 2


def _pick_row(a: Any, i: int) -> Any:
    return a[i] + a[i - 1]


def test_an_int_that_changes_indexes_at_run_time() -> None:
    # Automatic dynamic for ints: once `i` is seen changing it is a graph input, and
    # `x[i]` / `a[i]` index by its value at run time instead of specializing it again.
    pick = compile_function(_pick, backend="eager")
    pick_row = compile_function(_pick_row, backend="eager")
    x = np.arange(7.0)
    a = np.arange(12, dtype=np.int32).reshape(4, 3)
    with recording_captures() as events:
        for i in (0, 1, 2, 3, -1, -3):
            _same(pick(x, i), _pick(x, i))
            _same(pick_row(a, i), _pick_row(a, i))
    graphs = [event.graph for event in events if event.graph is not None]
    assert len(graphs) == 4  # per function: the value baked in, then run-time
    for i in (np.int64(2), np.int16(-2)):  # NumPy ints are specialized, as before
        _same(pick(x, i), _pick(x, i))
        _same(pick_row(a, i), _pick_row(a, i))
    assert any("element_at" in str(graph) for graph in graphs)
    assert any("getitem_at" in str(graph) for graph in graphs)


def _write_past_the_end(x: Any, y: Any) -> Any:
    for i in range(x.shape[0] + 2):
        y[i] = x[i] * 3
        print(i)
    return y


def test_an_index_error_comes_from_the_user_line_with_earlier_writes_kept() -> None:
    compiled = compile_function(_write_past_the_end, backend="eager")
    x = np.arange(5.0)
    got, want = np.zeros(5), np.zeros(5)
    with contextlib.redirect_stdout(io.StringIO()):
        with pytest.raises(IndexError) as eager:
            _write_past_the_end(x, want)
        with pytest.raises(IndexError) as raised:
            compiled(x, got)
    assert str(raised.value) == str(eager.value)
    _same(got, want)
    line = _write_past_the_end.__code__.co_firstlineno + 2
    frames = traceback.extract_tb(raised.value.__traceback__)
    assert any(f.filename == __file__ and f.lineno == line for f in frames)
    assert Path(__file__).exists()
