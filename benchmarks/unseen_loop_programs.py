"""Unseen loops (issue 23): loop programs written the way scientists write plain NumPy,
new to the compiler when they were added (round 2, thirteenth session), to find what
breaks on programs nobody tuned it for.

PolyBench-like kernels element by element (nussinov, seidel-2d, adi, durbin, ludcmp,
trisolv, gramschmidt, deriche, heat-3d, fdtd-2d, covariance, correlation, syrk, trmm,
symm, bicg, mvt, atax) and everyday code: a histogram, prefix sums, an insertion sort, a
binary search, Newton's method per element, Horner's rule, RK4 steps, Game of Life,
knapsack, edit distance and LCS on int arrays, a sieve, Collatz lengths, Euclid's gcd with
`%` on negative numbers, `continue` with an early `return`, `enumerate(zip(...))`, rows
of a matrix written in place through `for row in A:`, results built with `np.empty` and
filled, float32 arrays mixed with Python floats (NEP 50).

`PROGRAMS` holds each with its input factory `(rng, n) -> args`, the sizes to check it at
and whether it graph-breaks today (``breaks``: an `int()` or a `range()` of array values,
a loop unrolled past the budget). ``python -m benchmarks.unseen_loops`` checks and times
them all; the corpus (integration_tests/programs_unseen_loops.py) runs a few of them in CI.

    >>> import numpy as np
    >>> int(PROGRAMS["gcd_by_remainders"].fn(np.array([12]), np.array([-8]))[0])
    -4
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

Factory = Callable[[np.random.Generator, int], tuple[Any, ...]]


@attrs.frozen
class UnseenLoop:
    """One program: the function, its input factory, the sizes it is checked at (0 and 1
    run the loop not at all and once), and whether it graph-breaks today."""

    fn: Callable[..., Any]
    inputs: Factory
    sizes: tuple[int, ...] = (4, 7)
    breaks: bool = False


#: Every program by name, in the order of this module.
PROGRAMS: dict[str, UnseenLoop] = {}


def unseen(
    inputs: Factory, *, sizes: tuple[int, ...] = (4, 7), breaks: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated program under its name and return it unchanged."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS[fn.__name__] = UnseenLoop(fn, inputs, sizes, breaks)
        return fn

    return register


def _dominant_system(rng, n):
    A = rng.standard_normal((n, n))
    A[np.diag_indices(n)] = np.abs(A).sum(axis=1) + 1.0
    return (A, rng.standard_normal(n))


def _lower_system(rng, n):
    L = np.tril(rng.standard_normal((n, n)))
    L[np.diag_indices(n)] = rng.uniform(2.0, 3.0, n)
    return (L, rng.standard_normal(n))


# --- PolyBench-like kernels, element by element ---------------------------------------------


@unseen(lambda rng, n: (rng.standard_normal((n, n + 1)),), sizes=(4, 1, 7))
def diagonal_neighbour_in_range(A):
    """Each cell's upper-right neighbour where it exists: `0 <= i < h and 0 <= j < w`."""
    h, w = A.shape
    out = np.zeros_like(A)
    for i in range(h):
        for j in range(w):
            ii = i - 1
            jj = j + 1
            if 0 <= ii < h and 0 <= jj < w:
                out[i, j] = A[ii, jj]
    return out


@unseen(lambda rng, n: (rng.integers(0, 4, n),), sizes=(4, 0, 1, 7))
def nussinov(seq):
    # RNA folding: max() of NumPy int64 scalars (kept as np.maximum) in a triangular DP.
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
                if i < j - 1:
                    pair = 1 if seq[i] + seq[j] == 3 else 0
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + pair)
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    return table


@unseen(lambda rng, n: (rng.standard_normal((n, n)), 2))
def seidel_2d_elements(A, tsteps):
    n = A.shape[0]
    for _ in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                top = A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                middle = A[i, j - 1] + A[i, j] + A[i, j + 1]
                bottom = A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]
                A[i, j] = (top + middle + bottom) / 9.0
    return A


@unseen(lambda rng, n: (rng.standard_normal((n, n)),))
def adi_column_sweep(u):
    # One ADI half step: a tridiagonal solve down each column (forward, then back).
    n = u.shape[0]
    v = np.zeros_like(u)
    p = np.zeros_like(u)
    q = np.zeros_like(u)
    a, b, c = -0.5, 2.0, -0.5
    for i in range(1, n - 1):
        v[0, i] = 1.0
        q[i, 0] = v[0, i]
        for j in range(1, n - 1):
            p[i, j] = -c / (a * p[i, j - 1] + b)
            q[i, j] = (u[j, i - 1] + 2.0 * u[j, i] - q[i, j - 1] * a) / (a * p[i, j - 1] + b)
        v[n - 1, i] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, i] = p[i, j] * v[j + 1, i] + q[i, j]
    return v


