"""Unseen programs, the third set (round 2's sixteenth session): forty plain-NumPy programs
written the way scientists and engineers write them, none of them tried before. The loop
programs register in `benchmarks.unseen_loop_programs.PROGRAMS`, the loop-free ones in
`benchmarks.unseen_array_programs.PROGRAMS`, so both harnesses check and time them.

Loops: signal processing (a float32 biquad IIR filter, Goertzel, autocorrelation by lags, a
DFT over complex64), finance (binomial option pricing through in-place views, EWMA that
skips NaNs), images (connected components by flood fill with a queue array, 3x3 erosion
of a bool image, an integral image of uint8), graphs (BFS on an adjacency matrix, dense
Dijkstra, Bellman-Ford with its early exit and negative-cycle test), physics (n-body
leapfrog, Ising Metropolis over int8 spins with given random numbers, SPH density),
numerics (a Dormand-Prince step whose stages are a list of arrays stacked, Simpson's rule,
bisection per element, the power method until converged, Householder QR, conjugate
gradients), text and bits (run-length encoding into lists, popcount of uint32, base64-like
6-bit packing of uint8, bits read into a Python int that outgrows int64) and statistics
(an online median by sorted insertion, bootstrap means from given indices into a dict).

Loop-free: fancy and boolean indexing, `np.where`, `np.einsum`, `np.cumsum` / `np.cumprod`
along axes, `np.searchsorted` with `np.bincount`, `np.unique` with its counts and inverse,
`np.clip`, `np.linalg`, broadcasting over new axes, integer wrap-around, division by zero
with NumPy's warnings, `out=` arguments, and views of the inputs returned.

``python -m benchmarks.unseen_loops --only 'iir*'`` (loops) and ``python -m
benchmarks.unseen_arrays --only 'where*'`` (loop-free) check and time them;
`integration_tests/test_unseen_third_set.py` runs a few in CI.

    >>> import numpy as np
    >>> popcount_uint32(np.array([7, 0, 255], dtype=np.uint32))
    (array([3, 0, 8], dtype=int8), 11)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .unseen_array_programs import unseen as unseen_arrays
from .unseen_loop_programs import unseen as unseen_loop

# --- signal processing ------------------------------------------------------------------------


def _biquad(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    # A stable low-pass biquad (b0, b1, b2) / (1, a1, a2).
    return (
        rng.standard_normal(n * 3).astype(np.float32),
        np.array([0.2, 0.4, 0.2]),
        np.array([1.0, -0.6, 0.25]),
    )


@unseen_loop(_biquad, sizes=(4, 0, 1, 7))
def iir_biquad_float32(x, b, a):
    # Direct form II transposed, float32 samples, float64 coefficients and state.
    y = np.empty_like(x)
    z1 = 0.0
    z2 = 0.0
    for i in range(x.shape[0]):
        xi = x[i]
        yi = b[0] * xi + z1
        z1 = b[1] * xi - a[1] * yi + z2
        z2 = b[2] * xi - a[2] * yi
        y[i] = yi
    return y, z1, z2


@unseen_loop(lambda rng, n: (rng.standard_normal(n * 4), 3), sizes=(4, 1, 7))
def goertzel_power(x, k):
    n = x.shape[0]
    w = 2.0 * np.pi * k / n
    coeff = 2.0 * np.cos(w)
    s1 = 0.0
    s2 = 0.0
    for i in range(n):
        s0 = x[i] + coeff * s1 - s2
        s2 = s1
        s1 = s0
    return s1 * s1 + s2 * s2 - coeff * s1 * s2


@unseen_loop(lambda rng, n: (rng.standard_normal(n * 3), n), sizes=(4, 1, 7))
def autocorrelation_by_lags(x, maxlag):
    n = x.shape[0]
    xm = x - x.mean()
    r = np.zeros(maxlag + 1)
    for k in range(maxlag + 1):
        r[k] = np.dot(xm[: n - k], xm[k:]) / n
    if r[0] > 0:
        r = r / r[0]
    return r


@unseen_loop(
    lambda rng, n: ((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64),),
    sizes=(4, 1, 7),
)
def dft_bins_complex64(x):
    n = x.shape[0]
    out = np.zeros(n, dtype=np.complex64)
    for k in range(n):
        acc = 0j
        for t in range(n):
            acc += x[t] * np.exp(-2j * np.pi * k * t / n)
        out[k] = acc
    return out


# --- finance ---------------------------------------------------------------------------------


@unseen_loop(lambda rng, n: (100.0, 95.0 + n, 0.03, 0.2, 1.0, n * 3), sizes=(4, 1, 7))
def binomial_american_put(spot, strike, rate, vol, maturity, steps):
    dt = maturity / steps
    up = np.exp(vol * np.sqrt(dt))
    down = 1.0 / up
    p = (np.exp(rate * dt) - down) / (up - down)
    disc = np.exp(-rate * dt)
    prices = spot * up ** np.arange(steps, -1, -1) * down ** np.arange(0, steps + 1)
    values = np.maximum(strike - prices, 0.0)
    for i in range(steps - 1, -1, -1):
        prices = prices[:-1] * down
        cont = disc * (p * values[: i + 1] + (1.0 - p) * values[1 : i + 2])
        values[: i + 1] = np.maximum(cont, strike - prices)
    return values[0]


def _with_nans(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    x = rng.standard_normal(n * 2)
    x[::3] = np.nan
    return (x, 0.3)


@unseen_loop(_with_nans, sizes=(4, 0, 1, 7))
def ewma_skipping_nans(x, alpha):
    out = np.full(x.shape, np.nan)
    level = np.nan
    seen = 0
    for i in range(x.shape[0]):
        v = x[i]
        if np.isnan(v):
            out[i] = level
            continue
        if seen == 0:  # noqa: SIM108 - as users write it
            level = v
        else:
            level = alpha * v + (1.0 - alpha) * level
        seen += 1
        out[i] = level
    return out, seen


# --- image processing ------------------------------------------------------------------------


@unseen_loop(lambda rng, n: (rng.random((n, n + 2)) < 0.45,), sizes=(4, 1, 7))
def connected_components_flood_fill(mask):
    h, w = mask.shape
    labels = np.zeros((h, w), dtype=np.int32)
    queue = np.empty(h * w, dtype=np.int64)
    count = 0
    for si in range(h):
        for sj in range(w):
            if not mask[si, sj] or labels[si, sj] != 0:
                continue
            count += 1
            labels[si, sj] = count
            head = 0
            tail = 1
            queue[0] = si * w + sj
            while head < tail:
                cell = queue[head]
                head += 1
                i = cell // w
                j = cell % w
                for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                    ni = i + di
                    nj = j + dj
                    if 0 <= ni < h and 0 <= nj < w and mask[ni, nj] and labels[ni, nj] == 0:
                        labels[ni, nj] = count
                        queue[tail] = ni * w + nj
                        tail += 1
    return labels, count


@unseen_loop(lambda rng, n: (rng.random((n + 2, n + 3)) < 0.8,), sizes=(4, 1, 7))
def erosion_3x3_bool(img):
    h, w = img.shape
    out = np.zeros_like(img)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            keep = True
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    if not img[i + di, j + dj]:
                        keep = False
                        break
                if not keep:
                    break
            out[i, j] = keep
    return out


@unseen_loop(
    lambda rng, n: (rng.integers(0, 256, (n, n + 1)).astype(np.uint8),), sizes=(4, 0, 1, 7)
)
def integral_image_uint8(img):
    h, w = img.shape
    ii = np.zeros((h + 1, w + 1), dtype=np.int64)
    for i in range(h):
        row = 0
        for j in range(w):
            row += img[i, j]
            ii[i + 1, j + 1] = ii[i, j + 1] + row
    return ii


# --- graphs ----------------------------------------------------------------------------------


def _adjacency(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.random((n, n)) < 0.3
    a = a | a.T
    np.fill_diagonal(a, False)
    return (a, 0)


@unseen_loop(_adjacency, sizes=(4, 1, 7))
def bfs_adjacency_matrix(adj, source):
    n = adj.shape[0]
    dist = np.full(n, -1, dtype=np.int64)
    queue = np.zeros(n, dtype=np.int64)
    dist[source] = 0
    queue[0] = source
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for v in range(n):
            if adj[u, v] and dist[v] < 0:
                dist[v] = dist[u] + 1
                queue[tail] = v
                tail += 1
    return dist, tail


def _weights(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    w = rng.uniform(1.0, 10.0, (n, n))
    w[rng.random((n, n)) < 0.4] = np.inf
    np.fill_diagonal(w, 0.0)
    return (w, 0)


@unseen_loop(_weights, sizes=(4, 1, 7))
def dijkstra_dense(w, source):
    n = w.shape[0]
    dist = np.full(n, np.inf)
    done = np.zeros(n, dtype=np.bool_)
    prev = np.full(n, -1, dtype=np.int32)
    dist[source] = 0.0
    for _ in range(n):
        u = -1
        best = np.inf
        for v in range(n):
            if not done[v] and dist[v] < best:
                best = dist[v]
                u = v
        if u < 0:
            break
        done[u] = True
        for v in range(n):
            nd = dist[u] + w[u, v]
            if nd < dist[v]:
                dist[v] = nd
                prev[v] = u
    return dist, prev


def _edges(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    m = n * 3
    return (
        rng.integers(0, n, m),
        rng.integers(0, n, m),
        rng.uniform(-1.0, 5.0, m),
        n,
    )


@unseen_loop(_edges, sizes=(4, 1, 7))
def bellman_ford_edges(src, dst, weight, n):
    dist = np.full(n, np.inf)
    dist[0] = 0.0
    rounds = 0
    for _ in range(n - 1):
        changed = False
        for e in range(src.shape[0]):
            cand = dist[src[e]] + weight[e]
            if cand < dist[dst[e]]:
                dist[dst[e]] = cand
                changed = True
        rounds += 1
        if not changed:
            break
    negative_cycle = False
    for e in range(src.shape[0]):
        if dist[src[e]] + weight[e] < dist[dst[e]]:
            negative_cycle = True
            break
    return dist, rounds, negative_cycle


# --- physics ---------------------------------------------------------------------------------


def _bodies(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (
        rng.standard_normal((n, 3)),
        rng.standard_normal((n, 3)) * 0.1,
        rng.uniform(0.5, 1.5, n),
        0.01,
        5,
    )


@unseen_loop(_bodies, sizes=(4, 1, 7))
def nbody_leapfrog(pos, vel, mass, dt, steps):
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    for _ in range(steps):
        acc[:] = 0.0
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                d = pos[j] - pos[i]
                r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 1e-3
                acc[i] += mass[j] * d / (r2 * np.sqrt(r2))
        vel += 0.5 * dt * acc
        pos += dt * vel
        vel += 0.5 * dt * acc
    return pos, vel


def _ising(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    spins = np.where(rng.random((n, n)) < 0.5, -1, 1).astype(np.int8)
    return (spins, rng.random((2, n, n)), 0.6)


@unseen_loop(_ising, sizes=(4, 1, 7))
def ising_metropolis_int8(spins, draws, beta):
    n = spins.shape[0]
    accepted = 0
    for sweep in range(draws.shape[0]):
        for i in range(n):
            for j in range(n):
                nb = (
                    spins[(i + 1) % n, j]
                    + spins[(i - 1) % n, j]
                    + spins[i, (j + 1) % n]
                    + spins[i, (j - 1) % n]
                )
                de = 2 * int(spins[i, j]) * int(nb)
                if de <= 0 or draws[sweep, i, j] < np.exp(-beta * de):
                    spins[i, j] = -spins[i, j]
                    accepted += 1
    return spins, accepted


@unseen_loop(lambda rng, n: (rng.random((n * 2, 2)), 0.3), sizes=(4, 1, 7))
def sph_density_cubic(pos, h):
    n = pos.shape[0]
    rho = np.zeros(n)
    norm = 10.0 / (7.0 * np.pi * h * h)
    for i in range(n):
        for j in range(n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            q = np.sqrt(dx * dx + dy * dy) / h
            if q < 1.0:
                rho[i] += norm * (1.0 - 1.5 * q * q + 0.75 * q * q * q)
            elif q < 2.0:
                rho[i] += norm * 0.25 * (2.0 - q) ** 3
    return rho


# --- numerics --------------------------------------------------------------------------------


def _dp_tableau() -> tuple[list[list[float]], list[float], list[float]]:
    a = [
        [],
        [1 / 5],
        [3 / 40, 9 / 40],
        [44 / 45, -56 / 15, 32 / 9],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
        [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
    ]
    b5 = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0]
    b4 = [5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40]
    return a, b5, b4


DORMAND_PRINCE = _dp_tableau()


@unseen_loop(lambda rng, n: (rng.standard_normal(n), 0.05), sizes=(4, 1, 7))
def dormand_prince_step(y, h):
    # One RK45 step of y' = -y + sin(y): the stages are a list of arrays, stacked.
    a, b5, b4 = DORMAND_PRINCE
    stages = []
    for s in range(7):
        ys = y.copy()
        for j in range(s):
            ys = ys + h * a[s][j] * stages[j]
        stages.append(-ys + np.sin(ys))
    k = np.stack(stages)
    y5 = y + h * (np.array(b5) @ k)
    y4 = y + h * (np.array(b4) @ k)
    err = np.max(np.abs(y5 - y4)) if y.shape[0] > 0 else 0.0
    return y5, err


@unseen_loop(
    lambda rng, n: (np.sin(np.linspace(0.0, 3.0, 2 * n + 1)), 3.0 / (2 * n)), sizes=(4, 1, 7)
)
def simpson_odd_even(y, dx):
    n = y.shape[0] - 1
    total = y[0] + y[n]
    for i in range(1, n):
        if i % 2 == 1:
            total += 4.0 * y[i]
        else:
            total += 2.0 * y[i]
    return total * dx / 3.0


@unseen_loop(lambda rng, n: (rng.uniform(0.5, 3.0, n),), sizes=(4, 0, 1, 7))
def bisection_per_element(c):
    # The root of x**3 - c in [0, 2 + c] per element, until the bracket is tiny.
    roots = np.empty_like(c)
    steps = np.zeros(c.shape[0], dtype=np.int32)
    for i in range(c.shape[0]):
        lo = 0.0
        hi = 2.0 + c[i]
        it = 0
        while hi - lo > 1e-10:
            mid = 0.5 * (lo + hi)
            f = mid * mid * mid - c[i]
            if f == 0.0:
                lo = hi = mid
                break
            if f > 0.0:
                hi = mid
            else:
                lo = mid
            it += 1
        roots[i] = 0.5 * (lo + hi)
        steps[i] = it
    return roots, steps


def _symmetric(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.standard_normal((n, n))
    return (a + a.T + n * np.eye(n), 1e-10, 500)


@unseen_loop(_symmetric, sizes=(4, 1, 7))
def power_method_until_converged(A, tol, maxit):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    for it in range(maxit):
        w = A @ v
        new = v @ w
        v = w / np.linalg.norm(w)
        if abs(new - lam) < tol * abs(new):
            return new, v, it
        lam = new
    return lam, v, maxit


@unseen_loop(lambda rng, n: (rng.standard_normal((n + 2, n)),), sizes=(4, 1, 7))
def householder_qr(A):
    m, n = A.shape
    R = A.copy()
    Q = np.eye(m)
    for k in range(n):
        x = R[k:, k]
        alpha = -np.sign(x[0]) * np.linalg.norm(x) if x[0] != 0 else -np.linalg.norm(x)
        v = x.copy()
        v[0] -= alpha
        vn = np.linalg.norm(v)
        if vn == 0.0:
            continue
        v /= vn
        R[k:, k:] -= 2.0 * np.outer(v, v @ R[k:, k:])
        Q[:, k:] -= 2.0 * np.outer(Q[:, k:] @ v, v)
    return Q, R


def _spd(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n), rng.standard_normal(n), 1e-10)


@unseen_loop(_spd, sizes=(4, 1, 7))
def conjugate_gradient_while(A, b, tol):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    it = 0
    while np.sqrt(rs) > tol and it < 2 * b.shape[0]:
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
        it += 1
    return x, it


# --- text and bits ---------------------------------------------------------------------------


@unseen_loop(
    lambda rng, n: (np.repeat(rng.integers(0, 3, n), rng.integers(1, 4, n)),), sizes=(4, 0, 1, 7)
)
def run_length_encode(x):
    values = []
    lengths = []
    i = 0
    n = x.shape[0]
    while i < n:
        j = i + 1
        while j < n and x[j] == x[i]:
            j += 1
        values.append(x[i])
        lengths.append(j - i)
        i = j
    return np.array(values, dtype=x.dtype), np.array(lengths, dtype=np.int64)


@unseen_loop(
    lambda rng, n: (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),),
    sizes=(4, 0, 1, 7),
)
def popcount_uint32(words):
    counts = np.zeros(words.shape[0], dtype=np.int8)
    total = 0
    for i in range(words.shape[0]):
        v = int(words[i])
        c = 0
        while v:
            v &= v - 1
            c += 1
        counts[i] = c
        total += c
    return counts, total


@unseen_loop(lambda rng, n: (rng.integers(0, 256, n * 3).astype(np.uint8),), sizes=(4, 0, 1, 7))
def pack_six_bit_groups(data):
    # Base64-like: each 3 bytes become 4 indices of 6 bits (uint8).
    groups = data.shape[0] // 3
    out = np.empty(groups * 4, dtype=np.uint8)
    for g in range(groups):
        b0 = np.uint32(data[3 * g])
        b1 = np.uint32(data[3 * g + 1])
        b2 = np.uint32(data[3 * g + 2])
        word = (b0 << 16) | (b1 << 8) | b2
        out[4 * g] = (word >> 18) & 63
        out[4 * g + 1] = (word >> 12) & 63
        out[4 * g + 2] = (word >> 6) & 63
        out[4 * g + 3] = word & 63
    return out


@unseen_loop(lambda rng, n: (rng.integers(0, 2, n * 12).astype(np.uint8),), sizes=(4, 0, 1, 7))
def bits_to_python_int(bits):
    # Grows past int64 at 64 bits: Python's int arithmetic, not NumPy's.
    value = 0
    ones = 0
    for i in range(bits.shape[0]):
        value = value * 2 + int(bits[i])
        ones += int(bits[i])
    return value, ones


# --- statistics ------------------------------------------------------------------------------


@unseen_loop(lambda rng, n: (rng.standard_normal(n * 2),), sizes=(4, 1, 7))
def online_median_sorted_insert(x):
    n = x.shape[0]
    buf = np.empty(n)
    medians = np.empty(n)
    for k in range(n):
        v = x[k]
        pos = k
        while pos > 0 and buf[pos - 1] > v:
            buf[pos] = buf[pos - 1]
            pos -= 1
        buf[pos] = v
        m = k + 1
        if m % 2 == 1:
            medians[k] = buf[m // 2]
        else:
            medians[k] = 0.5 * (buf[m // 2 - 1] + buf[m // 2])
    return medians


@unseen_loop(
    lambda rng, n: (rng.standard_normal(n + 3), rng.integers(0, n + 3, (20, n + 3))),
    sizes=(4, 1, 7),
)
def bootstrap_means_into_dict(x, idx):
    means = np.empty(idx.shape[0])
    for b in range(idx.shape[0]):
        means[b] = x[idx[b]].mean()
    lo = np.quantile(means, 0.05)
    hi = np.quantile(means, 0.95)
    return {"mean": x.mean(), "lo": lo, "hi": hi, "se": means.std(ddof=1)}


@unseen_loop(lambda rng, n: (rng.integers(-100, 100, n * 2).astype(np.int32), 5), sizes=(4, 1, 7))
def rolling_max_int32_with_deque_array(x, k):
    # Sliding-window maximum with a monotone index queue held in an int64 array.
    n = x.shape[0]
    out = np.empty(max(n - k + 1, 0), dtype=np.int32)
    dq = np.empty(n, dtype=np.int64)
    head = 0
    tail = 0
    for i in range(n):
        while tail > head and x[dq[tail - 1]] <= x[i]:
            tail -= 1
        dq[tail] = i
        tail += 1
        if dq[head] <= i - k:
            head += 1
        if i >= k - 1:
            out[i - k + 1] = x[dq[head]]
    return out


# --- loop-free array programs ----------------------------------------------------------------


@unseen_arrays(
    lambda rng, n: (rng.standard_normal((n, 5)), rng.integers(0, n, n + 2), rng.integers(-5, 5, n)),
    sizes=(4, 1, 7),
)
def fancy_and_boolean_gather_scatter(x, rows, labels):
    picked = x[rows, 1:4]
    keep = labels > 0
    y = x.copy()
    y[keep] = -y[keep]
    y[labels % 2 == 0, 0] = 9.0
    z = x[keep][:, [0, 4]]
    return picked, y, z, keep.sum()


@unseen_arrays(lambda rng, n: (rng.standard_normal((n, 6)), 0.5), sizes=(4, 1, 7))
def where_clip_and_normalize(x, limit):
    clipped = np.clip(x, -limit, limit)
    sign = np.where(x > 0, 1, np.where(x < 0, -1, 0))
    norms = np.sqrt((clipped * clipped).sum(axis=1, keepdims=True))
    safe = np.where(norms > 0, clipped / np.where(norms > 0, norms, 1.0), 0.0)
    return safe, sign, np.clip(sign, 0, None).astype(np.uint8)


@unseen_arrays(
    lambda rng, n: (rng.standard_normal((2, n, 4)), rng.standard_normal((2, n, 4))),
    sizes=(4, 1, 7),
    rtol=1e-10,
)
def einsum_attention_weights(q, k):
    scores = np.einsum("bid,bjd->bij", q, k) / np.sqrt(q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    out = np.einsum("bij,bjd->bid", w, k)
    return out, np.einsum("bii->b", scores), np.einsum("bid,bid->bi", q, k)


@unseen_arrays(lambda rng, n: (rng.integers(-3, 4, (n, 5)).astype(np.int8),), sizes=(4, 1, 7))
def cumsum_cumprod_along_axes(a):
    return (
        np.cumsum(a, axis=0),
        np.cumsum(a, axis=1, dtype=np.int8),
        np.cumprod(a, axis=1),
        np.cumprod(a.astype(np.int8), axis=0, dtype=np.int8),
        np.cumsum(a.astype(np.float32), axis=1),
    )


@unseen_arrays(
    lambda rng, n: (np.sort(rng.uniform(0.0, 10.0, n + 1)), rng.uniform(-1.0, 11.0, n * 5)),
    sizes=(4, 1, 7),
)
def searchsorted_bins_and_bincount(edges, x):
    bins = np.searchsorted(edges, x, side="right") - 1
    inside = (bins >= 0) & (bins < edges.shape[0] - 1)
    counts = np.bincount(bins[inside], minlength=edges.shape[0] - 1)
    sums = np.bincount(bins[inside], weights=x[inside], minlength=edges.shape[0] - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return counts, means, np.searchsorted(edges, 5.0)


@unseen_arrays(lambda rng, n: (rng.integers(0, n + 1, n * 3),), sizes=(4, 1, 7))
def unique_counts_and_inverse(labels):
    values, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    relabeled = inverse.astype(np.int32)
    frequency = counts[inverse] / labels.shape[0]
    return values, relabeled, counts, frequency


def _tall(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal((n + 3, n)), rng.standard_normal(n + 3))


@unseen_arrays(_tall, sizes=(4, 1, 7), rtol=1e-8, atol=1e-10)
def least_squares_three_ways(a, b):
    x1 = np.linalg.lstsq(a, b, rcond=None)[0]
    x2 = np.linalg.pinv(a) @ b
    w, v = np.linalg.eigh(a.T @ a)
    x3 = v @ ((v.T @ (a.T @ b)) / w)
    return x1, x2, x3, np.linalg.matrix_rank(a), np.linalg.cond(a)


@unseen_arrays(
    lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n + 2, 3))),
    sizes=(4, 1, 7),
)
def pairwise_by_new_axes(p, q):
    d = p[:, None, :] - q[None, :, :]
    dist = np.sqrt((d**2).sum(axis=-1))
    nearest = dist.argmin(axis=1)
    gauss = np.exp(-(dist**2))[..., np.newaxis] * d
    return dist, nearest, gauss.sum(axis=1)


@unseen_arrays(
    lambda rng, n: (
        rng.integers(100, 128, n).astype(np.int8),
        rng.integers(0, 10, n).astype(np.uint8),
        rng.integers(2**30, 2**31 - 1, n).astype(np.int32),
    ),
    sizes=(4, 1, 7),
)
def integer_overflow_wraps(i8, u8, i32):
    return (
        i8 + i8,
        u8 - 20,
        (i32 * 3).astype(np.int64),
        i32.sum(dtype=np.int32),
        np.abs(np.full_like(i8, -128)),
        u8 * np.uint8(200),
    )


def _with_zeros(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    x = rng.standard_normal(n)
    y = rng.standard_normal(n)
    y[::2] = 0.0
    x[::4] = 0.0
    return (x, y, rng.integers(-3, 3, n))


@unseen_arrays(_with_zeros, sizes=(4, 1, 7))
def division_by_zero_with_warnings(x, y, k):
    ratio = x / y
    logs = np.log(np.abs(y))
    return ratio, logs, np.isnan(ratio).sum(), np.isinf(ratio).sum(), k // 2


@unseen_arrays(_with_zeros, sizes=(4, 1, 7))
def integer_floor_divide_by_zero(x, y, k):
    q = 7 // k
    r = 7 % k
    return q, r, np.where(k != 0, q, -1)


@unseen_arrays(
    lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal(n), np.zeros((n, 4))),
    sizes=(4, 1, 7),
)
def out_arguments_into_views(a, b, out):
    np.add(a[:, 0], b, out=out[:, 1])
    np.multiply(a, 2.0, out=a)
    np.clip(b, -0.5, 0.5, out=b)
    np.sqrt(np.abs(a[:, 2]), out=out[:, 3])
    total = np.sum(a, axis=1, out=out[:, 0])
    return out, total


@unseen_arrays(lambda rng, n: (rng.standard_normal((n, 6)),), sizes=(4, 1, 7))
def views_returned_alias_inputs(x):
    evens = x[:, ::2]
    flipped = x[::-1]
    col = x[:, 1]
    flat = x.reshape(-1)
    col *= 2.0
    return evens, flipped, flat, x.T, col[None, :], x.copy()[0]


@unseen_arrays(lambda rng, n: (rng.integers(0, 4, n), rng.standard_normal((n, 4))), sizes=(4, 1, 7))
def one_hot_and_take_along_axis(labels, logits):
    n = labels.shape[0]
    onehot = np.zeros((n, 4), dtype=np.float32)
    onehot[np.arange(n), labels] = 1.0
    picked = np.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
    top = np.argsort(logits, axis=1)[:, ::-1][:, :2]
    return onehot, picked, top, (onehot.argmax(axis=1) == labels).all()


@unseen_arrays(
    lambda rng, n: (
        (rng.standard_normal((n, 4)) + 1j * rng.standard_normal((n, 4))).astype(np.complex64),
    ),
    sizes=(4, 1, 7),
    rtol=1e-5,
    atol=1e-6,
)
def complex64_with_python_complex(z):
    rot = z * (0.5 + 0.5j)
    mag = np.abs(rot)
    phase = np.angle(z)
    conj_prod = (z * np.conj(z)).real
    return rot, mag, phase, conj_prod, rot.sum(axis=0)
