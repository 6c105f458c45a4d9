"""Lanes (codegen/c/loop_lanes.py): the escape loops of independent outer iterations
interleaved on one thread. Values exactly eager's (each lane runs its iteration's
operations in their order), in-place effects as eager's, at trip counts where lanes end
early; bodies that must stay serial keep the serial loop."""

from __future__ import annotations

import inspect
import signal
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from benchmarks.loop_programs import mandelbrot
from numpile_capture import capture_function, reset
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_parallel import independent_iterations

LANES_MARK = "lanes (codegen/c/loop_lanes.py)"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def escape_with_pre(x: Any, out: Any) -> Any:
    # Values computed before the `while`, read by its steps and after it.
    for p in range(x.shape[0] - 1, -1, -1):
        c = x[p] * 0.5 + 0.25
        bound = x[p] + 3.0
        z = 0.0
        k = 0
        while z <= bound and k < 40:
            z = z * z + c
            k += 1
        out[p] = z - bound * k
    return out


def big_ints(n: Any, scale: int, out: Any) -> Any:
    # A carried Python int that outgrows int64 in iterations of enough steps (`scale` 3: a
    # few dozen; 1: about 9e7): the loop bails and runs with NumPy, whose big ints give
    # the exact remainder.
    for p in range(n.shape[0]):
        acc = 1
        k = 0
        while k < n[p]:
            acc = acc * scale + 100_000_000_003
            k += 1
        out[p] = acc % 1000
    return out


def scan_to_zero(x: Any, out: Any) -> Any:
    # The `while` indexes by its own carried value: that check cannot be hoisted (an
    # IndexError must come in eager's order), so the loop stays serial.
    for p in range(out.shape[0]):
        j = p
        while x[j] != 0.0:
            j += 1
        out[p] = j
    return out


def reads_previous_row(x: Any, out: Any) -> Any:
    # A store that a later iteration reads: the iterations are not independent.
    for p in range(1, x.shape[0]):
        z = out[p - 1]
        k = 0
        while k < 30 and z < x[p]:
            z = z * 1.5 + 0.1
            k += 1
        out[p] = z
    return out


def stores_before_while(x: Any, out: Any, marks: Any) -> Any:
    for p in range(x.shape[0]):
        marks[p] = 1.0
        z = x[p]
        while z < 10.0:
            z = z * 2.0 + 1.0
        out[p] = z
    return out


def _build(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Callable[..., Any]]:
    # The C of `fn`'s graph at `args`, and a call of it taking `fn`'s arguments.
    graph = capture_function(fn, args, {}).graph
    compiled = compile_graph(graph)
    names = list(inspect.signature(fn).parameters)
    order = [names.index(placeholder.name) for placeholder in graph.placeholders]
    return compiled.source, lambda *given: compiled.fn(*(given[k] for k in order))


def _check(fn: Callable[..., Any], args: tuple[Any, ...], *, lanes: bool) -> None:
    # Compiled against eager on copies of `args`: result, dtype and every argument after
    # the call exactly equal (NaN where NaN), and whether the C holds lanes.
    source, call = _build(fn, args)
    assert (LANES_MARK in source) is lanes
    mine = tuple(_copy(a) for a in args)
    theirs = tuple(_copy(a) for a in args)
    got = call(*mine)
    want = fn(*theirs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, strict=True)
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)


def _copy(value: Any) -> Any:
    # Arrays copied; Python scalars passed as they are (a 0-d array would follow NumPy).
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


def _points(n: int, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 1.0, n), rng.uniform(-1.5, 1.5, n)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 37])
def test_escape_loop_runs_as_lanes_exactly_as_eager(n: int) -> None:
    # Odd counts: a lane finds no iteration left while the other still runs one.
    _check(mandelbrot, _points(n, n), lanes=True)


@pytest.mark.parametrize(
    ("cr", "ci"),
    [
        (np.full(9, 5.0), np.full(9, 5.0)),  # every point escapes at its first step
        (np.zeros(9), np.zeros(9)),  # none escapes: 64 steps each
        (np.array([np.nan, 0.1, np.nan, -3.0, np.inf]), np.array([0.0, np.nan, 0.2, 0.0, 1.0])),
    ],
    ids=["all-escape-at-once", "none-escape", "nan-and-inf"],
)
def test_escape_loop_edge_points(cr: Any, ci: Any) -> None:
    _check(mandelbrot, (cr, ci), lanes=True)


