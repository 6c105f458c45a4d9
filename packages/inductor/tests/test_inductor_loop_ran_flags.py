"""An inner loop kept with the enclosing loop's types, and the flag of whether it ran (issue 23).

`t = 0.0` before `for i in range(n): while x[k] > 0.5: t = t + x[k]` is a Python float after
the loop where no inner loop ran, a NumPy float64 otherwise. Capture ends the graph after the
enclosing loop; the C loop function keeps a run-time flag. Where capture proves the local is
only passed along until an inner loop assigns it (`entry_unless_ran`), a clear flag gives back
the entry object itself: no NumPy run of the loop. Elsewhere the flag makes the loop run again
with NumPy (the run counted here through capture's `body_runner`, which that run calls).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, reset
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_inductor import compile_graph


def float_in_inner_while(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        k = i
        while x[k] > 0.5:
            t = t + x[k]
            k += 1
    return t * np.float32(2.0)


def int_in_inner_while(x: Any, n: int) -> Any:
    c = 0
    for i in range(n):
        k = i
        while x[k] > 0:
            c = c + x[k]
            k += 1
    return c * np.int8(2)


def assigned_after_the_break_test(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        for j in range(i, 8):
            if x[j] <= 0.5:
                break  # before `t` is assigned: an iteration that breaks leaves it as it was
            t = t + x[j]
    return t * np.float32(2.0)


def assigned_before_the_break_test(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        for j in range(i, 8):
            t = t + x[j]  # assigned in an iteration that breaks: no proof, the rerun stays
            if x[j] <= 0.5:
                break
    return t * np.float32(2.0)


def _data(kind: str, integer: bool) -> Any:
    # Inner loops that run never, in some outer iterations, or in all of them.
    x = {"never": np.zeros(8), "sometimes": np.array([0, 0.9, 0, 0, 0, 0, 0, 0])}.get(
        kind, np.full(8, 0.9)
    )
    x[-1] = 0.0
    return (x * 10).astype(np.int64) if integer else x


def _dispatched(fn: Callable[..., Any]) -> tuple[Callable[..., Any], list[Any]]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor; the modules.
    reset()
    built: list[Any] = []

    def backend(graph: Any, example_inputs: Any) -> Any:
        compiled = compile_graph(graph)
        built.append(compiled)
        return compiled.fn

    return compile_function(fn, backend=backend, dynamic=True), built


def _loop_sources(built: list[Any]) -> str:
    # The modules whose graphs hold the loop (a static first graph, then a dynamic one).
    return "\n".join(m.source for m in built if "for_loop(" in m.source)


@pytest.mark.parametrize(
    ("fn", "integer"),
    [
        pytest.param(float_in_inner_while, False, id="float-while"),
        pytest.param(int_in_inner_while, True, id="int-while"),
        pytest.param(assigned_after_the_break_test, False, id="breaking-for"),
    ],
)
def test_a_clear_flag_gives_back_the_entry_object_without_a_numpy_run(
    fn: Callable[..., Any], integer: bool, numpy_runs: list[Any]
) -> None:
    compiled, built = _dispatched(fn)
    for n in (3, 0, 1, 3):
        for kind in ("never", "sometimes", "always"):
            x = _data(kind, integer)
            _same(compiled(x, n), fn(x, n))
    sources = _loop_sources(built)
    assert "entry_unless_ran=" in sources
    assert re.search(r"\(ran\d+ \? ", sources)  # the box: the loop's value or the entry object
    assert not re.search(r"if \(!\(ran\d+", sources)  # no bail on the flag
    assert numpy_runs == []


def test_a_local_assigned_in_an_iteration_that_breaks_keeps_the_numpy_run(
    numpy_runs: list[Any], caplog: pytest.LogCaptureFixture, fresh_cache: Path
) -> None:
    fn = assigned_before_the_break_test
    compiled, built = _dispatched(fn)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        _same(compiled(_data("always", False), 3), fn(_data("always", False), 3))
    assert "runs again with NumPy where no inner loop assigning `t` ran" in caplog.text
    assert "entry_unless_ran=" not in _loop_sources(built)
    for kind in ("always", "never"):
        numpy_runs.clear()
        _same(compiled(_data(kind, False), 3), fn(_data(kind, False), 3))
        assert bool(numpy_runs) is (kind == "never")
