"""Recursion through a compiled function: each level costs at most 2 Python frames more than eager.

A recursive call graph-breaks (the callee is the compiled function itself); the dispatcher
runs the break's runner and finishes its tail calls in its own frame, so a level is the
dispatcher, the runner's `run_tail` and the user's code. Those frames are not charged to
the user's recursion limit (`recursion_allowance`): a compiled recursion reaches about the
depth eager does.
"""

from __future__ import annotations

import subprocess
import sys
import types
import warnings
from typing import Any

import numpy as np
import pytest

from numpile_capture import CompiledFunction, compile_function, disable
from numpile_capture.graph_breaks import capture_with_breaks
from numpile_guards import cache_for

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


@disable  # the depth of the real stack, never traced
def _depth() -> int:
    frame = sys._getframe()
    count = 0
    while frame is not None:
        count += 1
        frame = frame.f_back  # type: ignore[assignment]
    return count


def _frames_per_level(fn: Any, seen: dict[str, int]) -> float:
    x = np.zeros(3)
    fn(x, 10)
    fn(x, 20)  # both compiled (and cached) before measuring
    fn(x, 10)
    shallow = seen["base"]
    fn(x, 20)
    return (seen["base"] - shallow) / 10


def test_a_compiled_recursion_level_costs_at_most_two_more_frames() -> None:
    seen: dict[str, int] = {}

    def eager(x: Any, n: int) -> Any:
        if n == 0:
            seen["base"] = _depth()
            return x
        return eager(x + 1.0, n - 1)

    def recurse(x: Any, n: int) -> Any:
        if n == 0:
            seen["base"] = _depth()
            return x
        return compiled(x + 1.0, n - 1)

    compiled = compile_function(recurse, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(compiled(np.zeros(3), 20), np.full(3, 20.0))
        extra = _frames_per_level(compiled, seen) - _frames_per_level(eager, seen)
    assert extra <= 2.0


_DEEP_RECURSION = """
import sys, warnings
import numpy as np
from numpile_capture import compile_function

warnings.simplefilter("ignore")

def recurse(x, n):
    if n == 0:
        return x
    return compiled(x + 1.0, n - 1)

compiled = compile_function(recurse, backend="eager")
limit = sys.getrecursionlimit()
print(compiled(np.zeros(3), 900).tolist(), sys.getrecursionlimit() == limit == 1000)
"""


def test_a_compiled_function_recurses_900_levels_under_the_default_limit() -> None:
    # numpile widens the recursion limit by its own frames while the user's code at a
    # break runs, and narrows it back after (eager reaches ~997 levels in a fresh process).
    done = subprocess.run(
        [sys.executable, "-c", _DEEP_RECURSION],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[900.0, 900.0, 900.0] True"


def test_a_runaway_recursion_raises_and_leaves_the_limit_as_it_was() -> None:
    def recurse(x: Any, n: int) -> Any:
        if n == 0:
            return x
        return compiled(x + 1.0, n - 1)

    compiled = compile_function(recurse, backend="eager")
    limit = sys.getrecursionlimit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(np.zeros(3), 3)
        compiled(np.zeros(3), 4)
        with pytest.raises(RecursionError):
            compiled(np.zeros(3), 100 * limit)
        assert sys.getrecursionlimit() == limit
        np.testing.assert_array_equal(compiled(np.zeros(3), 5), np.full(3, 5.0))


def test_a_capture_that_meets_the_recursion_limit_runs_eagerly_once_only() -> None:
    # Deep in a recursion, capture itself may run out of frames: that call runs eagerly,
    # and the function still compiles later (it used to run eagerly from then on).
    captures: list[int] = []

    def capture(fn: types.FunctionType, args: Any, kwargs: Any) -> Any:
        captures.append(1)
        if len(captures) == 1:
            raise RecursionError("maximum recursion depth exceeded")
        return capture_with_breaks(fn, args, kwargs)

    def f(x: Any) -> Any:
        return x * 2.0

    compiled = CompiledFunction(f, backend="eager", capture_fn=capture)
    np.testing.assert_array_equal(compiled(np.ones(3)), np.full(3, 2.0))
    np.testing.assert_array_equal(compiled(np.ones(3)), np.full(3, 2.0))
    assert len(captures) == 2
    assert cache_for(f.__code__).eager_reason is None
    assert len(cache_for(f.__code__).entries) == 1
