"""A loop not kept whose breaking body saves little work compiled runs whole in Python.

Its body's compiled pieces would cost more per iteration than the body's own Python, so
capture breaks at the loop's head and the loop runs as CPython runs it (`loop_region`):
no compiled piece runs per iteration, whatever the trip count, and the code after the
loop continues compiled from each exit (`break`, the iterator exhausted, an `else:`
clause). Each program runs eagerly and compiled with a backend that counts the graphs it
runs: values, dtypes, in-place writes, printed text and exceptions match eager, and the
count of graph runs does not grow with the trip count.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import Unsupported, compile_function, explain, reset, run_graph
from numpile_capture.bytecode import normalized_instructions
from numpile_capture.capture_events import recording_captures
from numpile_capture.config import config
from numpile_capture.graph import Graph
from numpile_capture.loop_region import LoopRegion
from numpile_capture.resume_code import BreakSite
from numpile_capture.testing import assert_same_as_eager as _same

pytestmark = pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def _json_roundtrip(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        y = np.sin(x[i]) * 2.0
        s = s + json.loads(json.dumps(float(y)))
    return s


def _data_float(x: Any) -> Any:
    s = 0
    for i in range(x.shape[0]):
        s = s + (x[i] * x[i]).item()  # `.item()` breaks (`float()` is a node now)
    return s


def _writes_in_place(x: Any) -> Any:
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        print(i)
        out[i] = x[i] * 2 + x[i - 1]
        x[i] = -x[i]  # the caller's array, written in place
    return out * 3.0


def _breaks_out(x: Any) -> Any:
    found = -1
    s = 0.0
    for i in range(x.shape[0]):
        if float(x[i]) > 20.0:
            found = i
            break
        s = s + x[i]
    return s * 2.0, found


def _for_else(x: Any) -> Any:
    s = 0
    for i in range(x.shape[0]):
        print(i)
        if float(x[i]) < -1.0:
            break
        s = s + x[i]
    else:
        s = s * 10
    return np.sqrt(np.abs(s) + 1.0)


def _returns_inside(x: Any) -> Any:
    for i in range(x.shape[0]):
        print(i)
        if x[i].item() > 30.0:  # `.item()` breaks (`float()` is a node now)
            return x[i] * 2.0
    return x.sum()


def _continues(x: Any) -> Any:
    s = np.float32(0)
    for i in range(x.shape[0]):
        if x[i].item() % 3 == 0:
            continue
        s = s + x[i]
    return s


def _nested(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0] // 3):
        for j in range(3):
            s = s + x[3 * i + j] * (i - j)
            print(j)
    return s


def _rows(x: Any) -> Any:
    a = x.reshape(-1, 3)
    s = np.zeros(3)
    for i, row in enumerate(a):
        s = s + row * i
        print(row[0])
    return s


# (program, dtype): each at 36 and 360 elements.
PROGRAMS: list[tuple[Callable[[Any], Any], str]] = [
    (_json_roundtrip, "float64"),
    (_data_float, "float64"),
    (_writes_in_place, "float64"),
    (_breaks_out, "float64"),
    (_for_else, "float64"),
    (_returns_inside, "float64"),
    (_continues, "float32"),
    (_nested, "float64"),
    (_rows, "float64"),
]


def _counting(runs: list[Graph]) -> Callable[[Graph, Any], Callable[..., Any]]:
    def backend(graph: Graph, example_inputs: Any) -> Callable[..., Any]:
        def run(*inputs: Any) -> Any:
            runs.append(graph)
            return run_graph(graph, list(inputs))

        return run

    return backend


def _run(compiled: Callable[[Any], Any], fn: Callable[[Any], Any], x: Any) -> None:
    got_x, want_x = x.copy(), x.copy()
    got_out, want_out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(got_out):
        got = compiled(got_x)
    with contextlib.redirect_stdout(want_out):
        want = fn(want_x)
    _same(got, want)
    _same(got_x, want_x)
    assert got_out.getvalue() == want_out.getvalue()


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p[0].__name__.strip("_"))
def test_a_small_breaking_body_runs_no_compiled_piece_per_iteration(
    program: tuple[Callable[[Any], Any], str],
) -> None:
    fn, dtype = program
    runs: list[Graph] = []
    compiled = compile_function(fn, backend=_counting(runs))
    _run(compiled, fn, np.arange(36).astype(dtype))
    short = len(runs)
    runs.clear()
    with recording_captures() as events:
        _run(compiled, fn, np.arange(360).astype(dtype))
    assert len(runs) <= short  # the graphs before and after the loop, not one per iteration
    assert len(events) <= 1  # the top-level function sees a new size, once
    with recording_captures() as events:
        _run(compiled, fn, np.arange(720).astype(dtype))
    assert not events


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p[0].__name__.strip("_"))
def test_with_the_rule_off_the_pieces_run_per_iteration(
    program: tuple[Callable[[Any], Any], str],
) -> None:
    # The same loops with `small_loops_in_python` off compile their body's pieces: the graph
    # runs grow with the trip count (what the rule saves), the results stay eager's.
    fn, dtype = program
    runs: list[Graph] = []
    compiled = compile_function(fn, backend=_counting(runs))
    with config.patch(small_loops_in_python=False):
        _run(compiled, fn, np.arange(36).astype(dtype))
        short = len(runs)
        runs.clear()
        _run(compiled, fn, np.arange(360).astype(dtype))
    if fn not in (_breaks_out, _returns_inside):  # these leave early at both sizes
        assert len(runs) > short


def _prefix_sums(x: Any) -> Any:
    # Array work (a transcendental of a slice whose size depends on the index: it counts at
    # its largest, all of x): the pieces compile once.
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = np.sin(x[: i + 1]).sum()
        if i % 1000 == 1001:
            print(i)
    return out


def _cheap_prefix_sums(x: Any) -> Any:
    # A sum of the same slice and a store of one element: little work, the loop runs in
    # Python (the store counts the element it writes, not all of out).
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[: i + 1].sum()
        if i % 1000 == 1001:
            print(i)
    return out


def test_a_body_summing_an_index_dependent_slice_runs_in_python() -> None:
    runs: list[Graph] = []
    compiled = compile_function(_cheap_prefix_sums, backend=_counting(runs))
    with recording_captures() as events:
        _run(compiled, _cheap_prefix_sums, np.arange(1100.0))
    assert sum(event.graph is not None for event in events) <= 3
    assert len(runs) <= 4  # before the loop and after it, not per iteration


def test_a_body_with_array_work_compiles_its_pieces_once() -> None:
    # 1,100 iterations: too long to unroll, so the loop breaks at its head.
    runs: list[Graph] = []
    compiled = compile_function(_prefix_sums, backend=_counting(runs))
    with recording_captures() as events:
        _run(compiled, _prefix_sums, np.arange(1100.0))
    # Before: the slice's bound pinned the index, one graph per iteration up to the limit.
    assert sum(event.graph is not None for event in events) <= 3
    assert len(runs) >= 1100  # its piece runs compiled in each iteration
    with recording_captures() as events:
        _run(compiled, _prefix_sums, np.arange(11000.0))
    assert not events


def _slice_to(x: Any, i: int) -> Any:
    return x[: i + 1].sum() + x[i:].sum()


def test_a_slice_bound_from_a_changing_int_is_read_at_run_time() -> None:
    compiled = compile_function(_slice_to, backend="eager")
    x = np.arange(10.0)
    with recording_captures() as events:
        for i in (0, 1, 2, 3, 9, 12, 40):
            _same(compiled(x, i), _slice_to(x, i))
    assert len(events) <= 2  # the first value, then every other one as a run-time int
    for i in (-3, -12):  # guarded nonnegative: a negative bound is specialized
        _same(compiled(x, i), _slice_to(x, i))


def _raises_midway(x: Any) -> Any:
    for i in range(x.shape[0] + 2):
        print(i)
        x[i] = x[i] * 2.0  # IndexError past the end, earlier writes kept
    return x


def test_an_exception_in_the_loop_comes_from_the_users_line() -> None:
    compiled = compile_function(_raises_midway, backend="eager")
    got_x, want_x = np.arange(5.0), np.arange(5.0)
    with contextlib.redirect_stdout(io.StringIO()):
        with pytest.raises(IndexError) as got:
            compiled(got_x)
        with pytest.raises(IndexError) as want:
            _raises_midway(want_x)
    assert str(got.value) == str(want.value)
    _same(got_x, want_x)
    line = traceback.extract_tb(got.value.__traceback__)[-1]
    assert (line.filename, line.lineno) == (__file__, _raises_midway.__code__.co_firstlineno + 3)


def _reads_after_the_loop(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        y = float(x[i])
        s = s + y
    return s, y


def test_a_loop_that_may_leave_a_local_unbound_cannot_run_as_a_region() -> None:
    # `y` is unbound before the loop and read after it: an exit cannot pass it on.
    code = _reads_after_the_loop.__code__
    index = [inst.opname for inst in normalized_instructions(code)].index("FOR_ITER")
    site = BreakSite.at(code, index, (False,))
    with pytest.raises(Unsupported, match="may leave 'y' unbound"):
        LoopRegion.at(site, ("x", "s"), lambda at: {"s", "y"})
    region = LoopRegion.at(site, ("x", "s", "y"), lambda at: {"s", "y"})
    assert [exit_.local_names for exit_ in region.exits] == [("s", "y")]


def test_explain_and_the_log_name_the_loop_that_runs_in_python(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="numpile.capture.graph_breaks"):
        out = explain(_json_roundtrip)(np.linspace(0.0, 1.0, 50))
    (reason,) = out.break_reasons
    assert "calling json.dumps" in reason.reason
    assert "the whole loop runs in Python" in reason.reason
    assert reason.lineno == _json_roundtrip.__code__.co_firstlineno + 2  # the `for`
    assert len(out.loops_not_kept) == 1
    assert any("the whole loop runs in Python" in r.getMessage() for r in caplog.records)


def _cheap_updates(x: Any) -> Any:
    # Cheap arithmetic on large arrays: a kernel makes NumPy's passes plus a write-back, so
    # compiled pieces would lose at any size and the loop runs in Python.
    a = x.copy()
    b = x[::-1].copy()
    for i in range(40):
        a += b * 0.5
        print(i)
        b -= a * 0.25
    return a, b


def _sine_updates(x: Any) -> Any:
    # The same updates through sin and cos: the kernels save their NumPy time per element.
    a = x.copy()
    b = x[::-1].copy()
    for i in range(40):
        a += np.sin(b) * 0.5
        print(i)
        b -= np.cos(a) * 0.25
    return a, b


@pytest.mark.parametrize(
    ("fn", "pieces"), [(_cheap_updates, False), (_sine_updates, True)], ids=["cheap", "sine"]
)
def test_only_a_body_whose_kernels_save_work_runs_as_pieces(
    fn: Callable[[Any], Any], pieces: bool
) -> None:
    runs: list[Graph] = []
    compiled = compile_function(fn, backend=_counting(runs))
    _run(compiled, fn, np.linspace(-1.0, 1.0, 48_000))
    assert (len(runs) >= 40) is pieces  # a piece per iteration, or the graphs around the loop
    out = explain(fn)
    with contextlib.redirect_stdout(io.StringIO()):
        reasons = [reason.reason for reason in out(np.linspace(-1.0, 1.0, 48_000)).break_reasons]
    assert any("the whole loop runs in Python" in r for r in reasons) is not pieces


def _list_of_large_arrays(xs: list[Any]) -> Any:
    total = 0.0
    for i in range(len(xs)):
        y = np.sin(xs[i])  # a list indexed by the index: traced only unrolled, then array work
        print(i)
        total = total + float(y[0])
    return total


def test_array_work_in_the_unrolled_body_before_its_break_keeps_the_pieces() -> None:
    xs = [np.full(16 * 1024, float(k)) for k in range(3)]
    with contextlib.redirect_stdout(io.StringIO()):
        out = explain(_list_of_large_arrays)(xs)
    reasons = [reason.reason for reason in out.break_reasons]
    assert reasons and not any("the whole loop runs in Python" in r for r in reasons)
    reset()  # else the sizes changed and are symbolic: run-time sizes count as work
    small = [x[:8].copy() for x in xs]
    with contextlib.redirect_stdout(io.StringIO()):
        out = explain(_list_of_large_arrays)(small)
    (reason,) = out.break_reasons
    assert "the whole loop runs in Python" in reason.reason


def _goertzel(x: Any) -> Any:
    # `s2 = s1` is a Python float in the first iteration and a NumPy float64 from the second
    # (`s1` became one in the first): types that settle over two iterations, a loop not
    # kept, unrolled until past the unroll budget.
    coeff = 2.0 * np.cos(0.3)
    s1 = 0.0
    s2 = 0.0
    for i in range(x.shape[0]):
        s0 = x[i] + coeff * s1 - s2
        s2 = s1
        s1 = s0
    return s1 * s1 + s2 * s2 - coeff * s1 * s2


def test_a_small_body_unrolled_past_the_budget_runs_whole_in_python() -> None:
    # Its compiled piece per iteration (a resume function) ran 25x slower than eager.
    runs: list[Graph] = []
    compiled = compile_function(_goertzel, backend=_counting(runs))
    x = np.random.default_rng(0).standard_normal(300)
    _run(compiled, _goertzel, x)
    assert len(runs) <= 2  # the graphs before and after the loop, not one per iteration
    reset()
    (reason,) = [b.reason for b in explain(_goertzel)(x).break_reasons]
    assert "unroll budget" in reason
    assert "whole loop runs in Python" in reason