@pytest.mark.parametrize("n", [1, 3])
def test_values_computed_before_the_while_stay_the_lanes_own(n: int) -> None:
    x = np.random.default_rng(n).uniform(-1.0, 1.5, n)
    _check(escape_with_pre, (x, np.zeros(n)), lanes=True)


def test_an_overflowing_lane_runs_the_loop_as_eager() -> None:
    n = np.array([3, 70, 5, 2, 45, 90, 0], dtype=np.int64)
    _check(big_ints, (n, 3, np.zeros(n.shape[0], np.int64)), lanes=True)


def test_an_unhoisted_index_check_keeps_the_serial_loop() -> None:
    x = np.array([3.0, 1.0, 0.0, 2.0, 0.0, 5.0, 0.0])
    _check(scan_to_zero, (x, np.zeros(5, np.int64)), lanes=False)
    # Past the last zero: NumPy's IndexError, the earlier iterations' writes kept.
    y = np.array([0.0, 2.0, 1.0, 0.0, 4.0, 1.0, 1.0])
    out, want_out = np.zeros(5, np.int64), np.zeros(5, np.int64)
    _, call = _build(scan_to_zero, (y, out))
    with pytest.raises(IndexError) as want:
        scan_to_zero(y, want_out)
    with pytest.raises(IndexError) as got:
        call(y, out)
    assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(out, want_out)


def test_a_store_read_by_a_later_iteration_keeps_the_serial_loop() -> None:
    x = np.random.default_rng(3).uniform(0.5, 4.0, 9)
    out = np.full(9, 0.2)
    _check(reads_previous_row, (x, out), lanes=False)


def test_a_store_before_the_while_keeps_the_serial_loop() -> None:
    x = np.random.default_rng(4).uniform(0.5, 4.0, 6)
    _check(stores_before_while, (x, np.zeros(6), np.zeros(6)), lanes=False)


def writes_ahead(a: Any) -> Any:
    # `j` starts as the row's index but moves on: its stores reach the next rows.
    for i in range(a.shape[0]):
        j = i
        while j < a.shape[0] and j < i + 2:
            a[j] = a[j] * 2.0 + 1.0
            j += 1
    return a


def test_a_store_at_a_carried_index_keeps_the_serial_loop() -> None:
    a = np.arange(7.0)
    graph = capture_function(writes_ahead, (a,), {}).graph
    (node,) = [n for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]
    assert not independent_iterations(node, while_loops=True)
    _check(writes_ahead, (a,), lanes=False)


def test_openmp_takes_no_while_loop() -> None:
    # Lanes analyse the `while`; OpenMP does not (its threads would share the work counter).
    graph = capture_function(mandelbrot, _points(6, 1), {}).graph
    (node,) = [n for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]
    assert independent_iterations(node, while_loops=True)
    assert not independent_iterations(node)


class _AlarmError(Exception):
    pass


def _raise_alarm(signum: int, frame: object) -> None:
    raise _AlarmError


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_a_signal_seen_before_a_lane_overflows_wins_over_the_run_with_numpy() -> None:
    # Lane 0 holds an iteration that overflows int64 after about 9e7 steps (far more than
    # 20 ms of them); lane 1 takes iterations of 1e5 steps, polling for signals at each.
    # The timer's handler raises after 20 ms: lane 1 stops taking, lane 0 finishes its
    # iteration, overflows and bails. The handler's exception comes out, as in eager
    # Python, with the arrays as they were before the loop (no run with NumPy under it).
    n = 2_001
    small = np.arange(n, dtype=np.int64) % 7
    source, call = _build(big_ints, (small, 1, np.zeros(n, np.int64)))
    assert LANES_MARK in source
    steps = np.full(n, 100_000, np.int64)
    steps[0] = 10**15
    out = np.zeros(n, np.int64)
    before = signal.signal(signal.SIGALRM, _raise_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        with pytest.raises(_AlarmError):
            call(steps, 1, out)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert not out.any()
    got, want = call(small, 1, np.zeros(n, np.int64)), big_ints(small, 1, np.zeros(n, np.int64))
    np.testing.assert_array_equal(got, want, strict=True)