@unseen(lambda rng, n: (rng.uniform(-0.3, 0.3, n),), sizes=(4, 1, 7))
def durbin(r):
    n = r.shape[0]
    y = np.empty_like(r)
    z = np.empty_like(r)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
    return y


@unseen(_dominant_system)
def ludcmp(A, b):
    # LU in place (Doolittle), then forward and back substitution.
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            w = A[i, j]
            for k in range(j):
                w -= A[i, k] * A[k, j]
            A[i, j] = w / A[j, j]
        for j in range(i, n):
            w = A[i, j]
            for k in range(i):
                w -= A[i, k] * A[k, j]
            A[i, j] = w
    y = np.empty(n)
    for i in range(n):
        w = b[i]
        for j in range(i):
            w -= A[i, j] * y[j]
        y[i] = w
    x = np.empty(n)
    for i in range(n - 1, -1, -1):
        w = y[i]
        for j in range(i + 1, n):
            w -= A[i, j] * x[j]
        x[i] = w / A[i, i]
    return x, A


@unseen(_lower_system, sizes=(4, 0, 7))
def trisolv(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]
    return x


@unseen(lambda rng, n: (rng.standard_normal((n + 2, n)),))
def gramschmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += A[i, k] * A[i, k]
        R[k, k] = np.sqrt(nrm)
        for i in range(m):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = 0.0
            for i in range(m):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(m):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]
    return Q, R


@unseen(lambda rng, n: (rng.standard_normal((n, 5)).astype(np.float32),))
def deriche_rows(img):
    # A causal and an anti-causal recursive filter per row; Python float states that
    # become float32 after a step (NEP 50), one step later for the older state.
    h, w = img.shape
    a1, a2, b1, b2 = 0.3, -0.1, 0.6, -0.2
    y1 = np.empty_like(img)
    y2 = np.empty_like(img)
    for i in range(h):
        ym1 = 0.0
        ym2 = 0.0
        xm1 = 0.0
        for j in range(w):
            y1[i, j] = a1 * img[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = img[i, j]
            ym2 = ym1
            ym1 = y1[i, j]
        yp1 = 0.0
        yp2 = 0.0
        for j in range(w - 1, -1, -1):
            y2[i, j] = b1 * yp1 + b2 * yp2
            yp2 = yp1
            yp1 = y2[i, j]
    return y1 + y2


@unseen(lambda rng, n: (rng.standard_normal((n, n, n)), np.zeros((n, n, n))), sizes=(3, 5))
def heat_3d_swapping(A, B):
    for _ in range(3):
        inner = A[1:-1, 1:-1, 1:-1]
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * inner + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * inner + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * inner + A[1:-1, 1:-1, :-2])
            + inner
        )
        A, B = B, A
    return A


@unseen(
    lambda rng, n: (
        rng.standard_normal((n, n + 1)),
        rng.standard_normal((n, n + 1)),
        rng.standard_normal((n, n + 1)),
        rng.standard_normal(3),
    )
)
def fdtd_2d(ex, ey, hz, fict):
    nx, ny = ex.shape
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return ex, ey, hz


@unseen(lambda rng, n: (rng.standard_normal((n + 3, 4)),))
def covariance_by_loops(data):
    m, k = data.shape
    mean = np.zeros(k)
    for j in range(k):
        for i in range(m):
            mean[j] += data[i, j]
        mean[j] /= m
    cov = np.zeros((k, k))
    for i in range(k):
        for j in range(i, k):
            s = 0.0
            for r in range(m):
                s += (data[r, i] - mean[i]) * (data[r, j] - mean[j])
            cov[i, j] = s / (m - 1)
            cov[j, i] = cov[i, j]
    return cov


@unseen(lambda rng, n: (rng.standard_normal((n + 2, 3)),))
def correlation_by_loops(data):
    m, k = data.shape
    mean = data.sum(axis=0) / m
    std = np.zeros(k)
    for j in range(k):
        s = 0.0
        for i in range(m):
            s += (data[i, j] - mean[j]) ** 2
        std[j] = np.sqrt(s / m)
        if std[j] <= 0.1:
            std[j] = 1.0
    corr = np.eye(k)
    for i in range(k - 1):
        for j in range(i + 1, k):
            s = 0.0
            for r in range(m):
                s += (data[r, i] - mean[i]) * (data[r, j] - mean[j])
            corr[i, j] = s / (m * std[i] * std[j])
            corr[j, i] = corr[i, j]
    return corr


