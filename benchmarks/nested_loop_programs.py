"""Loops nested in a body that runs op by op (issue 23, round 2's sixteenth session): four
programs whose outer loop slices with shapes that follow its index (no kernel takes that
body: it runs with NumPy per iteration) around a `while` or an `if` holding the element
loops, registered in `benchmarks.unseen_loop_programs.PROGRAMS`.

LU with threshold pivoting (a `while` search for the first row within half of the column's
largest, then the element loops), a nonlinear forward substitution (a Newton `while` per
row), classical Gram-Schmidt re-orthogonalised while a column lost too much of its norm
(a `while` whose first pass carries a Python float, element loops inside it) and a
banded elimination that skips a column already zero below its pivot (its element loops
under an `if`). Each such `while`, and each loop under such an `if`, runs as a C module of
its own (`numpile_inductor/nested_loops.py`, counter `loop_nested_c_runs`).

    python -m benchmarks.unseen_loops --only lu_threshold_pivoting --size 100
"""

from __future__ import annotations

import numpy as np

from .unseen_loop_programs import unseen


@unseen(lambda rng, n: (rng.standard_normal((n, n)),), sizes=(5, 0, 1, 30))
def lu_threshold_pivoting(A):
    n = A.shape[0]
    perm = np.arange(n)
    for k in range(n):
        big = np.abs(A[k:, k]).max()
        p = k
        while p < n - 1 and abs(A[p, k]) < 0.5 * big:
            p += 1
        if p != k:
            A[[k, p]] = A[[p, k]]
            perm[[k, p]] = perm[[p, k]]
        for i in range(k + 1, n):
            A[i, k] /= A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]
    return A, perm


def _lower_and_rhs(rng, n):
    return (np.tril(rng.standard_normal((n, n))) / max(n, 1), rng.standard_normal(n))


@unseen(_lower_and_rhs, sizes=(5, 0, 1, 30))
def nonlinear_forward_substitution(L, b):
    # y[i] + y[i] ** 3 == b[i] - L[i, :i] @ y[:i], solved by Newton's method row by row.
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


@unseen(lambda rng, n: (rng.standard_normal((n + 2, n)),), sizes=(5, 0, 1, 30))
def gram_schmidt_twice(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    coefficient_norms = np.zeros(n)
    for j in range(n):
        v = A[:, j].copy()
        before = np.sqrt(v @ v)
        after = 0.0
        passes = 0
        while passes < 2 and after < 0.7071 * before:  # "twice is enough"
            if passes > 0:
                before = after
            for i in range(j):
                s = 0.0
                for r in range(m):
                    s += Q[r, i] * v[r]
                R[i, j] += s
                for r in range(m):
                    v[r] -= s * Q[r, i]
            t = 0.0
            for r in range(m):
                t += v[r] * v[r]
            after = np.sqrt(t)
            passes += 1
        R[j, j] = after
        Q[:, j] = v / after
        coefficient_norms[j] = np.sqrt(R[:j, j] @ R[:j, j])
    return Q, R, coefficient_norms


def _banded_system(rng, n):
    bw = 8
    A = np.triu(np.tril(rng.standard_normal((n, n)), bw), -bw) + 2.0 * bw * np.eye(n)
    A[:, ::3] = np.triu(A)[:, ::3]  # every third column already zero below its diagonal
    return (A, rng.standard_normal(n), bw)


@unseen(_banded_system, sizes=(5, 0, 1, 30))
def banded_elimination(A, b, bw):
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
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        hi = i + bw + 1
        if hi > n:
            hi = n
        s = b[i]
        for j in range(i + 1, hi):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return x
