"""Tiered compilation through `numpile.compile`: every call, before and after the switch to the
compiled kernels, gives eager NumPy's values, dtypes and in-place effects."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

import numpile


def _step(u: Any, scale: float) -> Any:
    # A stencil of slices written in place, a select and a view of the input.
    u[1:-1] = 0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:])
    return np.where(u > scale, u - scale, u * scale), u[::3]


def test_calls_across_the_switch_match_eager() -> None:
    numpile.reset()
    compiled = numpile.compile(_step, options={"tiered": True, "graph_cache": False})
    rng = np.random.default_rng(3)
    deadline = time.monotonic() + 90
    calls = built = 0
    while calls < 3 or (time.monotonic() < deadline and built < 3):
        base, scale = rng.random(997), 0.5
        eager_u, mine = base.copy(), base.copy()
        expected = _step(eager_u, scale)
        got = compiled(mine, scale)
        np.testing.assert_array_equal(mine, eager_u)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[0].dtype == expected[0].dtype
        np.testing.assert_array_equal(got[1], expected[1])
        assert np.shares_memory(got[1], mine)
        calls += 1
        if "inductor_build" in numpile.compile_times():
            built += 1  # the build is done: the next calls run the kernels
        time.sleep(0.01)
    assert built >= 3, "the background build did not finish in 90 s"


def _relax(u: Any, sweeps: int) -> Any:
    # A kept loop nest: a carried Python float and elements written in place.
    change = 0.0
    for _ in range(sweeps):
        for i in range(1, u.shape[0] - 1):
            new = 0.5 * (u[i - 1] + u[i + 1])
            change = change + abs(new - u[i])
            u[i] = new
    return change


@pytest.mark.filterwarnings("error::numpile.NumpilePerformanceWarning")  # the loop is kept
def test_loop_calls_across_the_switch_match_eager() -> None:
    # Before the switch the function's own Python runs (the eager tier); after it, C.
    numpile.reset()
    compiled = numpile.compile(_relax, options={"tiered": True, "graph_cache": False})
    rng = np.random.default_rng(5)
    deadline = time.monotonic() + 120
    calls = built = 0
    while calls < 3 or (time.monotonic() < deadline and built < 3):
        base = rng.random(int(rng.integers(3, 40)))
        eager_u, mine = base.copy(), base.copy()
        expected = _relax(eager_u, 3)
        got = compiled(mine, 3)
        np.testing.assert_array_equal(mine, eager_u)
        assert type(got) is type(expected) and got == expected
        calls += 1
        if "inductor_build" in numpile.compile_times():
            built += 1
        time.sleep(0.01)
    assert built >= 3, "the background build did not finish in 120 s"