@unseen(lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal((n, 3))))
def syrk_by_rows(C, A):
    for i in range(C.shape[0]):
        C[i, : i + 1] *= 1.5
        for k in range(A.shape[1]):
            C[i, : i + 1] += 0.5 * A[i, k] * A[: i + 1, k]
    return C


@unseen(lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal((n, 3))))
def trmm_by_rows(A, B):
    n = A.shape[0]
    for i in range(n):
        for j in range(B.shape[1]):
            for k in range(i + 1, n):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = 2.0 * B[i, j]
    return B


@unseen(
    lambda rng, n: (
        rng.standard_normal((n, n)),
        rng.standard_normal((n, 3)),
        rng.standard_normal((n, 3)),
    )
)
def symm_by_rows(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            temp = 0.0
            for k in range(i):
                C[k, j] += 1.5 * B[i, j] * A[i, k]
                temp += B[k, j] * A[i, k]
            C[i, j] = 1.2 * C[i, j] + 1.5 * B[i, j] * A[i, i] + 1.5 * temp
    return C


@unseen(
    lambda rng, n: (
        rng.standard_normal((n, n + 1)),
        rng.standard_normal(n + 1),
        rng.standard_normal(n),
    ),
    sizes=(4, 0, 1),
)
def bicg_by_rows(A, p, r):
    s = np.zeros(A.shape[1])
    q = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        s += r[i] * A[i]
        q[i] = A[i] @ p
    return s, q


@unseen(
    lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal(n), rng.standard_normal(n))
)
def mvt_elements(A, y1, y2):
    n = A.shape[0]
    x1 = np.zeros(n)
    x2 = np.zeros(n)
    for i in range(n):
        for j in range(n):
            x1[i] = x1[i] + A[i, j] * y1[j]
    for i in range(n):
        for j in range(n):
            x2[i] = x2[i] + A[j, i] * y2[j]
    return x1, x2


@unseen(lambda rng, n: (rng.standard_normal((n, 5)), rng.standard_normal(5)), sizes=(4, 0, 1))
def atax_over_rows(A, x):
    y = np.zeros(A.shape[1])
    for row in A:
        y += np.dot(row, x) * row
    return y


# --- everyday loops -------------------------------------------------------------------------


@unseen(lambda rng, n: (rng.random(n * 3),), breaks=True)
def histogram_by_loop(x):
    counts = np.zeros(8, dtype=np.int64)
    for i in range(x.shape[0]):
        b = int(x[i] * 8)
        if b == 8:
            b = 7
        counts[b] += 1
    return counts


@unseen(lambda rng, n: (rng.integers(-5, 5, n).astype(np.int32),), sizes=(4, 0, 7))
def prefix_sum_int32(x):
    out = np.empty_like(x)
    acc = 0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return out, acc


@unseen(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 1, 7))
def insertion_sort_of_a_copy(x):
    a = x.copy()
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


@unseen(lambda rng, n: (np.sort(rng.standard_normal(n)), 0.1), sizes=(4, 0, 7))
def binary_search_while(a, v):
    lo = 0
    hi = a.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@unseen(lambda rng, n: (rng.uniform(1.0, 5.0, n),))
def newton_cube_roots(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        x = a[i]
        dx = 1.0
        while abs(dx) > 1e-12:
            dx = (x * x * x - a[i]) / (3.0 * x * x)
            x -= dx
        out[i] = x
    return out


@unseen(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(6)))
def horner(x, coeffs):
    out = np.zeros_like(x)
    for c in coeffs:
        out = out * x + c
    return out


@unseen(lambda rng, n: (rng.standard_normal(n), n + 3))
def rk4_steps(y, steps):
    h = 0.01
    t = 0.0
    for _ in range(steps):
        k1 = -y + np.sin(t)
        k2 = -(y + 0.5 * h * k1) + np.sin(t + 0.5 * h)
        k3 = -(y + 0.5 * h * k2) + np.sin(t + 0.5 * h)
        k4 = -(y + h * k3) + np.sin(t + h)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t += h
    return y, t


@unseen(lambda rng, n: (rng.random((n, n)) < 0.4,), sizes=(4, 1), breaks=True)
def game_of_life(board):
    # `0 <= ii < h and 0 <= jj < w`: two chained comparisons joined by `and`.
    g = board.astype(np.int64)
    h, w = g.shape
    for _ in range(2):
        nxt = np.zeros_like(g)
        for i in range(h):
            for j in range(w):
                c = 0
                for di in (-1, 0, 1):
                    for dj in (-1, 0, 1):
                        ii = i + di
                        jj = j + dj
                        if (di != 0 or dj != 0) and 0 <= ii < h and 0 <= jj < w:
                            c += g[ii, jj]
                if c == 3 or (c == 2 and g[i, j] == 1):
                    nxt[i, j] = 1
        g = nxt
    return g.astype(bool)


