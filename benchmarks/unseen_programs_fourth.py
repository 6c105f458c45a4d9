"""Unseen programs, the fourth set (round 2's seventeenth session): fifty plain-NumPy loop
programs written the way scientists and engineers write them, none of them tried before.
They register in `benchmarks.unseen_loop_programs.PROGRAMS`, so ``python -m
benchmarks.unseen_loops --only 'forward_backward*'`` checks and times them.

Sequences and dynamic programming (HMM forward-backward, Needleman-Wunsch with its
traceback, longest increasing subsequence with its reconstruction, matrix-chain order, an
unbounded coin-change count); graphs (union-find with path compression, Kahn's topological
sort, Prim and Kruskal, a pointer chain that leaves its array); simulation (Gillespie and
Metropolis on random numbers passed in, velocity Verlet on a spring chain, RK4 on Lorenz in
float32, Lindley's queue, an int16 inventory); linear algebra (Thomas, natural cubic
splines, Crank-Nicolson steps, Householder tridiagonalisation, Rayleigh quotient iteration,
LU with fancy-indexed row swaps and its solve); signals (Savitzky-Golay, a Kalman filter, a
segmented prefix sum, COO accumulation, a 2-d histogram by hand into int16, a bitonic
sorting network); roots and integrals (secant on Python floats, regula falsi per element,
Romberg); cells and bits (a complex64 Newton fractal, rule 110 on uint8, percolation by
sweeps, base64 decoding, CRC-8, Fletcher-16, a xorshift generator on uint32 scalars, Luhn
digits in int8, schoolbook multiplication of uint8 digits, factorials as Python ints,
ASCII byte processing); and programs that raise (an IndexError at a data-dependent index, a
ZeroDivisionError from Python floats, a ValueError on bad input) or warn (division by a
zero row sum).

`integration_tests/test_unseen_fourth_set.py` runs a few in CI.

    >>> import numpy as np
    >>> rule110_uint8(np.array([0, 0, 0, 1], dtype=np.uint8), 1)
    array([0, 0, 1, 1], dtype=uint8)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .unseen_loop_programs import unseen

# --- sequences and dynamic programming -------------------------------------------------------


def _hmm(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.random((3, 3)) + 0.1
    b = rng.random((3, 4)) + 0.1
    pi = rng.random(3) + 0.1
    return (
        rng.integers(0, 4, n * 2),
        pi / pi.sum(),
        a / a.sum(axis=1, keepdims=True),
        b / b.sum(axis=1, keepdims=True),
    )


@unseen(_hmm, sizes=(4, 0, 1, 7))
def forward_backward_scaled(obs, pi, A, B):
    T = obs.shape[0]
    k = pi.shape[0]
    alpha = np.zeros((T, k))
    beta = np.ones((T, k))
    scale = np.ones(T)
    if T == 0:
        return alpha, 0.0
    alpha[0] = pi * B[:, obs[0]]
    scale[0] = alpha[0].sum()
    alpha[0] /= scale[0]
    for t in range(1, T):
        for j in range(k):
            acc = 0.0
            for i in range(k):
                acc += alpha[t - 1, i] * A[i, j]
            alpha[t, j] = acc * B[j, obs[t]]
        scale[t] = alpha[t].sum()
        alpha[t] /= scale[t]
    for t in range(T - 2, -1, -1):
        for i in range(k):
            acc = 0.0
            for j in range(k):
                acc += A[i, j] * B[j, obs[t + 1]] * beta[t + 1, j]
            beta[t, i] = acc / scale[t + 1]
    gamma = alpha * beta
    return gamma, np.log(scale).sum()


def _two_sequences(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.integers(0, 4, n).astype(np.int8), rng.integers(0, 4, n + 2).astype(np.int8))


@unseen(_two_sequences, sizes=(4, 0, 1, 7))
def needleman_wunsch_traceback(a, b):
    match, mismatch, gap = 2, -1, -2
    n = a.shape[0]
    m = b.shape[0]
    score = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(1, n + 1):
        score[i, 0] = i * gap
    for j in range(1, m + 1):
        score[0, j] = j * gap
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            s = match if a[i - 1] == b[j - 1] else mismatch
            diag = score[i - 1, j - 1] + s
            up = score[i - 1, j] + gap
            left = score[i, j - 1] + gap
            score[i, j] = max(diag, up, left)
    out_a = np.full(n + m, -1, dtype=np.int8)
    out_b = np.full(n + m, -1, dtype=np.int8)
    i, j, k = n, m, 0
    while i > 0 or j > 0:
        if i > 0 and j > 0:
            s = match if a[i - 1] == b[j - 1] else mismatch
            if score[i, j] == score[i - 1, j - 1] + s:
                out_a[k] = a[i - 1]
                out_b[k] = b[j - 1]
                i -= 1
                j -= 1
                k += 1
                continue
        if i > 0 and score[i, j] == score[i - 1, j] + gap:
            out_a[k] = a[i - 1]
            i -= 1
        else:
            out_b[k] = b[j - 1]
            j -= 1
        k += 1
    return score[n, m], out_a[:k][::-1], out_b[:k][::-1]


@unseen(lambda rng, n: (rng.integers(0, 50, n * 2),), sizes=(4, 0, 1, 7))
def longest_increasing_subsequence(x):
    n = x.shape[0]
    length = np.ones(n, dtype=np.int64)
    prev = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for j in range(i):
            if x[j] < x[i] and length[j] + 1 > length[i]:
                length[i] = length[j] + 1
                prev[i] = j
    if n == 0:
        return 0, x[:0]
    end = int(np.argmax(length))
    best = int(length[end])
    seq = np.empty(best, dtype=x.dtype)
    k = best - 1
    while end >= 0:
        seq[k] = x[end]
        k -= 1
        end = prev[end]
    return best, seq


@unseen(lambda rng, n: (rng.integers(2, 20, n + 1),), sizes=(4, 1, 7))
def matrix_chain_order(dims):
    n = dims.shape[0] - 1
    cost = np.zeros((n, n), dtype=np.int64)
    split = np.zeros((n, n), dtype=np.int32)
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            cost[i, j] = np.iinfo(np.int64).max
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < cost[i, j]:
                    cost[i, j] = q
                    split[i, j] = k
    return cost[0, n - 1] if n > 0 else 0, split


@unseen(lambda rng, n: (np.array([1, 2, 5, 10, 20]), n * 5), sizes=(4, 0, 1, 7))
def coin_change_ways_python_int(coins, amount):
    # Counts grow past int64 in a list of Python ints; the array keeps the int64 count.
    ways = [0] * (amount + 1)
    ways[0] = 1
    small = np.zeros(amount + 1, dtype=np.int64)
    small[0] = 1
    for c in coins:
        for v in range(int(c), amount + 1):
            ways[v] += ways[v - c]
            small[v] += small[v - c]
    return ways[amount] * 10**20, small


# --- graphs ----------------------------------------------------------------------------------


def _edges(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    m = n * 2
    return (rng.integers(0, max(n, 1), m), rng.integers(0, max(n, 1), m), n)


@unseen(_edges, sizes=(4, 0, 1, 7))
def union_find_path_compression(src, dst, n):
    parent = np.arange(n)
    rank = np.zeros(n, dtype=np.int8)
    components = n
    for e in range(src.shape[0]):
        a = src[e]
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        b = dst[e]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        if a == b:
            continue
        if rank[a] < rank[b]:
            a, b = b, a
        parent[b] = a
        if rank[a] == rank[b]:
            rank[a] += 1
        components -= 1
    return components, parent, rank


def _dag(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    adj = np.triu(rng.random((n, n)) < 0.4, 1)
    order = rng.permutation(n)
    return (adj[np.ix_(order, order)],)


@unseen(_dag, sizes=(4, 0, 1, 7))
def topological_sort_kahn(adj):
    n = adj.shape[0]
    indeg = adj.sum(axis=0).astype(np.int32)
    order = np.empty(n, dtype=np.int64)
    ready = np.empty(n, dtype=np.int64)
    head = tail = 0
    for v in range(n):
        if indeg[v] == 0:
            ready[tail] = v
            tail += 1
    count = 0
    while head < tail:
        u = ready[head]
        head += 1
        order[count] = u
        count += 1
        for v in range(n):
            if adj[u, v]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready[tail] = v
                    tail += 1
    if count < n:
        return None
    return order


def _weighted(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    w = rng.uniform(1.0, 9.0, (n, n))
    w = np.round(w + w.T, 3)
    np.fill_diagonal(w, 0.0)
    return (w,)


@unseen(_weighted, sizes=(4, 1, 7))
def prim_dense(w):
    n = w.shape[0]
    in_tree = np.zeros(n, dtype=np.bool_)
    key = np.full(n, np.inf)
    parent = np.full(n, -1, dtype=np.int32)
    key[0] = 0.0
    total = 0.0
    for _ in range(n):
        u = -1
        for v in range(n):
            if not in_tree[v] and (u == -1 or key[v] < key[u]):
                u = v
        in_tree[u] = True
        total += key[u]
        for v in range(n):
            if not in_tree[v] and w[u, v] < key[v]:
                key[v] = w[u, v]
                parent[v] = u
    return total, parent


def _edge_list(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    m = n * 3
    return (
        rng.integers(0, n, m).astype(np.int32),
        rng.integers(0, n, m).astype(np.int32),
        rng.uniform(0.0, 10.0, m).astype(np.float32),
        n,
    )


@unseen(_edge_list, sizes=(4, 1, 7))
def kruskal_sorted_edges(u, v, w, n):
    order = np.argsort(w, kind="stable")
    parent = np.arange(n)
    total = np.float32(0.0)
    used = 0
    for e in order:
        a = u[e]
        while parent[a] != a:
            a = parent[a]
        b = v[e]
        while parent[b] != b:
            b = parent[b]
        if a != b:
            parent[a] = b
            total += w[e]
            used += 1
            if used == n - 1:
                break
    return total, used


def _chain(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    nxt = rng.permutation(n * 2).astype(np.int64)
    if n == 2:
        nxt[nxt == 0] = n * 2 + 5  # a pointer past the end: eager raises IndexError
    return (nxt, 0, n * 3)


@unseen(_chain, sizes=(4, 1, 2, 7))
def follow_pointer_chain(nxt, start, max_steps):
    cur = start
    seen = np.zeros(nxt.shape[0], dtype=np.bool_)
    steps = 0
    while steps < max_steps:
        if seen[cur]:
            break
        seen[cur] = True
        cur = nxt[cur]
        steps += 1
    return cur, steps, seen


# --- simulation ------------------------------------------------------------------------------


@unseen(lambda rng, n: (50, 1.0, 0.02, rng.random((n * 4, 2))), sizes=(4, 0, 1, 7))
def gillespie_birth_death(x0, birth, death, uniforms):
    t = 0.0
    x = x0
    times = np.zeros(uniforms.shape[0] + 1)
    counts = np.zeros(uniforms.shape[0] + 1, dtype=np.int32)
    counts[0] = x0
    k = 0
    for s in range(uniforms.shape[0]):
        r1 = birth
        r2 = death * x
        total = r1 + r2
        if total == 0.0:
            break
        t += -np.log(uniforms[s, 0]) / total
        if uniforms[s, 1] * total < r1:
            x += 1
        else:
            x -= 1
        k += 1
        times[k] = t
        counts[k] = x
    return times[: k + 1], counts[: k + 1], x


@unseen(lambda rng, n: (rng.standard_normal(n * 3), rng.random(n * 3), 0.0), sizes=(4, 0, 1, 7))
def metropolis_gaussian_chain(steps, uniforms, x0):
    # Target exp(-x^4 / 4 + x^2): proposals and acceptance draws passed in.
    chain = np.empty(steps.shape[0])
    x = x0
    logp = -(x**4) / 4 + x**2
    accepted = 0
    for i in range(steps.shape[0]):
        y = x + 0.8 * steps[i]
        logq = -(y**4) / 4 + y**2
        if np.log(uniforms[i]) < logq - logp:
            x = y
            logp = logq
            accepted += 1
        chain[i] = x
    return chain, accepted / max(steps.shape[0], 1)


@unseen(lambda rng, n: (rng.standard_normal(n) * 0.1, np.zeros(n), 0.05, 20), sizes=(4, 1, 7))
def velocity_verlet_spring_chain(x, v, dt, steps):
    n = x.shape[0]
    a = np.zeros(n)
    energy = np.zeros(steps)
    for s in range(steps):
        for i in range(n):
            left = x[i - 1] if i > 0 else 0.0
            right = x[i + 1] if i < n - 1 else 0.0
            a[i] = left - 2.0 * x[i] + right
        v += 0.5 * dt * a
        x += dt * v
        for i in range(n):
            left = x[i - 1] if i > 0 else 0.0
            right = x[i + 1] if i < n - 1 else 0.0
            a[i] = left - 2.0 * x[i] + right
        v += 0.5 * dt * a
        energy[s] = 0.5 * (v @ v) + 0.5 * np.sum(np.diff(x) ** 2)
    return x, v, energy


@unseen(
    lambda rng, n: (rng.standard_normal(3).astype(np.float32), np.float32(0.01), n * 5),
    sizes=(4, 0, 1, 7),
)
def rk4_lorenz_float32(state, h, steps):
    sigma = np.float32(10.0)
    rho = np.float32(28.0)
    beta = np.float32(8.0 / 3.0)
    path = np.empty((steps, 3), dtype=np.float32)
    y = state.copy()
    for s in range(steps):
        k = np.empty((4, 3), dtype=np.float32)
        z = y
        for stage in range(4):
            k[stage, 0] = sigma * (z[1] - z[0])
            k[stage, 1] = z[0] * (rho - z[2]) - z[1]
            k[stage, 2] = z[0] * z[1] - beta * z[2]
            if stage < 2:
                z = y + h * np.float32(0.5) * k[stage]
            elif stage == 2:
                z = y + h * k[stage]
        y = y + h / np.float32(6.0) * (k[0] + 2 * k[1] + 2 * k[2] + k[3])
        path[s] = y
    return path


@unseen(
    lambda rng, n: (rng.exponential(1.0, n * 3), rng.exponential(0.8, n * 3)), sizes=(4, 0, 1, 7)
)
def lindley_queue_waits(interarrival, service):
    n = interarrival.shape[0]
    wait = np.zeros(n)
    w = 0.0
    longest = 0
    run = 0
    for i in range(1, n):
        w = max(0.0, w + service[i - 1] - interarrival[i])
        wait[i] = w
        if w > 0.0:
            run += 1
            longest = max(longest, run)
        else:
            run = 0
    return wait, longest


@unseen(
    lambda rng, n: (rng.integers(0, 40, n * 4).astype(np.int16), np.int16(60), 20, 100),
    sizes=(4, 0, 1, 7),
)
def inventory_int16_reorder(demand, start, reorder_at, order_size):
    stock = start
    lost = 0
    orders = 0
    levels = np.empty(demand.shape[0], dtype=np.int16)
    for day in range(demand.shape[0]):
        d = demand[day]
        if d > stock:
            lost += int(d - stock)
            stock = np.int16(0)
        else:
            stock = stock - d
        if stock < reorder_at:
            stock = stock + np.int16(order_size)
            orders += 1
        levels[day] = stock
    return levels, lost, orders, stock


# --- linear algebra --------------------------------------------------------------------------


def _tridiagonal(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (
        rng.uniform(-1.0, 1.0, n),
        rng.uniform(4.0, 5.0, n),
        rng.uniform(-1.0, 1.0, n),
        rng.standard_normal(n),
    )


@unseen(_tridiagonal, sizes=(4, 0, 1, 7))
def thomas_algorithm(lower, diag, upper, rhs):
    n = diag.shape[0]
    c = np.zeros(n)
    d = np.zeros(n)
    if n == 0:
        return d
    c[0] = upper[0] / diag[0]
    d[0] = rhs[0] / diag[0]
    for i in range(1, n):
        denom = diag[i] - lower[i] * c[i - 1]
        c[i] = upper[i] / denom
        d[i] = (rhs[i] - lower[i] * d[i - 1]) / denom
    x = np.zeros(n)
    x[n - 1] = d[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = d[i] - c[i] * x[i + 1]
    return x


def _knots(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    x = np.cumsum(rng.uniform(0.5, 1.5, n + 2))
    return (x, np.sin(x))


@unseen(_knots, sizes=(4, 0, 1, 7))
def natural_cubic_spline(x, y):
    n = x.shape[0] - 1
    h = np.diff(x)
    alpha = np.zeros(n + 1)
    for i in range(1, n):
        alpha[i] = 3.0 / h[i] * (y[i + 1] - y[i]) - 3.0 / h[i - 1] * (y[i] - y[i - 1])
    ell = np.ones(n + 1)
    mu = np.zeros(n + 1)
    z = np.zeros(n + 1)
    for i in range(1, n):
        ell[i] = 2.0 * (x[i + 1] - x[i - 1]) - h[i - 1] * mu[i - 1]
        mu[i] = h[i] / ell[i]
        z[i] = (alpha[i] - h[i - 1] * z[i - 1]) / ell[i]
    c = np.zeros(n + 1)
    b = np.zeros(n)
    d = np.zeros(n)
    for j in range(n - 1, -1, -1):
        c[j] = z[j] - mu[j] * c[j + 1]
        b[j] = (y[j + 1] - y[j]) / h[j] - h[j] * (c[j + 1] + 2.0 * c[j]) / 3.0
        d[j] = (c[j + 1] - c[j]) / (3.0 * h[j])
    return b, c[:n], d


@unseen(lambda rng, n: (np.sin(np.linspace(0.0, np.pi, n + 2)), 0.4, 6), sizes=(4, 1, 7))
def crank_nicolson_heat(u0, r, steps):
    u = u0.copy()
    m = u.shape[0] - 2
    cp = np.empty(m)
    dp = np.empty(m)
    for _ in range(steps):
        rhs = np.empty(m)
        for i in range(m):
            rhs[i] = r / 2 * u[i] + (1 - r) * u[i + 1] + r / 2 * u[i + 2]
        cp[0] = (-r / 2) / (1 + r)
        dp[0] = rhs[0] / (1 + r)
        for i in range(1, m):
            den = (1 + r) + (r / 2) * cp[i - 1]
            cp[i] = (-r / 2) / den
            dp[i] = (rhs[i] + (r / 2) * dp[i - 1]) / den
        u[m] = dp[m - 1]
        for i in range(m - 2, -1, -1):
            u[i + 1] = dp[i] - cp[i] * u[i + 2]
    return u


def _symmetric(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.standard_normal((n, n))
    return (a + a.T,)


@unseen(_symmetric, sizes=(4, 1, 7))
def householder_tridiagonal(A):
    n = A.shape[0]
    T = A.copy()
    for k in range(n - 2):
        x = T[k + 1 :, k].copy()
        alpha = -np.copysign(np.linalg.norm(x), x[0])
        v = x
        v[0] -= alpha
        vv = v @ v
        if vv == 0.0:
            continue
        p = T[k + 1 :, k + 1 :] @ v * (2.0 / vv)
        K = (v @ p) / vv
        q = p - K * v
        T[k + 1 :, k + 1 :] -= np.outer(v, q) + np.outer(q, v)
        T[k + 1 :, k] = 0.0
        T[k, k + 1 :] = 0.0
        T[k + 1, k] = alpha
        T[k, k + 1] = alpha
    return T


def _spd(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.standard_normal((n, n))
    return (a @ a.T + np.diag(np.arange(1.0, n + 1.0) * n), rng.standard_normal(n), 8)


@unseen(_spd, sizes=(4, 1, 7))
def rayleigh_quotient_iteration(A, v0, maxit):
    v = v0 / np.linalg.norm(v0)
    mu = v @ A @ v
    n = A.shape[0]
    history = []
    for _ in range(maxit):
        try:
            w = np.linalg.solve(A - mu * np.eye(n), v)
        except np.linalg.LinAlgError:
            break
        v = w / np.linalg.norm(w)
        new = v @ A @ v
        history.append(new)
        if abs(new - mu) < 1e-12 * abs(new):
            mu = new
            break
        mu = new
    return mu, len(history)


@unseen(lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal(n)), sizes=(4, 1, 7))
def lu_fancy_swaps_and_solve(A, b):
    n = A.shape[0]
    LU = A.copy()
    piv = np.arange(n)
    for k in range(n - 1):
        p = k + np.argmax(np.abs(LU[k:, k]))
        if LU[p, k] == 0.0:
            raise ValueError("singular matrix")
        if p != k:
            LU[[k, p], :] = LU[[p, k], :]
            piv[[k, p]] = piv[[p, k]]
        LU[k + 1 :, k] /= LU[k, k]
        LU[k + 1 :, k + 1 :] -= np.outer(LU[k + 1 :, k], LU[k, k + 1 :])
    y = b[piv].copy()
    for i in range(n):
        y[i] -= LU[i, :i] @ y[:i]
    x = y
    for i in range(n - 1, -1, -1):
        x[i] = (x[i] - LU[i, i + 1 :] @ x[i + 1 :]) / LU[i, i]
    return x, piv


# --- signals and statistics ------------------------------------------------------------------


@unseen(lambda rng, n: (rng.standard_normal(n * 3).astype(np.float32),), sizes=(4, 0, 1, 7))
def savitzky_golay_5_float32(y):
    # Quadratic, window 5: (-3, 12, 17, 12, -3) / 35; the ends are left as they came.
    c = np.array([-3.0, 12.0, 17.0, 12.0, -3.0]) / 35.0
    out = y.copy()
    for i in range(2, y.shape[0] - 2):
        acc = 0.0
        for k in range(5):
            acc += c[k] * y[i + k - 2]
        out[i] = acc
    return out


@unseen(lambda rng, n: (np.cumsum(rng.standard_normal(n * 3)) * 0.1, 0.5, 0.01), sizes=(4, 0, 1, 7))
def kalman_constant_velocity(z, r, q):
    F = np.array([[1.0, 1.0], [0.0, 1.0]])
    Q = q * np.eye(2)
    x = np.zeros(2)
    P = np.eye(2) * 10.0
    out = np.empty((z.shape[0], 2))
    for t in range(z.shape[0]):
        x = F @ x
        P = F @ P @ F.T + Q
        s = P[0, 0] + r
        k = P[:, 0] / s
        innov = z[t] - x[0]
        x = x + k * innov
        P = P - np.outer(k, P[0, :])
        out[t] = x
    return out, P


def _segments(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    flags = rng.random(n * 3) < 0.3
    if n > 0:
        flags[0] = True
    return (rng.integers(-5, 6, n * 3).astype(np.int16), flags)


@unseen(_segments, sizes=(4, 0, 1, 7))
def segmented_prefix_sum_int16(x, starts):
    out = np.empty_like(x)
    totals = []
    run = np.int16(0)
    for i in range(x.shape[0]):
        if starts[i]:
            if i > 0:
                totals.append(int(run))
            run = np.int16(0)
        run += x[i]
        out[i] = run
    if x.shape[0] > 0:
        totals.append(int(run))
    return out, totals


def _coo(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    nnz = n * 4
    return (
        rng.integers(0, n, nnz),
        rng.integers(0, n + 1, nnz),
        rng.standard_normal(nnz),
        n,
        rng.standard_normal(n + 1),
    )


@unseen(_coo, sizes=(4, 1, 7))
def coo_accumulate_and_matvec(rows, cols, vals, n, x):
    dense = np.zeros((n, n + 1))
    y = np.zeros(n)
    for k in range(rows.shape[0]):
        dense[rows[k], cols[k]] += vals[k]
        y[rows[k]] += vals[k] * x[cols[k]]
    return dense, y


@unseen(
    lambda rng, n: (rng.uniform(-0.2, 1.2, n * 5), rng.uniform(-0.2, 1.2, n * 5), 4),
    sizes=(4, 0, 1, 7),
)
def histogram_2d_by_hand_int16(x, y, bins):
    counts = np.zeros((bins, bins), dtype=np.int16)
    outside = 0
    for i in range(x.shape[0]):
        bx = int(x[i] * bins)
        by = int(y[i] * bins)
        if x[i] < 0.0 or y[i] < 0.0 or bx >= bins or by >= bins:
            outside += 1
            continue
        counts[bx, by] += 1
    return counts, outside


@unseen(lambda rng, n: (rng.standard_normal(2 ** (n % 4 + 1)),), sizes=(4, 0, 1, 7))
def bitonic_sorting_network(x):
    a = x.copy()
    n = a.shape[0]
    k = 2
    while k <= n:
        j = k // 2
        while j > 0:
            for i in range(n):
                partner = i ^ j
                if partner > i:
                    ascending = (i & k) == 0
                    if (a[i] > a[partner]) == ascending:
                        a[i], a[partner] = a[partner], a[i]
            j //= 2
        k *= 2
    return a


# --- roots and integrals ---------------------------------------------------------------------


@unseen(lambda rng, n: (float(n), 1.0, 3.0 + n, 50), sizes=(4, 0, 1, 7))
def secant_python_floats(c, x0, x1, maxit):
    # The root of x**2 - c from Python floats; c == 0 with x0 == -x1 divides by zero.
    f0 = x0 * x0 - c
    f1 = x1 * x1 - c
    for it in range(maxit):
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        if abs(x2 - x1) < 1e-13:
            return x2, it
        x0, f0 = x1, f1
        x1 = x2
        f1 = x1 * x1 - c
    return x1, maxit


@unseen(lambda rng, n: (rng.uniform(0.5, 4.0, n * 2),), sizes=(4, 0, 1, 7))
def regula_falsi_per_element(c):
    # cos(x) = x / c on [0, 2]: Illinois variant, at most 60 steps.
    roots = np.empty_like(c)
    for i in range(c.shape[0]):
        a, b = 0.0, 2.0
        fa = np.cos(a) - a / c[i]
        fb = np.cos(b) - b / c[i]
        side = 0
        x = a
        for _ in range(60):
            x = (a * fb - b * fa) / (fb - fa)
            fx = np.cos(x) - x / c[i]
            if fx == 0.0 or abs(b - a) < 1e-14:
                break
            if fx * fb > 0:
                b, fb = x, fx
                if side == -1:
                    fa /= 2
                side = -1
            else:
                a, fa = x, fx
                if side == 1:
                    fb /= 2
                side = 1
        roots[i] = x
    return roots


@unseen(lambda rng, n: (0.0, 1.0 + n * 0.1, min(n, 9) + 1), sizes=(4, 0, 1, 7))
def romberg_exp_sin(a, b, levels):
    R = np.zeros((levels, levels))
    h = b - a
    R[0, 0] = 0.5 * h * (np.exp(np.sin(a)) + np.exp(np.sin(b)))
    for k in range(1, levels):
        h /= 2
        total = 0.0
        for i in range(1, 2**k, 2):
            total += np.exp(np.sin(a + i * h))
        R[k, 0] = 0.5 * R[k - 1, 0] + h * total
        for j in range(1, k + 1):
            R[k, j] = R[k, j - 1] + (R[k, j - 1] - R[k - 1, j - 1]) / (4**j - 1)
    return R[levels - 1, levels - 1], R


# --- cells, bits and bytes -------------------------------------------------------------------


@unseen(lambda rng, n: (n + 1, 12), sizes=(4, 1, 7))
def newton_fractal_complex64(n, maxit):
    xs = np.linspace(-1.5, 1.5, n)
    roots = np.array([1.0, -0.5 + 0.8660254j, -0.5 - 0.8660254j], dtype=np.complex64)
    which = np.full((n, n), -1, dtype=np.int8)
    iters = np.zeros((n, n), dtype=np.int16)
    for i in range(n):
        for j in range(n):
            z = np.complex64(xs[j] + 1j * xs[i])
            for it in range(maxit):
                if z == 0:
                    break
                z = z - (z * z * z - 1) / (3 * z * z)
                for r in range(3):
                    if abs(z - roots[r]) < 1e-3:
                        which[i, j] = r
                        break
                if which[i, j] >= 0:
                    iters[i, j] = it
                    break
    return which, iters


def _cells(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return ((rng.random(n * 3) < 0.5).astype(np.uint8), n + 2)


@unseen(_cells, sizes=(4, 0, 1, 7))
def rule110_uint8(cells, generations):
    n = cells.shape[0]
    cur = cells.copy()
    for _ in range(generations):
        nxt = np.zeros_like(cur)
        for i in range(n):
            left = cur[i - 1] if i > 0 else 0
            right = cur[i + 1] if i < n - 1 else 0
            pattern = (left << 2) | (cur[i] << 1) | right
            nxt[i] = (110 >> pattern) & 1
        cur = nxt
    return cur


@unseen(lambda rng, n: (rng.random((n, n + 1)) < 0.6,), sizes=(4, 0, 1, 7))
def percolation_by_sweeps(open_sites):
    h, w = open_sites.shape
    wet = np.zeros((h, w), dtype=np.bool_)
    for j in range(w):
        wet[0, j] = open_sites[0, j] if h > 0 else False
    changed = True
    sweeps = 0
    while changed:
        changed = False
        sweeps += 1
        for i in range(h):
            for j in range(w):
                if wet[i, j] or not open_sites[i, j]:
                    continue
                if (
                    (i > 0 and wet[i - 1, j])
                    or (i < h - 1 and wet[i + 1, j])
                    or (j > 0 and wet[i, j - 1])
                    or (j < w - 1 and wet[i, j + 1])
                ):
                    wet[i, j] = True
                    changed = True
    return wet, bool(wet[h - 1].any()) if h > 0 else False, sweeps


_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)


def _base64_text(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    text = _B64[rng.integers(0, 64, n * 4)].copy()
    if n == 7:
        text[5] = ord("*")  # not base64: eager raises ValueError
    return (text,)


@unseen(_base64_text, sizes=(4, 0, 1, 7))
def base64_decode_uint8(text):
    table = np.full(256, -1, dtype=np.int16)
    for i in range(64):
        table[_B64[i]] = i
    out = np.empty(text.shape[0] // 4 * 3, dtype=np.uint8)
    for g in range(text.shape[0] // 4):
        word = 0
        for k in range(4):
            v = table[text[4 * g + k]]
            if v < 0:
                raise ValueError(f"invalid character at {4 * g + k}")
            word = (word << 6) | int(v)
        out[3 * g] = (word >> 16) & 255
        out[3 * g + 1] = (word >> 8) & 255
        out[3 * g + 2] = word & 255
    return out


@unseen(lambda rng, n: (rng.integers(0, 256, n * 4).astype(np.uint8),), sizes=(4, 0, 1, 7))
def crc8_uint8(data):
    crc = np.uint8(0)
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 0x80:  # noqa: SIM108 - as users write it
                crc = (crc << np.uint8(1)) ^ np.uint8(0x07)
            else:
                crc = crc << np.uint8(1)
    return crc


@unseen(lambda rng, n: (rng.integers(0, 256, n * 5).astype(np.uint8),), sizes=(4, 0, 1, 7))
def fletcher16(data):
    s1 = 0
    s2 = 0
    for i in range(data.shape[0]):
        s1 = (s1 + data[i]) % 255
        s2 = (s2 + s1) % 255
    return (s2 << 8) | s1


@unseen(lambda rng, n: (np.uint32(2463534242 + n), n * 3), sizes=(4, 0, 1, 7))
def xorshift32_uint32(state, count):
    out = np.empty(count, dtype=np.uint32)
    x = state
    for i in range(count):
        x ^= x << np.uint32(13)
        x ^= x >> np.uint32(17)
        x ^= x << np.uint32(5)
        out[i] = x
    return out, x


@unseen(lambda rng, n: (rng.integers(0, 10, (n, 16)).astype(np.int8),), sizes=(4, 0, 1, 7))
def luhn_check_int8(digits):
    ok = np.zeros(digits.shape[0], dtype=np.bool_)
    sums = np.zeros(digits.shape[0], dtype=np.int8)
    for r in range(digits.shape[0]):
        total = 0
        for k in range(digits.shape[1]):
            d = digits[r, digits.shape[1] - 1 - k]
            if k % 2 == 1:
                d = d * 2
                if d > 9:
                    d -= 9
            total += d
        sums[r] = total % 10
        ok[r] = total % 10 == 0
    return ok, sums


@unseen(
    lambda rng, n: (
        rng.integers(0, 10, n * 3).astype(np.uint8),
        rng.integers(0, 10, n * 2).astype(np.uint8),
    ),
    sizes=(4, 0, 1, 7),
)
def schoolbook_multiply_uint8_digits(a, b):
    # Little-endian decimal digits; the product's digits in uint8 and as a Python int.
    out = np.zeros(a.shape[0] + b.shape[0], dtype=np.uint8)
    for i in range(a.shape[0]):
        carry = 0
        for j in range(b.shape[0]):
            t = int(out[i + j]) + int(a[i]) * int(b[j]) + carry
            out[i + j] = t % 10
            carry = t // 10
        k = i + b.shape[0]
        while carry:
            t = int(out[k]) + carry
            out[k] = t % 10
            carry = t // 10
            k += 1
    value = 0
    for d in out[::-1]:
        value = value * 10 + int(d)
    return out, value


@unseen(lambda rng, n: (rng.integers(1, 6, n * 6),), sizes=(4, 0, 1, 7))
def factorials_python_int(x):
    # Products of Python ints past int64, and their digit sums.
    prod = 1
    digit_sums = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        prod *= int(x[i]) * 1000
        s = 0
        p = prod
        while p > 0:
            s += p % 10
            p //= 10
        digit_sums[i] = s
    return prod, digit_sums


def _ascii(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    words = rng.choice(np.frombuffer(b"abcXYZ  .,", np.uint8), n * 6)
    return (words.astype(np.uint8), 3)


@unseen(_ascii, sizes=(4, 0, 1, 7))
def ascii_caesar_and_words(text, shift):
    out = text.copy()
    words = 0
    in_word = False
    upper = 0
    for i in range(text.shape[0]):
        c = text[i]
        if 97 <= c <= 122:
            out[i] = (c - 97 + shift) % 26 + 97
        elif 65 <= c <= 90:
            out[i] = (c - 65 + shift) % 26 + 65
            upper += 1
        letter = (97 <= c <= 122) or (65 <= c <= 90)
        if letter and not in_word:
            words += 1
        in_word = letter
    return out, words, upper


# --- raises, warnings, in-place writes and views ---------------------------------------------


def _zero_rows(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.uniform(0.0, 1.0, (n, 4))
    if n > 1:
        a[1] = 0.0  # 0 / 0: NumPy's invalid-value warning
    return (a,)


@unseen(_zero_rows, sizes=(4, 0, 1, 7))
def normalize_rows_in_place_warns(P):
    sums = np.zeros(P.shape[0])
    for i in range(P.shape[0]):
        s = P[i].sum()
        P[i] = P[i] / s
        sums[i] = s
    return sums, P[:, 0]


@unseen(lambda rng, n: (rng.standard_normal(n * 2),), sizes=(4, 0, 1, 7))
def clip_in_place_return_halves(x):
    n = x.shape[0]
    clipped = 0
    for i in range(n):
        if x[i] > 1.0:
            x[i] = 1.0
            clipped += 1
        elif x[i] < -1.0:
            x[i] = -1.0
            clipped += 1
    half = n // 2
    return x[:half], x[half:][::-1], clipped


@unseen(lambda rng, n: (rng.integers(-3, 4, n * 2).astype(np.int64), 10), sizes=(4, 0, 1, 7))
def mean_of_python_ratios(counts, total):
    # Python-int division: a zero count raises ZeroDivisionError from the user's line.
    acc = 0.0
    for i in range(counts.shape[0]):
        c = int(counts[i])
        if c < 0:
            continue
        acc += total / c
    return acc


@unseen(
    lambda rng, n: (rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32), 0.25), sizes=(4, 0, 1, 7)
)
def float32_rows_with_python_and_numpy_scalars(pts, gain):
    out = np.empty(pts.shape[0], dtype=np.float32)
    best = -1.1  # no float32 holds it: where no row beats it, eager returns it as it is
    best_row = -1
    for i in range(pts.shape[0]):
        r = pts[i, 0] * pts[i, 0] + pts[i, 1] * pts[i, 1] + pts[i, 2] * pts[i, 2]
        v = gain * r + np.float32(1.5) * pts[i, 0] - 2
        out[i] = v
        if v > best:
            best = v
            best_row = i
    return out, best, best_row


@unseen(lambda rng, n: (rng.uniform(-4.0, 1.0, n).astype(np.float32),), sizes=(4, 0, 1, 7))
def running_max_float32_from_minus_one(x):
    # The known gap: -1.0 is exact in float32, so C keeps the loop, and hands back
    # np.float32(-1.0) where no element beats it; eager gives the Python float.
    best = -1.0
    for i in range(x.shape[0]):
        if x[i] > best:
            best = x[i]
    return best


@unseen(lambda rng, n: (rng.integers(-100, 100, (n, n + 1)).astype(np.int8),), sizes=(4, 0, 1, 7))
def int8_matrix_row_scan_with_break(M):
    # First row whose running int8 sum (wrapping, as NumPy does) turns negative.
    row = -1
    sums = np.zeros(M.shape[0], dtype=np.int8)
    for i in range(M.shape[0]):
        acc = np.zeros((), dtype=np.int8)
        for j in range(M.shape[1]):
            acc = acc + M[i, j : j + 1][0:1].sum(dtype=np.int8)
        sums[i] = acc
        if acc < 0:
            row = i
            break
    return row, sums


@unseen(lambda rng, n: (rng.random((n + 1, n + 2)) < 0.5,), sizes=(4, 0, 1, 7))
def bool_grid_row_parity(grid):
    parity = np.zeros(grid.shape[0], dtype=np.bool_)
    flips = 0
    for i in range(grid.shape[0]):
        p = False
        for j in range(grid.shape[1]):
            if grid[i, j]:
                p = not p
        parity[i] = p
        if p:
            grid[i, 0] = not grid[i, 0]
            flips += 1
    return parity, flips, grid


@unseen(lambda rng, n: (rng.standard_normal(n * 4), 0.3), sizes=(4, 0, 1, 7))
def smooth_in_place(x, alpha):
    # Exponential smoothing written back into the input (a float recurrence).
    for i in range(1, x.shape[0]):
        x[i] = alpha * x[i] + (1.0 - alpha) * x[i - 1]
    return x
