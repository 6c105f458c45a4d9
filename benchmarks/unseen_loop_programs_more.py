"""Unseen loops, the second set (issue 23, round 2's fifteenth session): thirty more loop
programs written as scientists write plain NumPy, none of them tried before, registered in
`benchmarks.unseen_loop_programs.PROGRAMS` beside the first set.

PolyBench-like kernels element by element (a Viterbi DP over log-probabilities,
Smith-Waterman, modified Gram-Schmidt column by column, durbin on float32, trmm on
Fortran-order inputs, gemm, doitgen, covariance, seidel on a Fortran-order copy, LU with
partial pivoting) and everyday code: `np.cumsum` of a row inside a loop, Newton's method
`while abs(dx) > tol and it < 50`, a Jacobi sweep `while err > tol and it < maxit`, a 1-D
heat equation swapping two buffers, a loop writing through a view (`B = A[1:]`), a
histogram `counts[int(x[i] * nb)] += 1` into int32, bubble sort leaving its outer loop
when a pass swapped nothing, a CSR matrix-vector product over `range(indptr[i],
indptr[i + 1])`, an early `return` with `continue`, the first negative of each row
(`break` out of the inner loop), Kadane's maximum subarray, inversions of an int32 array,
Welford's running variance over float32 with Python floats, a polynomial hash of uint8
bytes in Python ints, the trapezoid rule over float32, `enumerate(zip(a, b))` with
`continue`, and `min()` / `max()` of float scalars with NaNs.

What they found is in `integration_tests/test_loops_unseen_second_set.py`, which runs them
in CI; ``python -m benchmarks.unseen_loops --only 'viterbi*'`` checks and times one.
"""

from __future__ import annotations

import numpy as np

from .unseen_loop_programs import unseen


def _hmm(rng, n):
    s = 3
    a = np.log(rng.dirichlet(np.ones(s), s))
    b = np.log(rng.dirichlet(np.ones(5), s))
    pi = np.log(np.full(s, 1.0 / s))
    obs = rng.integers(0, 5, n)
    return (obs, pi, a, b)


@unseen(_hmm, sizes=(4, 0, 1, 7))
def viterbi_log(obs, log_pi, log_a, log_b):
    n = obs.shape[0]
    s = log_pi.shape[0]
    score = np.full((n, s), -np.inf)
    back = np.zeros((n, s), dtype=np.int64)
    path = np.zeros(n, dtype=np.int64)
    if n == 0:
        return path, -np.inf
    for k in range(s):
        score[0, k] = log_pi[k] + log_b[k, obs[0]]
    for t in range(1, n):
        for k in range(s):
            best = -np.inf
            arg = 0
            for j in range(s):
                cand = score[t - 1, j] + log_a[j, k]
                if cand > best:
                    best = cand
                    arg = j
            score[t, k] = best + log_b[k, obs[t]]
            back[t, k] = arg
    last = 0
    for k in range(1, s):
        if score[n - 1, k] > score[n - 1, last]:
            last = k
    path[n - 1] = last
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path, score[n - 1, last]


@unseen(
    lambda rng, n: (rng.integers(0, 4, n), rng.integers(0, 4, n + 2)),
    sizes=(4, 0, 1, 7),
    breaks=True,
)
def smith_waterman(a, b):
    n, m = a.shape[0], b.shape[0]
    H = np.zeros((n + 1, m + 1), dtype=np.int64)
    best = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            s = 3 if a[i - 1] == b[j - 1] else -3
            h = max(0, H[i - 1, j - 1] + s, H[i - 1, j] - 2, H[i, j - 1] - 2)
            H[i, j] = h
            if h > best:
                best = h
    return H, best


@unseen(lambda rng, n: (rng.standard_normal((n, 5)),), sizes=(4, 0, 1, 7))
def cumsum_rows_in_loop(A):
    out = np.empty_like(A)
    total = 0.0
    for i in range(A.shape[0]):
        c = np.cumsum(A[i])
        out[i] = c
        total += c[-1]
    return out, total


@unseen(lambda rng, n: (np.linspace(-2.0, 3.0, 4), 1.5 + n * 0.1, 1e-12), sizes=(4, 7))
def newton_while_abs_dx(coeffs, x0, tol):
    x = x0
    dx = 1.0
    it = 0
    while abs(dx) > tol and it < 50:
        p = 0.0
        dp = 0.0
        for c in coeffs:
            dp = dp * x + p
            p = p * x + c
        dx = p / dp
        x = x - dx
        it += 1
    return x, it