@unseen(lambda rng, n: (rng.integers(1, 6, n), rng.integers(1, 10, n), 10), breaks=True)
def knapsack_01(weights, values, capacity):
    best = np.zeros(capacity + 1, dtype=np.int64)
    for i in range(weights.shape[0]):
        w = weights[i]
        for c in range(capacity, w - 1, -1):
            candidate = best[c - w] + values[i]
            if candidate > best[c]:
                best[c] = candidate
    return best[capacity]


@unseen(lambda rng, n: (rng.integers(0, 3, n), rng.integers(0, 3, n + 1)))
def edit_distance(a, b):
    m, n = a.shape[0], b.shape[0]
    d = np.zeros((m + 1, n + 1), dtype=np.int64)
    for i in range(m + 1):
        d[i, 0] = i
    for j in range(n + 1):
        d[0, j] = j
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + cost)
    return d[m, n]


@unseen(lambda rng, n: (rng.integers(0, 3, n), rng.integers(0, 3, n)))
def lcs_length_int32(a, b):
    m, n = a.shape[0], b.shape[0]
    L = np.zeros((m + 1, n + 1), dtype=np.int32)
    for i in range(m):
        for j in range(n):
            if a[i] == b[j]:
                L[i + 1, j + 1] = L[i, j] + 1
            else:
                L[i + 1, j + 1] = max(L[i, j + 1], L[i + 1, j])
    return L[m, n]


@unseen(lambda rng, n: (n * 5,), sizes=(4, 0, 7))
def sieve_of_eratosthenes(limit):
    is_prime = np.ones(limit + 1, dtype=bool)
    is_prime[:2] = False
    p = 2
    while p * p <= limit:
        if is_prime[p]:
            for k in range(p * p, limit + 1, p):
                is_prime[k] = False
        p += 1
    return np.flatnonzero(is_prime)


@unseen(lambda rng, n: (rng.integers(1, 40, n),))
def collatz_lengths(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        c = x[i]
        steps = 0
        while c != 1:
            if c % 2 == 0:  # noqa: SIM108 - a statement `if` on a value, not a select
                c = c // 2
            else:
                c = 3 * c + 1
            steps += 1
        out[i] = steps
    return out


@unseen(lambda rng, n: (rng.integers(-30, 30, n), rng.integers(-30, 30, n)), sizes=(4, 0, 7))
def gcd_by_remainders(a, b):
    # `x, y = y, x % y`: Python's tuple assignment, `%` taking the divisor's sign.
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        while y != 0:
            x, y = y, x % y
        out[i] = x
    return out


@unseen(lambda rng, n: (rng.standard_normal(n), 1.5), sizes=(4, 0, 7))
def continue_and_early_return(x, limit):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        total += x[i]
        if total > limit:
            return i, total
    return -1, total


@unseen(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def enumerate_zip_running_sum(a, b):
    acc = 0.0
    out = np.empty_like(a)
    for i, (u, v) in enumerate(zip(a, b, strict=True)):
        acc += i * u * v
        out[i] = acc
    return out, acc


@unseen(lambda rng, n: (rng.standard_normal((n, 4)),))
def rows_shifted_in_place(A):
    for row in A:
        row -= row.max()
        row *= 0.5
    return A


@unseen(lambda rng, n: (rng.standard_normal((n, 3)), rng.integers(0, n, 2)))
def row_through_an_integer_scalar(A, idx):
    """`A[idx[0]]` indexes with a NumPy int scalar: a row view, so writing it writes `A`."""
    row = A[idx[0]]
    row *= 2.0
    for j in range(A.shape[1]):
        A[idx[1], j] -= 1.0
    return A, row


@unseen(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 1, 7))
def empty_then_filled(x):
    n = x.shape[0]
    out = np.empty((n, 2))
    for i in range(n):
        out[i, 0] = x[i] * 2.0
        out[i, 1] = x[n - 1 - i]
    return out


@unseen(lambda rng, n: (rng.standard_normal(n).astype(np.float32),), sizes=(4, 0, 7))
def float32_filter_with_python_floats(x):
    s = 0.0
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        s = s * 0.9 + x[i] * 1.5
        out[i] = s
    return out, s


@unseen(lambda rng, n: (rng.integers(0, 100, n),), sizes=(4, 0, 7))
def running_max_and_where(x):
    best = -1
    where = -1
    for i, v in enumerate(x):
        if v > best:
            best = v
            where = i
    return best, where


# The second to fifth sets and the nested-loop programs register themselves into PROGRAMS.
from . import (  # noqa: E402, F401
    nested_loop_programs,
    unseen_loop_programs_more,
    unseen_programs_fifth,
    unseen_programs_fourth,
    unseen_programs_third,
)
