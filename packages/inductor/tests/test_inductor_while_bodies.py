"""A `while_loop` whose body does array work (loops.compile_loop_bodies): the body runs
compiled per iteration, its inner element loop as C, not op by op with NumPy (a Jacobi
sweep `while err > tol and it < maxit` ran 10x slower than eager that way); values,
dtypes and in-place effects stay eager's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import compile_function
from numpile_capture.testing import assert_same_as_eager as _same


def jacobi_until(b: Any, tol: float, maxit: int) -> Any:
    u = np.zeros_like(b)
    err = tol + 1.0
    it = 0
    while err > tol and it < maxit:
        new = u.copy()
        for i in range(1, b.shape[0] - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1] + b[i])
        err = np.abs(new - u).max()
        u = new
        it += 1
    return u, it, err


def smooth_in_place(u: Any, tol: float) -> Any:
    # The body writes the input array itself, element by element, then reduces.
    change = tol + 1.0
    sweeps = 0
    while change > tol:
        before = u.copy()
        for i in range(1, u.shape[0] - 1):
            u[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1])
        change = np.abs(u - before).sum()
        sweeps += 1
    return sweeps, change


@pytest.mark.parametrize("n", [3, 9])
def test_while_bodies_of_array_work_run_compiled(n: int) -> None:
    b = np.linspace(0.5, 2.0, n)  # a few sweeps to converge, the first on Python floats
    compiled = compile_function(jacobi_until, backend="inductor")
    rt.reset_counters()
    _same(compiled(b, 1e-6, 40), jacobi_until(b, 1e-6, 40))
    assert rt.counters().get("while_compiled_iterations", 0) > 0
    u, mine = np.cos(np.arange(n + 2.0)), np.cos(np.arange(n + 2.0))
    _same(
        compile_function(smooth_in_place, backend="inductor")(mine, 1e-3), smooth_in_place(u, 1e-3)
    )
    np.testing.assert_array_equal(mine, u)
