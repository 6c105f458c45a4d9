"""Outer loop bodies that reduce a slice bounded by the index before their inner loops (a
dot product and a maximum before a Newton `while`, an `np.any` guarding element loops
under a clamped bound) run as one C loop nest: no body runs with NumPy per iteration, the
results are eager's bit for bit (the dot products through NumPy's own BLAS), and a clamp
`if hi > n: hi = n` costs no copy of the arrays the loop writes. The programs are two of
`benchmarks/nested_loop_programs.py`."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

import numpile


def nonlinear_forward_substitution(L: Any, b: Any) -> Any:
    n = b.shape[0]
    y = np.zeros(n)
    for i in range(n):
        r = b[i] - L[i, :i] @ y[:i]
        tol = 1e-12 * (1.0 + np.abs(L[i, : i + 1]).max())
        x = r / 2.0
        dx = 1.0
        it = 0
        while abs(dx) > tol and it < 50:
            dx = (x + x * x * x - r) / (1.0 + 3.0 * x * x)
            x -= dx
            it += 1
        y[i] = x
    return y


def banded_elimination(A: Any, b: Any, bw: int) -> Any:
    n = b.shape[0]
    for k in range(n):
        hi = k + bw + 1
        if hi > n:
            hi = n
        if np.any(A[k + 1 : hi, k] != 0.0):
            for i in range(k + 1, hi):
                f = A[i, k] / A[k, k]
                for j in range(k, hi):
                    A[i, j] -= f * A[k, j]
                b[i] -= f * b[k]
    return b


def _lower_and_rhs(n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    return (np.tril(rng.standard_normal((n, n))) / max(n, 1), rng.standard_normal(n))


def _banded(n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    bw = 3
    A = np.triu(np.tril(rng.standard_normal((n, n)), bw), -bw) + 2.0 * bw * np.eye(n)
    A[:, ::3] = np.triu(A)[:, ::3]
    return (A, rng.standard_normal(n), bw)


PROGRAMS = {
    "nonlinear_forward_substitution": (nonlinear_forward_substitution, _lower_and_rhs),
    "banded_elimination": (banded_elimination, _banded),
}


def _copies(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("name", PROGRAMS)
def test_outer_body_runs_as_c_with_eagers_bits(name: str, caplog: pytest.LogCaptureFixture) -> None:
    fn, inputs = PROGRAMS[name]
    compiled = numpile.compile(fn)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (30, 0, 1, 30, 57):
            args = inputs(n)
            ours, theirs = _copies(args), _copies(args)
            got, want = compiled(*ours), fn(*theirs)
            numpile.wait_for_compiles()
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want, strict=True)
            for mine, eager in zip(ours, theirs, strict=True):
                np.testing.assert_array_equal(mine, eager, strict=True)
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


@pytest.mark.parametrize("options", [{}, {"dynamic": True}])
def test_a_clamped_bound_takes_no_copy_of_the_written_arrays(
    options: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    # `hi` is `k + bw + 1` or `n` (an array's length, a size symbol): both fit (the int
    # argument `bw`, under `dynamic=True`, is checked at entry to fit 56 bits), no overflow
    # check, so no snapshot of A and b to restore on a bail is taken at each call.
    compiled = numpile.compile(banded_elimination, **options)
    with caplog.at_level(logging.DEBUG, logger="numpile.inductor.output_code"):
        compiled(*_banded(12))
        numpile.wait_for_compiles()
    sources = "\n".join(r.getMessage() for r in caplog.records)
    assert "static PyObject *loop_" in sources
    assert "snap_" not in sources
