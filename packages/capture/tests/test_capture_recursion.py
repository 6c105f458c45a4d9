"""Recursion through a compiled function: each level costs at most 2 Python frames more than eager.

A recursive call graph-breaks (the callee is the compiled function itself); the dispatcher
runs the break's runner and finishes its tail calls in its own frame, so a level is the
dispatcher, the runner's `run_tail` and the user's code.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, disable, reset


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


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
