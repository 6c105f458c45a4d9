"""A loop on an unspecialized Python float that capture unrolls (a bisection whose trip count
depends on the value) builds the float's expression step by step; past a bound it is
specialized instead, so capture neither runs out of memory nor writes guard code Python
cannot parse (`mid = 0.5 * (lo + hi)` doubles or nests the text at each step)."""

from __future__ import annotations

import logging

import pytest

import numpile


def bisection(target: float) -> tuple[float, float, int]:
    lo = 0.0
    hi = target + 1.0
    steps = 0
    while hi - lo > 1e-12 and steps < 200:
        mid = 0.5 * (lo + hi)
        if mid * mid * mid < target:
            lo = mid
        else:
            hi = mid
        steps += 1
    return lo, hi, steps


def test_a_recurrence_on_a_changing_float_is_specialized_not_unbounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fn = numpile.compile(bisection)
    with caplog.at_level(logging.WARNING, logger="numpile"):
        for target in (27.0, 8.0, 2.0, 0.0, 1.0, 1e300, -1.0):
            assert fn(target) == bisection(target)
    # Capture succeeded: no "raised ... running it eagerly from now on".
    assert not [r for r in caplog.records if "eagerly from now on" in r.getMessage()]