@unseen(lambda rng, n: (rng.standard_normal(n + 2), 1e-6, 5 * n), sizes=(4, 0, 1, 7))
def jacobi_1d_until_converged(b, tol, maxit):
    n = b.shape[0]
    u = np.zeros(n)
    err = tol + 1.0
    it = 0
    while err > tol and it < maxit:
        new = u.copy()
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1] + b[i])
        err = np.abs(new - u).max()
        u = new
        it += 1
    return u, it, err


@unseen(lambda rng, n: (rng.standard_normal(n + 2), n), sizes=(4, 0, 1, 7))
def heat_1d_elementwise_swap(u0, steps):
    u = u0.copy()
    v = np.empty_like(u)
    v[0] = u[0]
    v[-1] = u[-1]
    for _ in range(steps):
        for i in range(1, u.shape[0] - 1):
            v[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u, v = v, u
    return u


@unseen(lambda rng, n: (rng.standard_normal(n + 1),), sizes=(4, 0, 1, 7))
def write_through_a_view(A):
    B = A[1:]
    for i in range(1, B.shape[0]):
        B[i] = 0.5 * B[i - 1] + A[i]
    return A, B


@unseen(lambda rng, n: (rng.uniform(-0.3, 0.3, n).astype(np.float32),), sizes=(4, 1, 7))
def durbin_float32(r):
    n = r.shape[0]
    y = np.zeros(n, dtype=np.float32)
    z = np.zeros(n, dtype=np.float32)
    y[0] = -r[0]
    beta = np.float32(1.0)
    alpha = -r[0]
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        s = np.float32(0.0)
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
    return y


@unseen(lambda rng, n: (rng.standard_normal((n + 2, n)),), sizes=(4, 1, 7))
def modified_gram_schmidt_columns(A):
    m, n = A.shape
    Q = A.copy()
    R = np.zeros((n, n))
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += Q[i, k] * Q[i, k]
        R[k, k] = np.sqrt(nrm)
        for i in range(m):
            Q[i, k] = Q[i, k] / R[k, k]
        for j in range(k + 1, n):
            dot = 0.0
            for i in range(m):
                dot += Q[i, k] * Q[i, j]
            R[k, j] = dot
            for i in range(m):
                Q[i, j] = Q[i, j] - Q[i, k] * dot
    return Q, R


@unseen(lambda rng, n: (rng.random(3 * n), 5), sizes=(4, 0, 1, 7))
def histogram_int_of_scaled(x, nb):
    counts = np.zeros(nb, dtype=np.int32)
    for i in range(x.shape[0]):
        counts[int(x[i] * nb)] += 1
    return counts


@unseen(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 0, 1, 7))
def bubble_sort_early_exit(x):
    a = x.copy()
    n = a.shape[0]
    passes = 0
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                t = a[j]
                a[j] = a[j + 1]
                a[j + 1] = t
                swapped = True
        passes += 1
        if not swapped:
            break
    return a, passes


@unseen(
    lambda rng, n: (
        np.asfortranarray(rng.standard_normal((n, n))),
        np.asfortranarray(rng.standard_normal((n, 3))),
    ),
    sizes=(4, 0, 1, 7),
)
def trmm_fortran_elements(A, B):
    m, n = B.shape
    for i in range(m):
        for j in range(n):
            for k in range(i + 1, m):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = 1.5 * B[i, j]
    return B


def _csr(rng, n):
    dense = rng.standard_normal((n, n)) * (rng.random((n, n)) < 0.4)
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = []
    data = []
    for i in range(n):
        nz = np.nonzero(dense[i])[0]
        indices.extend(nz.tolist())
        data.extend(dense[i, nz].tolist())
        indptr[i + 1] = indptr[i] + nz.shape[0]
    return (indptr, np.array(indices, dtype=np.int64), np.array(data), rng.standard_normal(n))


@unseen(_csr, sizes=(4, 0, 1, 7))
def csr_matvec(indptr, indices, data, x):
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        y[i] = s
    return y


@unseen(lambda rng, n: (rng.standard_normal(n), 1.0), sizes=(4, 0, 1, 7))
def first_crossing_early_return(x, threshold):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] != x[i]:
            continue
        s += x[i]
        if s > threshold:
            return i, s
    return -1, s


@unseen(lambda rng, n: (rng.standard_normal((n, 6)),), sizes=(4, 0, 1, 7))
def first_negative_per_row_break(A):
    first = np.full(A.shape[0], -1, dtype=np.int64)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] < 0:
                first[i] = j
                break
    return first


@unseen(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 0, 1, 7), breaks=True)
def kadane_max_subarray(x):
    best = -np.inf
    cur = 0.0
    for v in x:
        cur = max(v, cur + v)
        best = max(best, cur)
    return best


