"""Issue 23/28: NumPy scalar arguments (`f(x, np.float64(dt))`) follow automatic dynamic as
Python numbers do: specialized on the first call, a graph input guarded by type (hence dtype)
once a value changes, so a time-stepping loop compiles twice, not once per value. Each call is
compared with eager (values, dtype, type: NEP 50's strong NumPy scalars); the inductor reads
the scalar by value, and a loop over it runs as C, not its body with NumPy per iteration.
A branch on such an input is a guard on its outcome in one graph (issue 23, item 4).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from harness import per_iteration_hints

import numpile
import numpile_runtime as rt
from numpile_guards import cache_for


def _steps(x: Any, dt: Any, n: int) -> Any:
    for _ in range(n):
        x = x + dt * x
    return x


def _scalar_math(x: Any, s: Any) -> Any:
    # NEP 50: a float32 scalar stays float32 with a Python float, meets a float64 array as
    # float64; `type(s)` is the scalar's own type.
    return s + 0.5, x * s, x.astype(type(s)), s


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        for mine, eager in zip(got, want, strict=True):
            _assert_same(mine, eager)
        return
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("kind", [np.float64, np.int8])
def test_a_changing_numpy_scalar_compiles_twice_and_matches_eager(
    kind: type, caplog: pytest.LogCaptureFixture
) -> None:
    numpile.reset()
    x = np.linspace(0.0, 1.0, 33)
    steps = numpile.compile(_steps)
    rt.reset_counters()
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for value in (1, 2, 3, 4, 5, 6):
            dt = kind(value / 4 if kind is np.float64 else value)
            _assert_same(steps(x, dt, 3), _steps(x, dt, 3))
    assert len(cache_for(_steps.__code__).entries) == 2
    assert not per_iteration_hints(caplog.records)
    assert rt.counters().get("loop_host_runs", 0) == 0


def test_nep50_corners_and_types_after_the_scalar_became_an_input() -> None:
    numpile.reset()
    compiled = numpile.compile(_scalar_math)
    x = np.linspace(0.0, 1.0, 5)
    for value in (0.1, 0.2, 0.3):
        _assert_same(compiled(x, np.float32(value)), _scalar_math(x, np.float32(value)))
    assert len(cache_for(_scalar_math.__code__).entries) == 2


def _signed_sum(x: Any, a: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        if a > 0:
            s += x[i] * a
        else:
            s -= x[i]
    return s


def _shifted(x: Any, a: Any) -> Any:
    # A branch on the scalar input before the loop guards its outcome; the loop in each
    # entry runs as C.
    s = 0.0
    b = a if a > 0 else -a
    for i in range(x.shape[0]):
        s += x[i] * b
    return s, _signed_sum(x, a)


def test_a_branch_on_a_numpy_scalar_input_is_a_guard_and_its_loops_run_as_c(
    caplog: pytest.LogCaptureFixture,
) -> None:
    numpile.reset()
    x = np.linspace(0.0, 1.0, 33)
    compiled = numpile.compile(_shifted, dynamic=True)
    rt.reset_counters()
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        # One entry per outcome of `a > 0` (NaN takes the False one); inside the loop of
        # `_signed_sum` the same branch is a `cond`, no guard.
        for value in (0.5, -0.5, 2.0, float("nan"), -3.0, 1.5):
            a = np.float64(value)
            _assert_same(compiled(x, a), _shifted(x, a))
    assert len(cache_for(_shifted.__code__).entries) == 2
    assert not per_iteration_hints(caplog.records)
    assert rt.counters().get("loop_host_runs", 0) == 0
    guards = {str(g) for e in cache_for(_shifted.__code__).entries for g in e.metadata["guards"]}
    assert "EQUALS_MATCH((bool(L['a'] > 0)), False)" in guards
