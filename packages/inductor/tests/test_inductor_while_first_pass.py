"""A top-level `while` whose first pass runs on Python entry scalars, compiled to C (issue 23).

`cur = start` (a Python int) indexes `seen[cur]` and becomes `nxt[cur]`, an np.int64, after
the first pass; `x = 0.5` multiplies a float32 value as a weak Python float once and as a
float32 after. The C `while` (codegen/c/while_function.py) runs the body from the start
where the first pass computes the same on the entry converted to the body's dtype (an
integer index picks the same element, `loop_entry_scalars`), else it runs the first pass
apart, on its own types, before the `while` of the body's. Each program runs compiled and
eagerly: the same values, dtypes, Python scalar types and writes; the loop is one C
function (on main it ran its body with NumPy per iteration).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, reset
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_inductor import compile_graph


def _dispatched(fn: Callable[..., Any]) -> tuple[Callable[..., Any], list[Any]]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor; the modules.
    reset()
    built: list[Any] = []

    def backend(graph: Any, example_inputs: Any) -> Any:
        compiled = compile_graph(graph)
        built.append(compiled)
        return compiled.fn

    return compile_function(fn, backend=backend, dynamic=True), built


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _check_runs(fn: Callable[..., Any], calls: list[tuple[Any, ...]], caplog: Any) -> None:
    run, built = _dispatched(fn)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for args in calls:
            mine, eager = [_copy(a) for a in args], [_copy(a) for a in args]
            try:
                want = fn(*eager)
            except Exception as error:  # the same exception from the compiled call
                with pytest.raises(type(error), match=str(error)):
                    run(*mine)
            else:
                _same(run(*mine), want)
            for ours, theirs in zip(mine, eager, strict=True):
                if isinstance(theirs, np.ndarray):
                    np.testing.assert_array_equal(ours, theirs)
    loops = [m for m in built if "while_loop(" in m.source]
    assert loops
    for module in loops:
        assert "static PyObject *loop_v" in module.source, module.source[:2000]
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def pointer_chase(nxt: Any, start: int, limit: int) -> Any:
    cur = start
    seen = np.zeros(nxt.shape[0], dtype=np.bool_)
    steps = 0
    while steps < limit:
        if seen[cur]:
            break
        seen[cur] = True
        cur = nxt[cur]
        steps += 1
    return cur, steps, seen


def pointer_chase_marked(nxt: Any, marks: Any, start: int) -> Any:
    # The entry may come back as it came (the start already marked): eager's Python int.
    cur = start
    hops = 0
    while hops < nxt.shape[0]:
        if marks[cur] != 0:
            break
        marks[cur] = hops + 1
        cur = nxt[cur]
        hops += 1
    return cur, hops


def float32_growth(a: Any, limit: float) -> Any:
    # A Python float times 1.5 in the first pass (a Python float, then weak in `+ a[k]`),
    # a float32 product after: the first pass runs apart.
    x = 0.5
    k = 0
    while x < limit and k < a.shape[0]:
        x = x * 1.5 + a[k]
        k += 1
    return x, k


def int16_steps(a: Any, stop: int) -> Any:
    # Python int arithmetic in the first pass (`c * 3` unbounded), int16 after.
    c = 7
    k = 0
    while c < stop and k < a.shape[0]:
        c = c * 3 % 1000 + a[k]
        k += 1
    return c, k


_RNG = np.random.default_rng(3)


def test_a_python_int_index_carried_into_int64_runs_as_c(caplog: Any) -> None:
    calls = []
    for n in (7, 4, 12, 1):
        nxt = _RNG.permutation(n).astype(np.int64)
        calls += [(nxt, 0, 3 * n), (nxt, n - 1, 2), (nxt, 0, 0)]
    calls.append((np.array([1, 5, 0], dtype=np.int64), 0, 9))  # past the end: IndexError
    _check_runs(pointer_chase, calls, caplog)


def test_an_entry_the_first_pass_keeps_comes_back_as_it_came(caplog: Any) -> None:
    nxt = np.array([2, 0, 3, 1, 4], dtype=np.int64)
    calls = [
        (nxt, np.zeros(5, np.int64), 1),
        (nxt, np.array([0, 1, 0, 0, 0]), 1),  # start marked: cur is the Python int 1
        (nxt, np.array([0, 0, 0, 0, 1]), 0),
        (nxt, np.zeros(5, np.int64), -2),
    ]
    _check_runs(pointer_chase_marked, calls, caplog)


def test_a_first_pass_on_other_types_runs_apart(caplog: Any) -> None:
    a = (_RNG.random(30) * 0.3).astype(np.float32)
    calls = [(a, 40.0), (a, 0.2), (a, 1e9), (a[:1], 3.0), (a[:0], 3.0), (a, 0.75)]
    _check_runs(float32_growth, calls, caplog)


def test_python_int_arithmetic_in_a_first_pass_runs_apart(caplog: Any) -> None:
    a = _RNG.integers(-30, 30, 25).astype(np.int16)
    calls = [(a, 900), (a, 8), (a, 5), (a[:1], 900), (a[:0], 900)]
    _check_runs(int16_steps, calls, caplog)


def int16_steps_from(a: Any, c: int, stop: int) -> Any:
    # The same from an int argument: the first pass computes on it as a Python int.
    k = 0
    while c < stop and k < a.shape[0]:
        c = c * 3 % 1000 + a[k]
        k += 1
    return c, k


def test_a_python_int_argument_first_pass_runs_apart(caplog: Any) -> None:
    a = _RNG.integers(-30, 30, 25).astype(np.int16)
    # -2**40 * 3 is past int16 and int32 (a Python int in eager); -2**62 * 3 past int64.
    calls = [(a, 7, 900), (a, -(2**40), 900), (a, 400, 900), (a, -5, 0), (a, -(2**62), 900)]
    calls.append((a, 2**40, 900))  # the entry test fails: the Python int comes back
    _check_runs(int16_steps_from, calls, caplog)