@unseen(lambda rng, n: (rng.integers(-10, 10, n).astype(np.int32),), sizes=(4, 0, 1, 7))
def count_inversions_int32(x):
    count = 0
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if x[i] > x[j]:
                count += 1
    return count


@unseen(lambda rng, n: (rng.standard_normal(n).astype(np.float32),), sizes=(4, 0, 1, 7))
def welford_float32(x):
    mean = 0.0
    m2 = 0.0
    k = 0
    for v in x:
        k += 1
        d = v - mean
        mean += d / k
        m2 += d * (v - mean)
    return mean, m2, k


@unseen(
    lambda rng, n: (
        rng.standard_normal((n, n)),
        rng.standard_normal((n, n)),
        rng.standard_normal((n, n)),
        1.5,
        1.2,
    ),
    sizes=(4, 0, 1, 7),
)
def gemm_elements(C, A, B, alpha, beta):
    n = C.shape[0]
    for i in range(n):
        for j in range(n):
            C[i, j] *= beta
        for k in range(n):
            for j in range(n):
                C[i, j] += alpha * A[i, k] * B[k, j]
    return C


@unseen(
    lambda rng, n: (rng.standard_normal((n, 3, 4)), rng.standard_normal((4, 4))), sizes=(4, 0, 1, 5)
)
def doitgen(A, C4):
    r, q, p = A.shape
    s = np.zeros(p)
    for i in range(r):
        for j in range(q):
            for k in range(p):
                s[k] = 0.0
                for m in range(p):
                    s[k] += A[i, j, m] * C4[m, k]
            for k in range(p):
                A[i, j, k] = s[k]
    return A


@unseen(lambda rng, n: (rng.standard_normal((n + 1, n + 1)),), sizes=(4, 0, 1, 7))
def lu_partial_pivoting(A):
    n = A.shape[0]
    perm = np.arange(n)
    for k in range(n):
        p = k + int(np.argmax(np.abs(A[k:, k])))
        if p != k:
            A[[k, p]] = A[[p, k]]
            perm[[k, p]] = perm[[p, k]]
        for i in range(k + 1, n):
            A[i, k] /= A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]
    return A, perm


@unseen(lambda rng, n: (rng.integers(0, 256, n).astype(np.uint8),), sizes=(4, 0, 1, 7))
def polynomial_hash_python_int(data):
    h = 7
    for c in data:
        h = (h * 31 + int(c)) % 1000000007
    return h


@unseen(lambda rng, n: (rng.standard_normal(n).astype(np.float32), 0.1), sizes=(4, 0, 1, 7))
def trapezoid_float32(y, dx):
    total = 0.0
    for i in range(1, y.shape[0]):
        total += 0.5 * dx * (y[i - 1] + y[i])
    return total


@unseen(lambda rng, n: (rng.standard_normal((n, n)),), sizes=(4, 0, 1, 7))
def seidel_fortran_input(A):
    A = np.asfortranarray(A)
    n = A.shape[0]
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            A[i, j] = (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1] + A[i, j]) * 0.2
    return A


@unseen(lambda rng, n: (rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, n)), sizes=(4, 0, 1, 7))
def enumerate_zip_weighted(a, b):
    acc = 0
    out = np.zeros(a.shape[0], dtype=np.float64)
    for i, (u, v) in enumerate(zip(a, b, strict=True)):
        if u < v:
            continue
        acc += i
        out[i] = u * v
    return out, acc


@unseen(lambda rng, n: (rng.standard_normal((n, 4)),), sizes=(4, 0, 1, 7))
def covariance_int_loops(data):
    m, k = data.shape
    mean = np.zeros(k)
    for j in range(k):
        for i in range(m):
            mean[j] += data[i, j]
        mean[j] /= m
    cov = np.zeros((k, k))
    for a in range(k):
        for b in range(a, k):
            s = 0.0
            for i in range(m):
                s += (data[i, a] - mean[a]) * (data[i, b] - mean[b])
            cov[a, b] = s / (m - 1)
            cov[b, a] = cov[a, b]
    return cov


@unseen(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 1, 7))
def kadane_from_the_first_element(x):
    best = x[0]
    cur = x[0]
    for i in range(1, x.shape[0]):
        cur = max(x[i], cur + x[i])
        best = max(best, cur)
    return best, cur


@unseen(
    lambda rng, n: (
        np.where(rng.random(n) < 0.3, np.nan, rng.standard_normal(n)).astype(np.float32),
    ),
    sizes=(4, 1, 7),
)
def min_max_with_nans_float32(x):
    lo = x[0]
    hi = x[0]
    for v in x:
        lo = min(lo, v)
        hi = max(v, hi, lo)
    return lo, hi
