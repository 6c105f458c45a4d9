"""Unseen programs, the fifth set (round 2's eighteenth session): fifty plain-NumPy loop
programs from domains the earlier sets touched little, written as users write them. They
register in `benchmarks.unseen_loop_programs.PROGRAMS`, so ``python -m
benchmarks.unseen_loops --only 'sos_cascade*'`` checks and times them.

Signals (a cascade of float32 biquads in transposed direct form II, a median filter of 5
by insertion, linear resampling by hand, boxcar decimation of int16 samples, a zero-crossing
counter with hysteresis, an attack/release envelope follower, a FIR filter on a circular
delay line, a DC blocker written into its input, a complex64 phasor oscillator); finance
(Asian and knock-out barrier options on given paths, maximum drawdown with its duration,
EWMA with resets, FIFO trade matching, a loan schedule on Python floats); geometry (the
monotone-chain convex hull, point in polygon by ray casting, shoelace area and centroid,
the closest pair, segment intersections); images (flood fill with an explicit stack, two-
pass labelling with union-find, histogram equalisation, bilinear resizing in float32, a
3x3 median on uint8, Sobel in int16, Otsu's threshold); numerical methods (Brent's root,
adaptive Simpson with a work list, RKF45 with step control, a CSR transpose product, power
iteration in float32 with an early exit, Jacobi-preconditioned CG with `for`/`else`, secant
per element with `while`/`else`, SOR until a tolerance, golden-section search, a float32
fixed point); bytes (base64 encoding, UTF-8 validation, Adler-32, Fletcher-32 on uint16
words, hex encoding, run-length decoding); combinatorics (next permutation in place, Gray
codes on uint32, k-combinations in lexicographic order, Pascal's triangle modulo a prime);
and programs that raise (IndexError, ZeroDivisionError, ValueError from the user's line)
or warn (int16 and uint8 scalar overflow, float division by zero).

`integration_tests/test_unseen_fifth_set.py` runs them against NumPy eager.

    >>> import numpy as np
    >>> next_permutation_in_place(np.array([1, 2, 3]))
    (True, array([1, 3, 2]))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .unseen_loop_programs import unseen

# --- signals ---------------------------------------------------------------------------------


def _sos(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    sos = np.array(
        [[0.2, 0.4, 0.2, 1.0, -0.5, 0.25], [0.3, -0.1, 0.05, 1.0, 0.1, 0.2]], dtype=np.float32
    )
    return (rng.standard_normal(n * 4).astype(np.float32), sos)


@unseen(_sos, sizes=(4, 0, 1, 7))
def sos_cascade_df2t_float32(x, sos):
    y = x.copy()
    for s in range(sos.shape[0]):
        b0, b1, b2, a0, a1, a2 = sos[s]
        z1 = np.float32(0.0)
        z2 = np.float32(0.0)
        for i in range(y.shape[0]):
            xi = y[i]
            yi = b0 * xi + z1
            z1 = b1 * xi - a1 * yi + z2
            z2 = b2 * xi - a2 * yi
            y[i] = yi / a0
    return y


@unseen(lambda rng, n: (rng.standard_normal(n * 3),), sizes=(4, 0, 1, 7))
def median_filter_5_insertion(x):
    n = x.shape[0]
    out = np.empty(n)
    window = np.empty(5)
    for i in range(n):
        m = 0
        for k in range(i - 2, i + 3):
            if 0 <= k < n:
                v = x[k]
                j = m
                while j > 0 and window[j - 1] > v:
                    window[j] = window[j - 1]
                    j -= 1
                window[j] = v
                m += 1
        out[i] = window[m // 2] if m % 2 == 1 else 0.5 * (window[m // 2 - 1] + window[m // 2])
    return out


@unseen(lambda rng, n: (rng.standard_normal(n * 2 + 2), n * 3 + 2), sizes=(4, 0, 1, 7))
def linear_resample_by_hand(x, m):
    n = x.shape[0]
    out = np.zeros(m)
    step = (n - 1) / (m - 1)
    j = 0
    for i in range(m):
        t = i * step
        while j + 1 < n - 1 and j + 1 <= t:
            j += 1
        frac = t - j
        out[i] = x[j] * (1.0 - frac) + x[min(j + 1, n - 1)] * frac
    return out


@unseen(lambda rng, n: (rng.integers(-900, 900, n * 8).astype(np.int16), 4), sizes=(4, 0, 1, 7))
def boxcar_decimate_int16(x, factor):
    blocks = x.shape[0] // factor
    out = np.empty(blocks, dtype=np.int16)
    means = np.empty(blocks)
    for b in range(blocks):
        acc = 0
        for k in range(factor):
            acc += int(x[b * factor + k])
        out[b] = acc // factor
        means[b] = acc / factor
    return out, means


@unseen(lambda rng, n: (np.sin(np.arange(n * 6) * 0.7) + 0.3 * rng.standard_normal(n * 6), 0.2))
def zero_crossings_with_hysteresis(x, band):
    state = 0
    crossings = 0
    where = []
    for i, v in enumerate(x):
        if state <= 0 and v > band:
            if state < 0:
                crossings += 1
                where.append(i)
            state = 1
        elif state >= 0 and v < -band:
            if state > 0:
                crossings += 1
                where.append(i)
            state = -1
    return crossings, np.array(where, dtype=np.int64)


@unseen(lambda rng, n: (rng.standard_normal(n * 5), 0.5, 0.05), sizes=(4, 0, 1, 7))
def envelope_attack_release(x, attack, release):
    env = np.empty_like(x)
    level = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        coeff = attack if a > level else release
        level = level + coeff * (a - level)
        env[i] = level
    return env, level


@unseen(lambda rng, n: (rng.standard_normal(n * 4), rng.standard_normal(5)), sizes=(4, 0, 1, 7))
def fir_circular_delay_line(x, taps):
    m = taps.shape[0]
    line = np.zeros(m)
    pos = 0
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        line[pos] = x[i]
        acc = 0.0
        k = pos
        for t in range(m):
            acc += taps[t] * line[k]
            k -= 1
            if k < 0:
                k = m - 1
        y[i] = acc
        pos = (pos + 1) % m
    return y, line


@unseen(lambda rng, n: (rng.standard_normal(n * 4).astype(np.float32) + 3.0,), sizes=(4, 0, 1, 7))
def dc_blocker_in_place_float32(x):
    r = np.float32(0.995)
    prev_x = np.float32(0.0)
    prev_y = np.float32(0.0)
    for i in range(x.shape[0]):
        cur = x[i]
        prev_y = cur - prev_x + r * prev_y
        prev_x = cur
        x[i] = prev_y
    return prev_y


@unseen(lambda rng, n: (n * 4, np.complex64(0.9 + 0.1j)), sizes=(4, 0, 1, 7))
def phasor_oscillator_complex64(count, start):
    rot = np.complex64(np.exp(0.3j))
    z = start
    out = np.empty(count, dtype=np.complex64)
    energy = 0.0
    for i in range(count):
        out[i] = z
        energy += abs(z) ** 2
        z = z * rot
        if i % 8 == 7:
            z = z / abs(z)
    return out, z, energy


# --- finance ---------------------------------------------------------------------------------


def _paths(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal((n * 2, 12)), 100.0, 100.0, 0.02, 0.3, 1.0)


@unseen(_paths, sizes=(4, 0, 1, 7))
def asian_call_on_paths(z, spot, strike, rate, vol, maturity):
    n_paths, steps = z.shape
    dt = maturity / steps
    drift = (rate - 0.5 * vol * vol) * dt
    shock = vol * math.sqrt(dt)
    payoffs = np.zeros(n_paths)
    for p in range(n_paths):
        s = spot
        total = 0.0
        for t in range(steps):
            s = s * math.exp(drift + shock * z[p, t])
            total += s
        payoffs[p] = max(total / steps - strike, 0.0)
    price = math.exp(-rate * maturity) * payoffs.mean() if n_paths else 0.0
    return price, payoffs


@unseen(_paths, sizes=(4, 0, 1, 7))
def barrier_knock_out_call(z, spot, strike, rate, vol, maturity):
    barrier = 1.15 * spot
    n_paths, steps = z.shape
    dt = maturity / steps
    knocked = np.zeros(n_paths, dtype=np.bool_)
    payoff = np.zeros(n_paths)
    for p in range(n_paths):
        s = spot
        for t in range(steps):
            s *= np.exp((rate - 0.5 * vol**2) * dt + vol * np.sqrt(dt) * z[p, t])
            if s >= barrier:
                knocked[p] = True
                break
        else:
            payoff[p] = max(s - strike, 0.0)
    return payoff, knocked, int(knocked.sum())


@unseen(lambda rng, n: (100.0 * np.cumprod(1.0 + 0.02 * rng.standard_normal(n * 5)),))
def max_drawdown_with_duration(prices):
    peak = prices[0]
    peak_at = 0
    worst = 0.0
    start = end = 0
    for i in range(1, prices.shape[0]):
        if prices[i] > peak:
            peak = prices[i]
            peak_at = i
        dd = (peak - prices[i]) / peak
        if dd > worst:
            worst = dd
            start, end = peak_at, i
    return worst, start, end


def _flags(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal(n * 4), rng.random(n * 4) < 0.15, 0.2)


@unseen(_flags, sizes=(4, 0, 1, 7))
def ewma_with_resets(x, reset, alpha):
    out = np.empty_like(x)
    s = None
    resets = 0
    for i, (v, r) in enumerate(zip(x, reset)):  # noqa: B905 - as users write it
        if s is None or r:
            s = v
            resets += 1
        else:
            s = alpha * v + (1 - alpha) * s
        out[i] = s
    return out, resets


def _trades(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    qty = rng.integers(1, 5, n * 3).astype(np.int32)
    side = np.where(np.arange(n * 3) % 3 == 2, -1, 1).astype(np.int32)
    return (qty * side, np.round(rng.uniform(90, 110, n * 3), 2))


@unseen(_trades, sizes=(4, 0, 1, 7))
def fifo_trade_pnl(qty, price):
    lots_q = np.zeros(qty.shape[0], dtype=np.int32)
    lots_p = np.zeros(qty.shape[0])
    head = tail = 0
    pnl = 0.0
    for q, p in zip(qty, price):  # noqa: B905 - as users write it
        if q > 0:
            lots_q[tail] = q
            lots_p[tail] = p
            tail += 1
            continue
        need = -q
        while need > 0 and head < tail:
            take = min(need, lots_q[head])
            pnl += take * (p - lots_p[head])
            lots_q[head] -= take
            need -= take
            if lots_q[head] == 0:
                head += 1
    return pnl, int(lots_q[head:tail].sum())


@unseen(lambda rng, n: (1000.0 * (n + 1), 0.05 / 12, 25.0 * (n + 1) + 3.0), sizes=(4, 0, 1, 7))
def loan_schedule_python_floats(principal, monthly_rate, payment):
    balance = principal
    months = 0
    interest_paid = 0.0
    while balance > 0:
        interest = round(balance * monthly_rate, 2)
        interest_paid += interest
        balance = balance + interest - payment
        months += 1
        if months > 600:
            break
    return months, round(interest_paid, 2), balance


# --- geometry --------------------------------------------------------------------------------


@unseen(lambda rng, n: (rng.integers(0, 20, (n * 3, 2)).astype(np.float64),), sizes=(4, 0, 1, 7))
def convex_hull_monotone_chain(pts):
    order = np.lexsort((pts[:, 1], pts[:, 0]))
    p = pts[order]
    n = p.shape[0]
    hull = np.empty((2 * n, 2))
    k = 0
    for i in range(n):
        while (
            k >= 2
            and (hull[k - 1, 0] - hull[k - 2, 0]) * (p[i, 1] - hull[k - 2, 1])
            - (hull[k - 1, 1] - hull[k - 2, 1]) * (p[i, 0] - hull[k - 2, 0])
            <= 0
        ):
            k -= 1
        hull[k] = p[i]
        k += 1
    lower = k + 1
    for i in range(n - 2, -1, -1):
        while (
            k >= lower
            and (hull[k - 1, 0] - hull[k - 2, 0]) * (p[i, 1] - hull[k - 2, 1])
            - (hull[k - 1, 1] - hull[k - 2, 1]) * (p[i, 0] - hull[k - 2, 0])
            <= 0
        ):
            k -= 1
        hull[k] = p[i]
        k += 1
    return hull[: max(k - 1, 0)]


def _polygon(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    angles = np.sort(rng.uniform(0, 2 * np.pi, n + 3))
    radius = rng.uniform(0.5, 1.0, n + 3)
    poly = np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)
    return (poly, rng.uniform(-1, 1, (n * 3, 2)))


@unseen(_polygon, sizes=(4, 0, 1, 7))
def point_in_polygon_ray_casting(poly, points):
    inside = np.zeros(points.shape[0], dtype=np.bool_)
    m = poly.shape[0]
    for k, (px, py) in enumerate(points):
        c = False
        j = m - 1
        for i in range(m):
            xi, yi = poly[i]
            xj, yj = poly[j]
            if (yi > py) != (yj > py) and px < (xj - xi) * (py - yi) / (yj - yi) + xi:
                c = not c
            j = i
        inside[k] = c
    return inside


@unseen(_polygon, sizes=(4, 0, 1, 7))
def shoelace_area_and_centroid(poly, points):
    area = 0.0
    cx = cy = 0.0
    m = poly.shape[0]
    for i in range(m):
        x0, y0 = poly[i]
        x1, y1 = poly[(i + 1) % m]
        cross = x0 * y1 - x1 * y0
        area += cross
        cx += (x0 + x1) * cross
        cy += (y0 + y1) * cross
    area *= 0.5
    return area, cx / (6 * area), cy / (6 * area), points.shape[0]


@unseen(lambda rng, n: (rng.uniform(0, 10, (n * 3 + 2, 2)),), sizes=(4, 0, 1, 7))
def closest_pair_brute_force(p):
    best = np.inf
    bi = bj = -1
    for i in range(p.shape[0]):
        for j in range(i + 1, p.shape[0]):
            dx = p[i, 0] - p[j, 0]
            if abs(dx) >= best:
                continue
            d = math.sqrt(dx * dx + (p[i, 1] - p[j, 1]) ** 2)
            if d < best:
                best, bi, bj = d, i, j
    return best, bi, bj


@unseen(lambda rng, n: (rng.integers(0, 10, (n * 2, 4)).astype(np.int32),), sizes=(4, 0, 1, 7))
def segment_intersections_int32(seg):
    count = 0
    hits = np.zeros(seg.shape[0], dtype=np.int32)
    for i in range(seg.shape[0]):
        ax, ay, bx, by = seg[i]
        for j in range(i + 1, seg.shape[0]):
            cx, cy, dx, dy = seg[j]
            d1 = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
            d2 = (bx - ax) * (dy - ay) - (by - ay) * (dx - ax)
            d3 = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx)
            d4 = (dx - cx) * (by - cy) - (dy - cy) * (bx - cx)
            if d1 * d2 < 0 and d3 * d4 < 0:
                count += 1
                hits[i] += 1
                hits[j] += 1
    return count, hits


# --- images ----------------------------------------------------------------------------------


def _blobs(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    img = (rng.random((n + 2, n + 3)) < 0.55).astype(np.uint8)
    return (img, 0, 0, np.uint8(7))


@unseen(_blobs, sizes=(4, 0, 1, 7))
def flood_fill_explicit_stack(img, r0, c0, color):
    h, w = img.shape
    if h == 0 or w == 0:
        return 0
    target = img[r0, c0]
    if target == color:
        return 0
    stack = np.empty((h * w * 4 + 1, 2), dtype=np.int32)
    stack[0] = r0, c0
    top = 1
    filled = 0
    while top > 0:
        top -= 1
        r, c = stack[top]
        if img[r, c] != target:
            continue
        img[r, c] = color
        filled += 1
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < h and 0 <= cc < w and img[rr, cc] == target:
                stack[top] = rr, cc
                top += 1
    return filled


@unseen(lambda rng, n: (rng.random((n + 1, n + 2)) < 0.5,), sizes=(4, 0, 1, 7))
def two_pass_labels_union_find(mask):
    h, w = mask.shape
    labels = np.zeros((h, w), dtype=np.int32)
    parent = np.zeros(h * w + 1, dtype=np.int32)
    nxt = 1
    for r in range(h):
        for c in range(w):
            if not mask[r, c]:
                continue
            up = labels[r - 1, c] if r > 0 else 0
            left = labels[r, c - 1] if c > 0 else 0
            if up == 0 and left == 0:
                parent[nxt] = nxt
                labels[r, c] = nxt
                nxt += 1
            elif up and left:
                a, b = up, left
                while parent[a] != a:
                    a = parent[a]
                while parent[b] != b:
                    b = parent[b]
                labels[r, c] = min(a, b)
                parent[max(a, b)] = min(a, b)
            else:
                labels[r, c] = max(up, left)
    count = 0
    for r in range(h):
        for c in range(w):
            v = labels[r, c]
            if v:
                while parent[v] != v:
                    v = parent[v]
                labels[r, c] = v
    for k in range(1, nxt):
        if parent[k] == k:
            count += 1
    return labels, count


@unseen(lambda rng, n: (rng.integers(40, 120, (n + 1, n + 2)).astype(np.uint8),), sizes=(4, 1, 7))
def histogram_equalization_uint8(img):
    hist = np.zeros(256, dtype=np.int64)
    for v in img.flat:
        hist[v] += 1
    cdf = np.zeros(256, dtype=np.int64)
    running = 0
    for i in range(256):
        running += hist[i]
        cdf[i] = running
    cdf_min = 0
    for i in range(256):
        if cdf[i] > 0:
            cdf_min = cdf[i]
            break
    total = img.size
    lut = np.zeros(256, dtype=np.uint8)
    for i in range(256):
        if total > cdf_min:
            lut[i] = round((cdf[i] - cdf_min) * 255 / (total - cdf_min)) if cdf[i] > 0 else 0
    out = np.empty_like(img)
    for r in range(img.shape[0]):
        for c in range(img.shape[1]):
            out[r, c] = lut[img[r, c]]
    return out, lut


@unseen(lambda rng, n: (rng.random((n + 2, n + 3)).astype(np.float32), n * 2 + 1, n + 4))
def bilinear_resize_float32(img, out_h, out_w):
    h, w = img.shape
    out = np.zeros((out_h, out_w), dtype=np.float32)
    sy = (h - 1) / max(out_h - 1, 1)
    sx = (w - 1) / max(out_w - 1, 1)
    for i in range(out_h):
        y = i * sy
        y0 = int(y)
        y1 = min(y0 + 1, h - 1)
        fy = y - y0
        for j in range(out_w):
            x = j * sx
            x0 = int(x)
            x1 = min(x0 + 1, w - 1)
            fx = x - x0
            top = img[y0, x0] * (1 - fx) + img[y0, x1] * fx
            bottom = img[y1, x0] * (1 - fx) + img[y1, x1] * fx
            out[i, j] = top * (1 - fy) + bottom * fy
    return out


@unseen(lambda rng, n: (rng.integers(0, 256, (n + 2, n + 3)).astype(np.uint8),), sizes=(4, 0, 1, 7))
def median_3x3_uint8(img):
    h, w = img.shape
    out = img.copy()
    win = np.zeros(9, dtype=np.uint8)
    for r in range(1, h - 1):
        for c in range(1, w - 1):
            k = 0
            for dr in range(-1, 2):
                for dc in range(-1, 2):
                    win[k] = img[r + dr, c + dc]
                    k += 1
            for a in range(1, 9):
                v = win[a]
                b = a - 1
                while b >= 0 and win[b] > v:
                    win[b + 1] = win[b]
                    b -= 1
                win[b + 1] = v
            out[r, c] = win[4]
    return out


@unseen(lambda rng, n: (rng.integers(0, 256, (n + 2, n + 2)).astype(np.int16),), sizes=(4, 0, 1, 7))
def sobel_magnitude_int16(img):
    h, w = img.shape
    gx = np.zeros((h, w), dtype=np.int16)
    gy = np.zeros((h, w), dtype=np.int16)
    mag = np.zeros((h, w))
    for r in range(1, h - 1):
        for c in range(1, w - 1):
            sx = (
                img[r - 1, c + 1]
                + 2 * img[r, c + 1]
                + img[r + 1, c + 1]
                - img[r - 1, c - 1]
                - 2 * img[r, c - 1]
                - img[r + 1, c - 1]
            )
            sy = (
                img[r + 1, c - 1]
                + 2 * img[r + 1, c]
                + img[r + 1, c + 1]
                - img[r - 1, c - 1]
                - 2 * img[r - 1, c]
                - img[r - 1, c + 1]
            )
            gx[r, c] = sx
            gy[r, c] = sy
            mag[r, c] = math.hypot(sx, sy)
    return gx, gy, mag


@unseen(lambda rng, n: (rng.integers(0, 256, (n + 1) * 9).astype(np.uint8),), sizes=(4, 1, 7))
def otsu_threshold(pixels):
    hist = np.bincount(pixels, minlength=256).astype(np.float64)
    total = pixels.shape[0]
    sum_all = 0.0
    for t in range(256):
        sum_all += t * hist[t]
    w_b = 0.0
    sum_b = 0.0
    best = -1.0
    threshold = 0
    for t in range(256):
        w_b += hist[t]
        if w_b == 0:
            continue
        w_f = total - w_b
        if w_f == 0:
            break
        sum_b += t * hist[t]
        m_b = sum_b / w_b
        m_f = (sum_all - sum_b) / w_f
        between = w_b * w_f * (m_b - m_f) ** 2
        if between > best:
            best = between
            threshold = t
    return threshold, best


# --- numerical methods -----------------------------------------------------------------------


@unseen(
    lambda rng, n: (np.array([-2.0 - 0.1 * n, 0.0, 1.0, 1.0]), 0.0, 3.0, 1e-12), sizes=(4, 1, 7)
)
def brent_root_polynomial(coeffs, a, b, tol):
    def f(x):
        acc = 0.0
        for c in coeffs[::-1]:
            acc = acc * x + c
        return acc

    fa, fb = f(a), f(b)
    if fa * fb > 0:
        raise ValueError("root not bracketed")
    if abs(fa) < abs(fb):
        a, b, fa, fb = b, a, fb, fa
    c, fc = a, fa
    mflag = True
    d = 0.0
    for it in range(100):
        if fb == 0 or abs(b - a) < tol:
            return b, it
        if fa != fc and fb != fc:
            s = (
                a * fb * fc / ((fa - fb) * (fa - fc))
                + b * fa * fc / ((fb - fa) * (fb - fc))
                + c * fa * fb / ((fc - fa) * (fc - fb))
            )
        else:
            s = b - fb * (b - a) / (fb - fa)
        lo, hi = sorted(((3 * a + b) / 4, b))
        if (
            not lo < s < hi
            or (mflag and abs(s - b) >= abs(b - c) / 2)
            or (not mflag and abs(s - b) >= abs(c - d) / 2)
        ):
            s = (a + b) / 2
            mflag = True
        else:
            mflag = False
        fs = f(s)
        d, c, fc = c, b, fb
        if fa * fs < 0:
            b, fb = s, fs
        else:
            a, fa = s, fs
        if abs(fa) < abs(fb):
            a, b, fa, fb = b, a, fb, fa
    return b, 100


@unseen(
    lambda rng, n: (np.array([1.0, -0.5 * n, 0.25, 2.0]), 0.0, 2.0 + n, 1e-8), sizes=(4, 0, 1, 7)
)
def adaptive_simpson_work_list(coeffs, a, b, eps):
    def f(x):
        return math.sin(coeffs[0] * x) + coeffs[1] * x * x * 0.01 + coeffs[2] * math.exp(-x)

    total = 0.0
    evaluations = 3
    work = [(a, b, f(a), f((a + b) / 2), f(b), eps, 0)]
    while work:
        lo, hi, flo, fmid, fhi, tol, depth = work.pop()
        mid = (lo + hi) / 2
        fl = f((lo + mid) / 2)
        fr = f((mid + hi) / 2)
        evaluations += 2
        whole = (hi - lo) / 6 * (flo + 4 * fmid + fhi)
        left = (mid - lo) / 6 * (flo + 4 * fl + fmid)
        right = (hi - mid) / 6 * (fmid + 4 * fr + fhi)
        if depth >= 30 or abs(left + right - whole) <= 15 * tol:
            total += left + right + (left + right - whole) / 15
        else:
            work.append((lo, mid, flo, fl, fmid, tol / 2, depth + 1))
            work.append((mid, hi, fmid, fr, fhi, tol / 2, depth + 1))
    return total, evaluations


@unseen(lambda rng, n: (np.array([1.0, 0.0]), 0.5 + n, 1e-6), sizes=(4, 0, 1, 7))
def rkf45_step_control(y0, t_end, tol):
    def rhs(t, y):
        return np.array([y[1], -y[0] - 0.1 * y[1] + math.cos(t)])

    t = 0.0
    y = y0.copy()
    h = 0.1
    accepted = rejected = 0
    while t < t_end:
        h = min(h, t_end - t)
        k1 = h * rhs(t, y)
        k2 = h * rhs(t + h / 4, y + k1 / 4)
        k3 = h * rhs(t + 3 * h / 8, y + 3 * k1 / 32 + 9 * k2 / 32)
        k4 = h * rhs(t + 12 * h / 13, y + 1932 * k1 / 2197 - 7200 * k2 / 2197 + 7296 * k3 / 2197)
        k5 = h * rhs(t + h, y + 439 * k1 / 216 - 8 * k2 + 3680 * k3 / 513 - 845 * k4 / 4104)
        k6 = h * rhs(
            t + h / 2,
            y - 8 * k1 / 27 + 2 * k2 - 3544 * k3 / 2565 + 1859 * k4 / 4104 - 11 * k5 / 40,
        )
        y4 = y + 25 * k1 / 216 + 1408 * k3 / 2565 + 2197 * k4 / 4104 - k5 / 5
        y5 = y + 16 * k1 / 135 + 6656 * k3 / 12825 + 28561 * k4 / 56430 - 9 * k5 / 50 + 2 * k6 / 55
        err = np.max(np.abs(y5 - y4))
        if err <= tol:
            t += h
            y = y4
            accepted += 1
        else:
            rejected += 1
        h = 0.9 * h * (tol / err) ** 0.2 if err > 0 else 2 * h
    return y, accepted, rejected


def _csr(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    dense = np.where(rng.random((n + 1, n + 2)) < 0.4, rng.standard_normal((n + 1, n + 2)), 0.0)
    indptr = np.zeros(n + 2, dtype=np.int32)
    indptr[1:] = np.cumsum((dense != 0).sum(axis=1))
    rows, cols = np.nonzero(dense)
    return (indptr, cols.astype(np.int32), dense[rows, cols], rng.standard_normal(n + 1), n + 2)


@unseen(_csr, sizes=(4, 0, 1, 7))
def csr_transpose_matvec(indptr, indices, data, x, ncols):
    y = np.zeros(ncols)
    for row in range(indptr.shape[0] - 1):
        xr = x[row]
        if xr == 0.0:
            continue
        for k in range(indptr[row], indptr[row + 1]):
            y[indices[k]] += data[k] * xr
    return y


def _sym32(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.standard_normal((n + 2, n + 2))
    return ((a @ a.T + np.diag(np.arange(n + 2) * 3.0)).astype(np.float32), 1e-5, 200)


@unseen(_sym32, sizes=(4, 0, 1, 7))
def power_iteration_float32_early_exit(A, tol, maxit):
    v = np.ones(A.shape[0], dtype=np.float32) / np.float32(np.sqrt(A.shape[0]))
    lam = np.float32(0.0)
    it = 0
    for it in range(maxit):  # noqa: B007 - read after the loop
        w = A @ v
        new_lam = v @ w
        norm = np.linalg.norm(w)
        if norm == 0:
            break
        v = w / norm
        if abs(new_lam - lam) < tol * abs(new_lam):
            lam = new_lam
            break
        lam = new_lam
    return lam, v, it


def _spd(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    a = rng.standard_normal((n + 2, n + 2))
    return (a @ a.T + (n + 2) * np.eye(n + 2), rng.standard_normal(n + 2), 1e-10)


@unseen(_spd, sizes=(4, 0, 1, 7))
def preconditioned_cg_for_else(A, b, tol):
    x = np.zeros_like(b)
    inv_diag = 1.0 / np.diag(A)
    r = b.copy()
    z = inv_diag * r
    p = z.copy()
    rz = r @ z
    for k in range(2 * b.shape[0]):  # noqa: B007 - read after the loop
        Ap = A @ p
        alpha = rz / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        if np.sqrt(r @ r) < tol:
            converged = True
            break
        z = inv_diag * r
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    else:
        converged = False
        k = -1
    return x, converged, k


@unseen(lambda rng, n: (rng.uniform(1.0, 20.0, n * 2),), sizes=(4, 0, 1, 7))
def secant_cube_root_while_else(c):
    out = np.empty_like(c)
    iters = np.zeros(c.shape[0], dtype=np.int32)
    for i in range(c.shape[0]):
        x0, x1 = 1.0, c[i]
        f0, f1 = x0**3 - c[i], x1**3 - c[i]
        k = 0
        while k < 60:
            if f1 == f0:
                break
            x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
            x0, f0 = x1, f1
            x1, f1 = x2, x2**3 - c[i]
            k += 1
            if abs(x1 - x0) < 1e-13 * abs(x1):
                break
        else:
            x1 = np.nan
        out[i] = x1
        iters[i] = k
    return out, iters


def _poisson(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.standard_normal(n + 2), 1.5, 1e-9, 500)


@unseen(_poisson, sizes=(4, 0, 1, 7))
def sor_tridiagonal_until_tol(f, omega, tol, maxit):
    n = f.shape[0]
    u = np.zeros(n)
    sweeps = 0
    for sweeps in range(1, maxit + 1):  # noqa: B007 - read after the loop
        change = 0.0
        for i in range(n):
            left = u[i - 1] if i > 0 else 0.0
            right = u[i + 1] if i < n - 1 else 0.0
            new = (1 - omega) * u[i] + omega * (f[i] + left + right) / 4.0
            change = max(change, abs(new - u[i]))
            u[i] = new
        if change < tol:
            break
    return u, sweeps


@unseen(lambda rng, n: (np.array([0.5 * n - 3.0, 1.0, 0.5]), -10.0, 10.0), sizes=(4, 0, 1, 7))
def golden_section_search(coeffs, lo, hi):
    def f(x):
        return coeffs[0] * x + coeffs[1] * (x - 1) ** 2 + coeffs[2] * abs(x)

    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c = b - g * (b - a)
    d = a + g * (b - a)
    fc, fd = f(c), f(d)
    steps = 0
    while b - a > 1e-9:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
        steps += 1
    return (a + b) / 2, steps


@unseen(lambda rng, n: (rng.uniform(-2.0, 2.0, n * 3).astype(np.float32),), sizes=(4, 0, 1, 7))
def fixed_point_cos_float32(x0):
    out = x0.copy()
    steps = np.zeros(x0.shape[0], dtype=np.int16)
    for i in range(x0.shape[0]):
        x = out[i]
        for _ in range(200):
            nx = np.cos(x)
            if nx == x:
                break
            x = nx
            steps[i] += 1
        out[i] = x
    return out, steps


# --- bytes -----------------------------------------------------------------------------------

_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)


@unseen(lambda rng, n: (rng.integers(0, 256, n * 2 + n % 3).astype(np.uint8),), sizes=(4, 0, 1, 7))
def base64_encode_uint8(data):
    n = data.shape[0]
    out = np.full(4 * ((n + 2) // 3), ord("="), dtype=np.uint8)
    k = 0
    for i in range(0, n, 3):
        b0 = int(data[i])
        b1 = int(data[i + 1]) if i + 1 < n else 0
        b2 = int(data[i + 2]) if i + 2 < n else 0
        word = (b0 << 16) | (b1 << 8) | b2
        out[k] = _B64[word >> 18]
        out[k + 1] = _B64[(word >> 12) & 63]
        if i + 1 < n:
            out[k + 2] = _B64[(word >> 6) & 63]
        if i + 2 < n:
            out[k + 3] = _B64[word & 63]
        k += 4
    return out


def _utf8(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    text = "aé€😀z" * n + ("ß" if n % 2 else "")
    raw = np.frombuffer(text.encode("utf-8"), np.uint8).copy()
    if n >= 3:
        raw[n * 5] = 0xC0  # an overlong lead byte: the first error
    return (raw,)


@unseen(_utf8, sizes=(4, 0, 1, 7))
def utf8_validate_uint8(b):
    i = 0
    n = b.shape[0]
    chars = 0
    while i < n:
        c = b[i]
        if c < 0x80:
            need = 0
        elif 0xC2 <= c <= 0xDF:
            need = 1
        elif 0xE0 <= c <= 0xEF:
            need = 2
        elif 0xF0 <= c <= 0xF4:
            need = 3
        else:
            return False, i, chars
        if i + need >= n + (1 if need == 0 else 0):
            return False, i, chars
        for k in range(1, need + 1):
            if b[i + k] & 0xC0 != 0x80:
                return False, i, chars
        i += need + 1
        chars += 1
    return True, n, chars


@unseen(lambda rng, n: (rng.integers(0, 256, n * 50).astype(np.uint8),), sizes=(4, 0, 1, 7))
def adler32_python_int(data):
    a, b = 1, 0
    for byte in data:
        a = (a + int(byte)) % 65521
        b = (b + a) % 65521
    return (b << 16) | a


@unseen(lambda rng, n: (rng.integers(0, 65536, n * 9).astype(np.uint16),), sizes=(4, 0, 1, 7))
def fletcher32_uint16_words(words):
    s1 = np.uint32(0xFFFF)
    s2 = np.uint32(0xFFFF)
    for w in words:
        s1 = (s1 + w) % np.uint32(65535)
        s2 = (s2 + s1) % np.uint32(65535)
    return (s2 << np.uint32(16)) | s1


@unseen(lambda rng, n: (rng.integers(0, 256, n * 3).astype(np.uint8),), sizes=(4, 0, 1, 7))
def hex_encode_uint8(data):
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)
    out = np.empty(2 * data.shape[0], dtype=np.uint8)
    for i, v in enumerate(data):
        out[2 * i] = digits[v >> 4]
        out[2 * i + 1] = digits[v & 15]
    return out


def _runs(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    counts = rng.integers(1, 5, n * 2).astype(np.uint8)
    return (counts, rng.integers(0, 256, n * 2).astype(np.uint8))


@unseen(_runs, sizes=(4, 0, 1, 7))
def run_length_decode_uint8(counts, values):
    total = 0
    for c in counts:
        total += int(c)
    out = np.empty(total, dtype=np.uint8)
    pos = 0
    for c, v in zip(counts, values):  # noqa: B905 - as users write it
        for _ in range(c):
            out[pos] = v
            pos += 1
    return out


# --- combinatorics ---------------------------------------------------------------------------


@unseen(lambda rng, n: (rng.integers(0, 4, n * 2),), sizes=(4, 0, 1, 7))
def next_permutation_in_place(a):
    n = a.shape[0]
    i = n - 2
    while i >= 0 and a[i] >= a[i + 1]:
        i -= 1
    if i < 0:
        a[:] = a[::-1].copy()
        return False, a
    j = n - 1
    while a[j] <= a[i]:
        j -= 1
    a[i], a[j] = a[j], a[i]
    lo, hi = i + 1, n - 1
    while lo < hi:
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1
        hi -= 1
    return True, a


@unseen(lambda rng, n: (n + 1,), sizes=(4, 0, 1, 7))
def gray_codes_uint32(bits):
    count = 1 << bits
    codes = np.empty(count, dtype=np.uint32)
    back = np.empty(count, dtype=np.uint32)
    for i in range(count):
        g = np.uint32(i) ^ (np.uint32(i) >> np.uint32(1))
        codes[i] = g
        b = g
        shift = g >> np.uint32(1)
        while shift:
            b ^= shift
            shift >>= np.uint32(1)
        back[i] = b
    return codes, back, bool((back == np.arange(count)).all())


@unseen(lambda rng, n: (n + 2, 3), sizes=(4, 0, 1, 7))
def k_combinations_lexicographic(n, k):
    if k > n:
        return np.zeros((0, k), dtype=np.int16)
    total = math.comb(n, k)
    out = np.empty((total, k), dtype=np.int16)
    c = list(range(k))
    row = 0
    while True:
        out[row] = c
        row += 1
        i = k - 1
        while i >= 0 and c[i] == n - k + i:
            i -= 1
        if i < 0:
            break
        c[i] += 1
        for j in range(i + 1, k):
            c[j] = c[j - 1] + 1
    return out


@unseen(lambda rng, n: (n * 3, 1_000_000_007), sizes=(4, 0, 1, 7))
def pascal_triangle_mod_prime(rows, p):
    tri = np.zeros((rows + 1, rows + 1), dtype=np.int64)
    tri[0, 0] = 1
    for r in range(1, rows + 1):
        tri[r, 0] = 1
        for c in range(1, r + 1):
            tri[r, c] = (tri[r - 1, c - 1] + tri[r - 1, c]) % p
    return tri, int(tri[rows].sum() % p)


# --- raises and warns ------------------------------------------------------------------------


def _lookup(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    keys = rng.integers(0, n + 2, n * 2 + 1)
    keys[-1] = n + 7  # past the table: IndexError from the user's line
    return (np.arange(n + 2) * 10, keys)


@unseen(_lookup, sizes=(4, 0, 1, 7))
def table_lookup_raises_index_error(table, keys):
    out = np.zeros(keys.shape[0], dtype=table.dtype)
    for i, k in enumerate(keys):
        out[i] = table[k]
    return out


def _rates(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    r = rng.uniform(1.0, 5.0, n * 2 + 1)
    r[n] = 0.0
    return (r,)


@unseen(_rates, sizes=(4, 0, 1, 7))
def harmonic_mean_python_zero_division(rates):
    acc = 0.0
    for r in rates:
        acc += 1.0 / float(r)
    return len(rates) / acc


def _probs(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    p = rng.random(n * 3 + 1)
    p[-1] = -0.25
    return (p,)


@unseen(_probs, sizes=(4, 0, 1, 7))
def validate_probabilities_value_error(p):
    total = 0.0
    for i in range(p.shape[0]):
        if p[i] < 0:
            raise ValueError(f"probability {i} is negative")
        total += p[i]
    return p / total


@unseen(lambda rng, n: (rng.integers(100, 256, n * 6).astype(np.uint8),), sizes=(4, 0, 1, 7))
def uint8_scalar_sum_overflow_warns(data):
    s = np.uint8(0)
    for v in data:
        s = s + v
    return s


@unseen(lambda rng, n: (rng.integers(-3, 4, n * 3).astype(np.float64),), sizes=(4, 0, 1, 7))
def float_scalar_divide_by_zero_warns(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.float64(1.0) / x[i]
    return out


@unseen(lambda rng, n: (rng.integers(20000, 32000, n * 2).astype(np.int16),), sizes=(4, 0, 1, 7))
def int16_running_sum_overflow_warns(x):
    total = np.int16(0)
    peaks = 0
    for v in x:
        total += v
        if total < 0:
            peaks += 1
    return total, peaks
