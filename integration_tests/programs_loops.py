"""Loops (issue 23): range loops with any sign of step and symbolic bounds, loops over an
array's first axis, `enumerate` / `zip`, `while` loops, nested loops with index-dependent
slices (triangular solves, row-by-row LU and Cholesky, dynamic programming), scalar
recurrences (Python ints and floats, NumPy scalars and 0-d arrays carried: NEP 50), `if` on
values computed in the body, `break` / `continue` / early `return`, in-place writes into
inputs and overlapping reads and writes, Python's integer semantics, and invalid loops.

Trip counts follow the input size ``n`` (or a Python int argument made from it), so the
resized calls run the same loop with other trip counts; ``sizes`` with more than two entries
add calls at trip counts 0 and 1. Trip counts stay at 12 or below: a loop capture cannot keep
is unrolled, and every iteration adds compile time. ``slow=True`` marks the programs whose
unrolled inner products compile slowest with the inductor backend (``-m "not slow"``).

Programs under ``loop_breaking`` branch on array values (``if x[i] > 0``, ``while err >
tol``): today each such branch is a graph break, so they compile without ``fullgraph``. Once
capture keeps ``cond`` and ``while_loop`` in the graph (issue 23), they belong under ``loop``
(``fullgraph=True``); ``BREAKING_TODAY`` lists them.
"""

from __future__ import annotations

import functools

import numpy as np
from harness import program

from benchmarks.loop_programs import mandelbrot

loop = functools.partial(program, "loops")
invalid_loop = functools.partial(program, "loops", expect_error=True)

#: Programs that graph-break today on a branch over array values (compiled without fullgraph).
BREAKING_TODAY: list[str] = []


def loop_breaking(inputs, **options):
    """Register a loop program that branches on array values (a graph break today)."""
    register = program("loops", inputs, fullgraph=False, **options)

    def record(fn):
        BREAKING_TODAY.append(fn.__name__)
        return register(fn)

    return record


def _vec(rng, n):
    return (rng.standard_normal(n),)


def _mat(rng, n):
    return (rng.standard_normal((n, 4)),)


def _lower_system(rng, n):
    L = np.tril(rng.standard_normal((n, n)))
    L[np.diag_indices(n)] = rng.uniform(2.0, 3.0, n)
    return (L, rng.standard_normal(n))


def _upper_system(rng, n):
    U = np.triu(rng.standard_normal((n, n)))
    U[np.diag_indices(n)] = rng.uniform(2.0, 3.0, n)
    return (U, rng.standard_normal(n))


def _dominant_system(rng, n):
    A = rng.standard_normal((n, n))
    A[np.diag_indices(n)] = np.abs(A).sum(axis=1) + 1.0
    return (A, rng.standard_normal(n))


def _spd(rng, n):
    M = rng.standard_normal((n, n))
    return (M @ M.T + n * np.eye(n),)


def _distances(rng, n):
    D = rng.uniform(1.0, 10.0, (n, n))
    D[np.diag_indices(n)] = 0.0
    return (D,)


# --- range loops: any sign of step, symbolic bounds, Python int trip counts ----------------


@loop(_vec, sizes=(4, 0, 1, 7))
def sum_of_squares_over_range(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


@loop(_vec, sizes=(4, 1, 7))
def suffix_sums_negative_step(x):
    for i in range(x.shape[0] - 2, -1, -1):
        x[i] += x[i + 1]
    return x


@loop(_vec)
def negate_every_other_step_two(x):
    for i in range(0, x.shape[0], 2):
        x[i] = -x[i]
    return x


@loop(_vec, sizes=(4, 1, 7))
def every_third_from_the_end_step_minus_three(x):
    total = 0.0
    for i in range(x.shape[0] - 1, -1, -3):
        total = total * 0.5 + x[i]
    return total, i


@loop(_vec, sizes=(4, 2, 7))
def three_point_average_over_interior(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0] - 1):
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0
    return out


@loop(lambda rng, n: (rng.standard_normal(n), n - 4), sizes=(4, 5, 7))
def python_int_trip_count(x, N):
    for t in range(N):
        x = x * 0.5 + t
    return x


@loop(lambda rng, n: (rng.standard_normal((3, n)), n - 2))
def python_int_stop_over_columns(A, N):
    for j in range(1, N):
        A[:, j] = A[:, j - 1] * 0.5 + A[:, j]
    return A


@loop(_vec)
def empty_range_leaves_everything_unchanged(x):
    y = x * 2.0
    k = 5
    for k in range(x.shape[0], 0):
        y[k] = 0.0
        x[k] = 1.0
    return y, k


@loop(lambda rng, n: (rng.standard_normal(n), n - 10))
def negative_trip_count_runs_nothing(x, N):
    total = 1.5
    for i in range(N):
        total = total + x[i]
    return total, x


@loop(_vec, sizes=(4, 1, 7))
def loop_variable_keeps_its_last_value(x):
    for i in range(1, x.shape[0] + 1):
        x[i - 1] *= i
    return x, i


@loop(lambda rng, n: (rng.standard_normal(n), n - 4), sizes=(4, 5, 7))
def loop_variable_untouched_by_empty_loop(x, N):
    i = -1
    for i in range(N):
        x[i] = float(i)
    return x, i


@loop(lambda rng, n: (rng.standard_normal((n, 3)),))
def strided_range_over_rows(A):
    out = np.zeros(A.shape[1])
    for i in range(A.shape[0] - 1, 0, -2):
        out = out + A[i] - A[i - 1]
    return out


# --- loops over an array's first axis, enumerate and zip ------------------------------------


@loop(lambda rng, n: (rng.standard_normal((n, 3)),), sizes=(4, 1, 7))
def rows_accumulate_squares(A):
    s = np.zeros(A.shape[1])
    for row in A:
        s += row * row
    return s


@loop(_mat)
def rows_are_views_written_in_place(A):
    for row in A:
        row *= 2.0
        row[0] = row[-1]
    return A


@loop(_vec, sizes=(4, 0, 7))
def elements_of_a_vector_recurrence(x):
    s = 0.0
    for v in x:
        s = s * 0.5 + v
    return s


@loop(_mat)
def enumerate_rows_weighted(A):
    out = np.zeros(A.shape[0])
    for i, row in enumerate(A):
        out[i] = row.sum() * i
    return out


@loop(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def zip_two_vectors_dot(x, y):
    s = 0.0
    for a, b in zip(x, y, strict=True):
        s += a * b
    return s


@loop(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n, 3))))
def enumerate_zip_rows_writes_first(A, B):
    for i, (a, b) in enumerate(zip(A, B, strict=True)):
        a += b * i
    return A, B


@loop(lambda rng, n: (rng.standard_normal((n, 2, 3)),))
def blocks_of_a_3d_array(T):
    acc = np.eye(2, 3)
    for block in T:
        acc = acc * 0.5 + block
    return acc


@loop(_vec)
def enumerate_with_start_collects_a_list(x):
    out = []
    for k, v in enumerate(x, start=1):
        out.append(v * k)
    return out


@loop(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal(n + 2)))
def zip_stops_at_the_shorter(A, y):
    acc = np.zeros(3)
    for row, v in zip(A, y, strict=False):
        acc = acc + row * v
    return acc


@loop(_mat)
def rows_of_a_reversed_view(A):
    acc = np.zeros(A.shape[1])
    for row in A[::-1]:
        acc = acc * 0.5 + row
    return acc


@loop(lambda rng, n: (rng.standard_normal((n, 3)),))
def rows_of_a_strided_view_written(A):
    V = A[::2, ::-1]
    for i, row in enumerate(V):
        row += i
    return A, V


# --- while loops ------------------------------------------------------------------------------


@loop(_vec)
def while_counter_over_length(x):
    i = 0
    while i < x.shape[0]:
        x[i] = x[i] * i
        i += 2
    return x, i


@loop(_vec, sizes=(4, 0, 7))
def while_true_with_break(x):
    i = 0
    total = 0.0
    while True:
        if i >= x.shape[0]:
            break
        total += x[i]
        i += 1
    return total, i


@loop(_vec)
def while_on_python_ints_collatz(x):
    c = x.shape[0] + 7
    steps = 0
    while c != 1:
        c = c // 2 if c % 2 == 0 else 3 * c + 1
        steps += 1
    return x * steps, steps


@loop(lambda rng, n: (rng.uniform(1.0, 4.0, n),))
def while_newton_sqrt_converges(a):
    x = a.copy()
    err = 1.0
    it = 0
    while err > 1e-10 and it < 12:
        y = 0.5 * (x + a / x)
        err = np.abs(y - x).max()
        x = y
        it += 1
    return x, it


@loop(lambda rng, n: (rng.standard_normal(n) * 8.0,))
def while_halving_until_small(x):
    count = 0
    while np.abs(x).max() > 1.0:
        x = x / 2.0
        count += 1
    return x, count


# --- nested loops with index-dependent slices ---------------------------------------------


@loop(_lower_system, sizes=(4, 1, 7))
def forward_substitution(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


@loop(_upper_system)
def back_substitution(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


@loop(lambda rng, n: _dominant_system(rng, n)[:1], sizes=(2, 4), slow=True)
def lu_row_by_row_in_place(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


@loop(_spd, sizes=(2, 4), slow=True)
def cholesky_row_by_row(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[j, :j]
            A[i, j] /= A[j, j]
        A[i, i] -= A[i, :i] @ A[i, :i]
        A[i, i] = np.sqrt(A[i, i])
    return np.tril(A)


@loop(_dominant_system, sizes=(2, 4), slow=True)
def gauss_seidel_sweeps(A, b):
    x = np.zeros_like(b)
    for _ in range(2):
        for i in range(b.shape[0]):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return x


@loop(lambda rng, n: (rng.standard_normal((n, 5)),), sizes=(3, 5), slow=True)
def seidel_2d_rows_read_updated_rows(A):
    for _ in range(2):
        for i in range(1, A.shape[0] - 1):
            A[i, 1:-1] = (
                A[i - 1, :-2]
                + A[i - 1, 1:-1]
                + A[i - 1, 2:]
                + A[i, :-2]
                + A[i, 1:-1]
                + A[i, 2:]
                + A[i + 1, :-2]
                + A[i + 1, 1:-1]
                + A[i + 1, 2:]
            ) / 9.0
    return A


@loop(lambda rng, n: (rng.standard_normal((n, 6)), np.zeros((n, 6))))
def jacobi_2d_time_steps(A, B):
    for _ in range(A.shape[0] // 2):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )
    return A, B


@loop(_vec)
def heat_1d_swapping_buffers(u):
    v = u.copy()
    for _ in range(u.shape[0]):
        v[1:-1] = u[1:-1] + 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u, v = v, u
    return u, v


@loop(_distances)
def floyd_warshall_whole_matrix(D):
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k : k + 1] + D[k : k + 1, :])
    return D


@loop(_distances, sizes=(2, 4), slow=True)
def floyd_warshall_rows_in_place(D):
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            D[i, :] = np.minimum(D[i, :], D[i, k] + D[k, :])
    return D


@loop(lambda rng, n: (rng.standard_normal((n, n)),), sizes=(3, 5))
def triangular_max_plus_dp(w):
    n = w.shape[0]
    T = np.zeros((n, n))
    for i in range(n - 2, -1, -1):
        for j in range(i + 1, n):
            best = np.maximum(T[i + 1, j], T[i, j - 1])
            if j - i > 1:
                best = np.maximum(best, T[i + 1, j - 1] + w[i, j])
                best = np.maximum(best, (T[i, i + 1 : j] + T[i + 2 : j + 1, j]).max())
            T[i, j] = best
    return T


@loop(_vec, sizes=(4, 1, 7))
def increasing_subsequence_dp(x):
    L = np.ones(x.shape[0], dtype=np.int64)
    for i in range(1, x.shape[0]):
        L[i] = 1 + np.max(np.where(x[:i] < x[i], L[:i], 0))
    return L, L.max()


@loop(lambda rng, n: (rng.standard_normal((n, n)),))
def lower_triangle_row_sums(A):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        out[i] = A[i, : i + 1].sum()
    return out


@loop(lambda rng, n: (rng.uniform(-0.2, 0.2, n),), sizes=(4, 1, 7))
def levinson_durbin(r):
    y = np.zeros_like(r)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, r.shape[0]):
        beta = (1.0 - alpha * alpha) * beta
        alpha = -(r[k] + r[k - 1 :: -1] @ y[:k]) / beta
        y[:k] = y[:k] + alpha * y[k - 1 :: -1]
        y[k] = alpha
    return y, beta


@loop(lambda rng, n: (rng.standard_normal((n, 2)), rng.standard_normal((n, 2)) * 0.1), sizes=(3, 5))
def particles_time_steps(pos, vel):
    for _ in range(pos.shape[0]):
        d = pos[:, None, :] - pos[None, :, :]
        r2 = (d * d).sum(axis=2) + 0.01
        acc = -(d / r2[:, :, None] ** 1.5).sum(axis=1)
        vel += acc * 0.01
        pos += vel * 0.01
    return pos, vel


@loop(lambda rng, n: (rng.uniform(-2.0, 1.0, (n, 3)), rng.uniform(-1.5, 1.5, (n, 3))))
def mandelbrot_escape_counts(cr, ci):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    counts = np.zeros(cr.shape, dtype=np.int64)
    for _ in range(5):
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        inside = zr * zr + zi * zi <= 4.0
        counts += inside
        zr = np.where(inside, zr, 2.0)
        zi = np.where(inside, zi, 0.0)
    return counts


# --- scalar recurrences: Python ints and floats, NumPy scalars, 0-d arrays (NEP 50) ---------


@loop(lambda rng, n: (np.arange(n),), sizes=(4, 1, 7))
def python_int_grows_past_int64(x):
    acc = 7
    for i in range(x.shape[0]):
        acc = acc * 100_003 + i
    return acc, x * (acc % 11)


@loop(lambda rng, n: (np.arange(n),))
def negative_python_int_grows_past_int64(x):
    acc = -3
    for i in range(x.shape[0]):
        acc = acc * 1_000_003 - i
    return acc, acc // 7, acc % 7, x - acc % 5


@loop(_vec)
def python_float_logistic_map(x):
    v = 0.3
    for _ in range(x.shape[0] + 2):
        v = 3.7 * v * (1.0 - v)
    return x * v, v


@loop(lambda rng, n: (rng.standard_normal(n).astype(np.float32),))
def float32_scalar_carried_with_python_numbers(x):
    s = np.float32(1.0)
    for i in range(x.shape[0]):
        s = s * 1.5 + i
        s = s + x[i]
    return s, x * s


@loop(lambda rng, n: (rng.integers(-50, 50, n, dtype=np.int32),), sizes=(4, 0, 7))
def python_int_meets_int32_elements(x):
    acc = 0
    for v in x:
        acc = acc + v * 2
    return acc


@loop(lambda rng, n: (rng.standard_normal(n).astype(np.float32),), sizes=(4, 0, 7))
def python_float_meets_float32_elements(x):
    acc = 0.0
    for v in x:
        acc = acc + v * v
    return acc


@loop(lambda rng, n: (rng.integers(100, 127, (n, 2), dtype=np.int8),))
def int8_array_accumulator_wraps(x):
    acc = np.zeros(2, dtype=np.int8)
    for row in x:
        acc += row
    return acc


@loop(_vec, sizes=(4, 0, 7))
def zero_d_array_carried(x):
    acc = np.zeros(())
    for i in range(x.shape[0]):
        acc = acc + x[i] * x[i]
    return acc


@loop(lambda rng, n: (rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((n, 3))))
def rnn_state_carried(W, xs):
    h = np.zeros(W.shape[0])
    for x in xs:
        h = np.tanh(W @ h + x)
    return h


@loop(_vec, sizes=(4, 0, 1, 7))
def fibonacci_python_ints(x):
    a, b = 0, 1
    for _ in range(x.shape[0] * 2):
        a, b = b, a + b
    return a, x * a


@loop(lambda rng, n: (rng.uniform(0.5, 1.5, n),))
def float64_scalar_power_series(x):
    term = np.float64(1.0)
    total = 0.0
    for k in range(x.shape[0]):
        total = total + term
        term = term * x[k] / (k + 1)
    return total, term


@loop(lambda rng, n: (rng.integers(0, 1000, n, dtype=np.int64),))
def int64_scalar_and_python_int_mix(x):
    h = 5381
    for v in x:
        h = (h * 33 + v) % 1_000_003
    return h


# --- if on values computed in the body -----------------------------------------------------


@loop(_vec)
def branch_on_index_parity(x):
    for i in range(x.shape[0]):
        if i % 2 == 0:
            x[i] = x[i] * 2.0
        else:
            x[i] = -x[i]
    return x


@loop(_vec)
def branch_on_python_value_from_the_body(x):
    state = 1
    for i in range(x.shape[0]):
        state = (state * 5 + 3) % 8
        if state > 4:
            x[i] += state
        elif state == 0:
            x[i] = 0.0
    return x, state


@loop(_vec)
def branch_on_element_value(x):
    pos = 0.0
    count = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            pos += x[i]
            count += 1
    return pos, count


@loop_breaking(lambda rng, n: (rng.integers(0, 256, n).astype(np.uint32),))
def crc_branch_on_bit_of_numpy_scalars(data):
    crc = np.uint32(0xFFFFFFFF)
    for b in data:
        for _ in range(8):
            if (crc & 1) ^ (b & 1):  # noqa: SIM108 (the issue's spelling)
                crc = (crc >> 1) ^ np.uint32(0xEDB88320)
            else:
                crc = crc >> 1
            b = b >> 1
    return crc ^ np.uint32(0xFFFFFFFF)


@loop(lambda rng, n: (rng.integers(0, 256, n).astype(np.uint32),), sizes=(2, 3))
def crc32_branch_free(data):
    crc = np.uint32(0xFFFFFFFF)
    for b in data:
        crc = crc ^ b
        for _ in range(8):
            crc = (crc >> 1) ^ ((crc & 1) * np.uint32(0xEDB88320))
    return crc ^ np.uint32(0xFFFFFFFF)


@loop(lambda rng, n: (rng.standard_normal(n),))
def clip_in_body_with_where(x):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        y = np.where(y > 1.0, y - 1.0, y + np.abs(x[i]))
    return y


# --- break, continue, early return ----------------------------------------------------------


@loop(_vec)
def break_at_a_fixed_index(x):
    total = 0.0
    for i in range(x.shape[0]):
        if i == 3:
            break
        total += x[i]
    return total, i


@loop(_vec)
def continue_skips_odd_indices(x):
    for i in range(x.shape[0]):
        if i % 2:
            continue
        x[i] += 10.0
    return x


@loop(_vec, sizes=(4, 0, 7))
def early_return_from_inside_the_loop(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 3.0
        if i == x.shape[0] // 2:
            return x[: i + 1].sum(), i
    return None


@loop(lambda rng, n: (rng.standard_normal((n, n)),))
def nested_break_leaves_the_inner_loop(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            A[i, j] = 0.0
    return A, i, j


@loop(_vec)
def for_else_runs_without_break(x):
    for i in range(x.shape[0]):
        if i > 10:
            break
        x[i] -= 1.0
    else:
        x *= 2.0
    return x


@loop_breaking(lambda rng, n: (np.abs(rng.standard_normal(n)) - 0.5,))
def break_on_first_negative(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        x[i] = np.sqrt(x[i])
    return x, i


@loop_breaking(_vec)
def early_return_on_data(x):
    for i, v in enumerate(x):
        if v > 1.0:
            return i, v
    return -1, None


@loop(_vec)
def continue_on_data(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total += np.sqrt(v)
    return total


@loop(lambda rng, n: (rng.uniform(-2.0, 0.5, n), rng.uniform(-1.0, 1.0, n)))
def mandelbrot_points_break_on_escape(cr, ci):
    counts = np.zeros(cr.shape[0], dtype=np.int64)
    for k in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        it = 0
        for it in range(6):  # noqa: B007 (read after the loop)
            zr, zi = zr * zr - zi * zi + cr[k], 2.0 * zr * zi + ci[k]
            if zr * zr + zi * zi > 4.0:
                break
        counts[k] = it
    return counts


@loop(_vec, sizes=(4, 0, 1, 7))
def break_on_data_keeps_earlier_sum(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            break
        total += x[i] * x[i]
    return total


@loop(_vec, sizes=(4, 0, 1, 7))
def continue_then_break_on_data(x):
    total = 0.0
    count = 0
    for i in range(x.shape[0]):
        if x[i] < -0.5:
            continue
        if x[i] > 1.5:
            break
        total += x[i]
        count += 1
    return total, count


@loop(_vec, sizes=(4, 0, 1, 7))
def first_index_above_then_break(x):
    found = -1
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            found = i
            break
    return found


@loop(lambda rng, n: (rng.standard_normal((n, 5)) + 0.7,), sizes=(4, 1, 7))
def nested_break_on_data_writes_rows(A):
    for r in range(A.shape[0]):
        for c in range(A.shape[1]):
            if A[r, c] < 0.0:
                break
            A[r, c] = A[r, c] * 10.0
    return A


@loop(_vec, sizes=(4, 0, 1, 7))
def break_in_else_block_after_nested_if(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > -1.0:
            if x[i] > 1.0:
                total += 100.0
            total += x[i]
        else:
            break
    return total


@loop(lambda rng, n: (rng.uniform(0.5, 2.0, n),), sizes=(4, 1, 7))
def while_convergence_with_break_at_the_end(x):
    s = x[0] * 0.0
    k = 0
    while s < 6.0:
        if k >= x.shape[0]:
            break
        s += x[k]
        k += 1
    return s, k


@loop(lambda rng, n: (rng.uniform(-2.0, 0.5, n), rng.uniform(-1.0, 1.0, n)), sizes=(4, 1, 7))
def mandelbrot_escape_test_before_the_step(cr, ci):
    counts = np.zeros(cr.shape[0], dtype=np.int64)
    for p in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        n = 0
        for _ in range(30):
            if zr * zr + zi * zi > 4.0:
                break
            zr, zi = zr * zr - zi * zi + cr[p], 2.0 * zr * zi + ci[p]
            n += 1
        counts[p] = n
    return counts


@loop(_mat, sizes=(4, 1, 7))
def break_out_of_a_loop_over_rows(A):
    acc = np.zeros(A.shape[1])
    for row in A:
        if row[0] > 1.0:
            break
        acc = acc + row * 2.0
    return acc


# --- in-place writes, aliasing, overlapping reads and writes -------------------------------


@loop(_mat)
def overlapping_row_shift_in_place(A):
    for i in range(A.shape[0]):
        A[i, 1:-1] += A[i, :-2]
    return A


@loop(_vec)
def overlapping_prefix_updates(x):
    for _ in range(3):
        x[1:] += x[:-1]
    return x


@loop(_mat)
def rows_reversed_through_their_own_view(A):
    for row in A:
        row[:] = row[::-1]
    return A


@loop(_vec)
def returns_the_input_and_views_of_it(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + i
    return x, x[1:], x[::-1]


@loop(lambda rng, n: (rng.standard_normal((n, 3)), np.zeros(3)))
def accumulate_into_out_argument(A, out):
    for row in A:
        np.add(out, row, out=out)
    return out


@loop(_mat)
def collect_row_views_then_scale(A):
    rows = []
    for i in range(A.shape[0]):
        rows.append(A[i])
    A *= 2.0
    return rows


def _overlapping_views(rng, n):
    buf = rng.standard_normal(n + 1)
    return (buf[1:], buf[:-1])


@loop(_overlapping_views)
def inputs_overlap_carry_through_memory(a, b):
    for i in range(a.shape[0]):
        a[i] += b[i]
    return a, b


@loop(lambda rng, n: (rng.standard_normal((n, 3)),))
def swap_rows_in_place(A):
    n = A.shape[0]
    for i in range(n // 2):
        A[[i, n - 1 - i]] = A[[n - 1 - i, i]]
    return A


# --- issue 23, while and early exits compiled whole: compound conditions -------------------
# `and` / `or` / `not` and chained comparisons on run-time values, in `while` and `if`,
# inside and outside kept loops (numpile_capture.short_circuit); NumPy scalars carried.


def _signal(rng, n):
    return (np.round(rng.standard_normal(n) * 2.0, 1),)


def _two_signals(rng, n):
    return (np.round(rng.standard_normal(n) * 2.0, 1), np.round(rng.standard_normal(n), 1))


def _grid_points(rng, n):
    return (np.linspace(-2.0, 0.6, n), np.linspace(-1.2, 1.2, n))


def _bytes(rng, n):
    return (rng.integers(0, 256, n).astype(np.uint32),)


@loop(_signal, sizes=(4, 0, 1, 7))
def while_and_guards_the_index(x):
    # `x[i]` is read only while `i < n`: the second operand must not run past the end.
    i = 0
    while i < x.shape[0] and abs(x[i]) < 1.5:
        i += 1
    return i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_not_or_stops_at_first_large(x):
    i = 0
    while not (i >= x.shape[0] or x[i] > 1.0):
        i += 1
    return i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_and_three_operands_accumulates(x):
    i = 0
    total = 0.0
    while i < x.shape[0] and total < 3.0 and x[i] > -2.5:
        total += abs(x[i])
        i += 1
    return total, i


# The benchmark's program itself (benchmarks/loop_programs.py): a `while` on two run-time
# tests inside a `for` over points.
mandelbrot_while_and_escape_test = loop(
    _grid_points, sizes=(4, 0, 1, 7), name="mandelbrot_while_and_escape_test"
)(mandelbrot)


@loop(_grid_points, sizes=(4, 0, 1, 7))
def escape_while_or_keeps_going(cr, ci):
    # `(a and b) or c`: the escape test, or a minimum of iterations.
    out = np.zeros(cr.shape[0])
    for p in range(cr.shape[0]):
        zr = cr[p] * 0.0
        k = 0
        while (zr * zr <= 4.0 and k < 25) or k < 3:
            zr = zr * zr + cr[p] + 0.1 * ci[p]
            k += 1
        out[p] = zr + k
    return out


@loop(_signal, sizes=(4, 0, 1, 7))
def if_or_outside_band(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 1.0 or x[i] < -1.0:
            s += x[i]
    return s


@loop(_signal, sizes=(4, 0, 1, 7))
def if_not_and_inside_band(x):
    count = 0
    for i in range(x.shape[0]):
        if not (x[i] > -0.5 and x[i] < 0.5):
            count += 1
    return count


@loop(_signal, sizes=(4, 0, 1, 7))
def if_chained_comparison_counts(x):
    count = 0
    for i in range(x.shape[0]):
        if -0.5 <= x[i] < 1.0:
            count += 1
    return count


@loop(_signal, sizes=(4, 0, 1, 7))
def if_chained_comparison_with_else(x):
    for i in range(x.shape[0]):
        if 0.0 < x[i] <= 2.0:
            x[i] = x[i] * 10.0
        else:
            x[i] = -1.0
    return x


@loop(_two_signals, sizes=(4, 0, 1, 7))
def if_mixed_and_or_two_arrays(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        if (x[i] > 0.0 and y[i] > 0.0) or x[i] * y[i] < -1.0:
            s += x[i] - y[i]
    return s


@loop(_two_signals, sizes=(4, 0, 1, 7))
def elif_with_or_and_not(x, y):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 1.0 or y[i] > 1.0:
            out[i] = 1.0
        elif not (x[i] < -1.0 and y[i] < -1.0):
            out[i] = 2.0
        else:
            out[i] = 3.0
    return out


@loop(lambda rng, n: (np.arange(n, dtype=np.int64),), sizes=(4, 0, 1, 7, 16))
def if_not_or_on_python_ints(x):
    # FizzBuzz's test on the index: Python ints, `not (a or b)`.
    s = np.int64(0)
    for i in range(x.shape[0]):
        if not (i % 3 == 0 or i % 5 == 0):
            s += x[i]
    return s


@loop(_signal, sizes=(4, 0, 1, 7))
def insertion_sort_while_and(x):
    # The inner `while j > 0 and x[j - 1] > key:` reads x[j - 1] only while j > 0.
    for i in range(1, x.shape[0]):
        key = x[i]
        j = i
        while j > 0 and x[j - 1] > key:
            x[j] = x[j - 1]
            j -= 1
        x[j] = key
    return x


@loop(lambda rng, n: (np.repeat(rng.integers(0, 3, (n + 1) // 2), 2)[:n].astype(np.int64),))
def run_lengths_while_and_equal(x):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        j = i
        while j < x.shape[0] and x[j] == x[i]:
            j += 1
        out[i] = j - i
    return out


@loop(_signal, sizes=(4, 0, 1, 7))
def while_two_sided_bounds_walks(x):
    n = x.shape[0]
    i = 0
    s = 0.0
    while i >= 0 and i < n:
        s += x[i]
        i += 2 if x[i] > 0.0 else 3
    return s, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_bottom_test_or_in_for(x):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        v = abs(x[i]) + 1.0
        k = 0
        while v > 1.5 or k < 2:
            v = v * 0.5
            k += 1
        out[i] = k
    return out


@loop(lambda rng, n: (rng.integers(0, 4, n).astype(np.int64),), sizes=(4, 0, 1, 7))
def while_int_truthiness_and_limit(x):
    # `while m and k < 6`: the truth of a run-time int (nonzero) as one operand.
    total = 0
    for i in range(x.shape[0]):
        m = x[i]
        k = 0
        while m and k < 6:
            m = m // 2
            k += 1
        total += k
    return total


@loop(_bytes, sizes=(4, 0, 1, 7))
def crc32_uint32_bitwise(data):
    # NumPy uint32 scalars carried through `>>`, `&`, `*` and `^` (wrap-around).
    crc = np.uint32(0xFFFFFFFF)
    poly = np.uint32(0xEDB88320)
    one = np.uint32(1)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> one) ^ ((crc & one) * poly)
    return crc ^ np.uint32(0xFFFFFFFF)


@loop(lambda rng, n: (rng.integers(0, 256, n).astype(np.uint16),), sizes=(4, 0, 1, 7))
def crc16_uint16_branchy(data):
    crc = np.uint16(0xFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            if crc & np.uint16(1):
                crc = (crc >> np.uint16(1)) ^ np.uint16(0xA001)
            else:
                crc = crc >> np.uint16(1)
    return crc


@loop(_bytes, sizes=(4, 0, 1, 7))
def adler32_uint32_modulo(data):
    a = np.uint32(1)
    b = np.uint32(0)
    for i in range(data.shape[0]):
        a = (a + data[i]) % np.uint32(65521)
        b = (b + a) % np.uint32(65521)
    return (b << np.uint32(16)) | a


@loop(_bytes, sizes=(4, 0, 1, 7))
def fnv1a_uint64_state_masked_to_32_bits(data):
    # NumPy warns when a scalar multiply wraps; masked uint64 state never does.
    h = np.uint64(2166136261)
    for i in range(data.shape[0]):
        h = ((h ^ data[i]) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)
    return h


@loop(lambda rng, n: (n,), sizes=(4, 0, 1, 7))
def xorshift_uint64_state(n):
    s = np.uint64(88172645463325252)
    total = np.uint64(0)
    for _ in range(n):
        s = s ^ (s << np.uint64(13))
        s = s ^ (s >> np.uint64(7))
        s = s ^ (s << np.uint64(17))
        total = total + (s & np.uint64(255))
    return s, total


# --- issue 23, while and early exits compiled whole: a `while` outside any `for` -----------


@loop(lambda rng, n: (n + 27,), sizes=(4, 0, 1, 7))
def collatz_steps_of_a_python_int(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:  # noqa: SIM108 - the if statement is what is tested
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@loop(lambda rng, n: (np.array([n + 6, n + 27], dtype=np.int64),), sizes=(4, 0, 1, 7))
def collatz_steps_of_an_int64_element(x):
    m = x[1]
    steps = 0
    while m != 1:
        m = m // 2 if m % 2 == 0 else 3 * m + 1
        steps += 1
    return m, steps


@loop(lambda rng, n: (12 * n + 18, 8 * n + 12), sizes=(4, 0, 1, 7))
def gcd_by_euclid_python_ints(a, b):
    while b != 0:
        a, b = b, a % b
    return a


@loop(lambda rng, n: (float(n) + 2.0,), sizes=(4, 0, 1, 7))
def bisection_for_a_cube_root(target):
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


@loop(lambda rng, n: (np.array([float(n) + 2.0, 3.0]),), sizes=(4, 0, 1, 7))
def newton_sqrt_of_a_float64_element(a):
    c = a[0]
    x = c
    k = 0
    while abs(x * x - c) > 1e-12 * c and k < 60:
        x = 0.5 * (x + c / x)
        k += 1
    return x, k


@loop(lambda rng, n: (n * 7919 + 12345,), sizes=(4, 0, 1, 7))
def digit_sum_while_python_int(m):
    total = 0
    while m > 0:
        total += m % 10
        m //= 10
    return total


@loop(lambda rng, n: (n + 3, 45), sizes=(4, 0, 1, 7))
def power_by_squaring_overflows_int64(b, e):
    # b ** 45 passes 2**63: checked int64 overflows and the loop runs with Python ints.
    r = 1
    while e > 0:
        if e & 1:
            r = r * b
        b = b * b
        e >>= 1
    return r


@loop(_signal, sizes=(4, 0, 1, 7))
def while_writes_every_third_element(x):
    i = 0
    while i < x.shape[0]:
        x[i] = x[i] * 2.0 + 1.0
        i += 3
    return x, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_and_or_running_sum(x):
    i = 0
    s = 0.0
    while i < x.shape[0] and (s <= 2.0 or i < 2):
        s += abs(x[i])
        i += 1
    return s, i


@loop(lambda rng, n: (np.uint8(100 + n),), sizes=(4, 0, 1, 7))
def uint8_counter_keeps_its_dtype(c):
    steps = 0
    while c != np.uint8(200):
        c = c + np.uint8(1)
        steps += 1
    return c, steps


@loop(lambda rng, n: (np.int32(n + 2),), sizes=(4, 0, 1, 7))
def int32_tripling_keeps_its_dtype(v):
    k = 0
    while v < 100000:
        v = v * 3
        k += 1
    return v, k


@loop(lambda rng, n: (np.float32(n + 1.5),), sizes=(4, 0, 1, 7))
def float32_halving_keeps_its_dtype(v):
    k = 0
    while v > np.float32(1e-3):
        v = v * np.float32(0.5)
        k += 1
    return v, k


@loop(lambda rng, n: (n,), sizes=(4, 0, 1, 7))
def while_that_runs_no_iteration(n):
    k = 0.5
    i = 0
    while i < n - 20:
        k = k * 2.0
        i += 1
    return k, i


@loop(_dominant_system, sizes=(4, 1, 7))
def gauss_seidel_while_around_a_for(A, b):
    # A `while` on the change around `for` loops of 0-d work: one C function.
    n = b.shape[0]
    x = np.zeros(n)
    change = 1.0
    sweeps = 0
    while change > 1e-10 and sweeps < 100:
        change = 0.0
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= A[i, j] * x[j]
            new = s / A[i, i]
            if abs(new - x[i]) > change:
                change = abs(new - x[i])
            x[i] = new
        sweeps += 1
    return x, sweeps


@loop(_signal, sizes=(4, 0, 1, 7))
def while_around_a_for_counts_passes(x):
    passes = 0
    swapped = True
    while swapped:
        swapped = False
        for i in range(x.shape[0] - 1):
            if x[i] > x[i + 1]:
                x[i], x[i + 1] = x[i + 1], x[i]
                swapped = True
        passes += 1
    return x, passes


@loop(lambda rng, n: (float(n) + 0.5, 1e-9), sizes=(4, 0, 1, 7))
def fixed_point_cosine_python_floats(x0, tol):
    x = x0
    k = 0
    while abs(np.cos(x) - x) > tol and k < 200:
        x = np.cos(x)
        k += 1
    return x, k


@loop(lambda rng, n: (np.array([6.0, 3.0, 9.0, -2.0, 1.5])[: n % 6],), sizes=(4, 0, 1, 7))
def while_running_product_python_float(x):
    # A top-level `while` on a Python float carried with NumPy float64s read from `x`.
    p = 1.0
    i = 0
    while i < x.shape[0] and p < 50.0:
        p = p * abs(x[i]) + 1.0
        i += 1
    return p, i


@loop(lambda rng, n: (np.array([n * 91 + 7], dtype=np.int64),), sizes=(4, 0, 1, 7))
def digit_sum_of_an_int64_element(x):
    m = x[0]
    total = np.int64(0)
    while m > 0:
        total += m % 10
        m //= 10
    return total, m


@loop(lambda rng, n: (float(n) + 0.25,), sizes=(4, 0, 1, 7))
def geometric_series_until_small(r):
    term = 1.0
    total = 0.0
    k = 0
    while term > 1e-9 and k < 500:
        total += term
        term = term * 0.5 / (1.0 + r)
        k += 1
    return total, k


# --- issue 23, while and early exits compiled whole: a return inside the loop ------------
# `for ...: if ...: return v` then other code: the loop carries whether it returned and
# what (numpile_capture.loop_return); the code after it runs only when it did not.


@loop(_signal, sizes=(4, 0, 1, 7))
def return_first_index_above(x):
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            return i
    return -1


@loop(_signal, sizes=(4, 0, 1, 7))
def return_first_index_in_band(x):
    for i in range(x.shape[0]):
        if x[i] > 0.5 and x[i] < 2.0:
            return i
    return -1


@loop(_signal, sizes=(4, 0, 1, 7))
def return_last_positive_index_reversed(x):
    for i in range(x.shape[0] - 1, -1, -1):
        if x[i] > 0.0:
            return i
    return -1


@loop(_signal, sizes=(4, 0, 1, 7))
def return_index_from_enumerate(x):
    for i, v in enumerate(x):
        if v < -1.0:
            return i
    return -1


@loop(_signal, sizes=(4, 0, 1, 7))
def return_element_over_the_array(x):
    for v in x:
        if v > 1.5:
            return v
    return np.float64(-1.0)


@loop(_two_signals, sizes=(4, 0, 1, 7))
def return_difference_over_zip(x, y):
    for a, b in zip(x, y, strict=True):
        if a > b + 1.0:
            return a - b
    return np.float64(0.0)


@loop(_signal, sizes=(4, 0, 1, 7))
def return_true_on_a_zero(x):
    for i in range(x.shape[0]):  # noqa: SIM110 - the loop is what is tested
        if x[i] == 0.0:
            return True
    return False


@loop(_signal, sizes=(4, 0, 1, 7))
def return_false_when_not_sorted(x):
    for i in range(x.shape[0] - 1):  # noqa: SIM110 - the loop is what is tested
        if x[i] > x[i + 1]:
            return False
    return True


@loop(_signal, sizes=(4, 0, 1, 7))
def return_computed_int(x):
    for i in range(x.shape[0]):
        if x[i] < -0.5:
            return i * 10 + 1
    return x.shape[0] * 100


@loop(_signal, sizes=(4, 0, 1, 7))
def return_running_sum_when_large(x):
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        s += x[i]
        if s > 2.0:
            return s * 2.0
    return s


@loop(_signal, sizes=(4, 0, 1, 7))
def return_after_writes_keeps_them(x):
    # The writes of the iterations before the return stay, as eager leaves them.
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0
        if x[i] > 2.0:
            return i
    return -1


@loop(_signal, sizes=(4, 0, 1, 7))
def return_skips_the_writes_after_the_loop(x):
    # The code after the loop (an in-place write) runs only when the loop did not return.
    for i in range(x.shape[0]):
        if x[i] < -2.0:
            return i
    x *= 2.0
    return -1


# 3.12+ copy the return of `-2 if total > 0.0 else -3` into both ways of the `if`.
@loop(_signal, sizes=(4, 0, 1, 7))
def return_and_break_in_one_loop(x):
    total = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] > 2.5:
            return i
        if x[i] < -2.5:
            break
        total += x[i]
    return -2 if total > 0.0 else -3


@loop(_signal, sizes=(4, 0, 1, 7))
def return_with_continue(x):
    count = 0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        count += 1
        if count == 3:
            return i
    return -count


@loop(_signal, sizes=(4, 0, 1, 7))
def return_from_an_elif(x):
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            return 1
        elif x[i] < -2.0:
            return 2
    return 0


@loop(_signal, sizes=(4, 0, 1, 7))
def return_element_plus_one(x):
    for i in range(x.shape[0]):
        if abs(x[i]) > 1.0:
            return x[i] + 1.0
    return np.float64(-1.0)


@loop(_bytes, sizes=(4, 0, 1, 7))
def return_uint32_checksum_on_zero_byte(data):
    h = np.uint32(7)
    for i in range(data.shape[0]):
        if data[i] == 0:
            return h
        h = (h ^ data[i]) & np.uint32(0xFFFF)
    return h + np.uint32(1)


@loop(lambda rng, n: (np.arange(n, dtype=np.int64) * 3 - 5,), sizes=(4, 0, 1, 7))
def return_first_multiple_of_four(x):
    for i in range(x.shape[0]):
        if x[i] > 0 and x[i] % 4 == 0:
            return x[i]
    return np.int64(-1)


@loop(_signal, sizes=(4, 0, 1, 7))
def return_count_at_threshold(x):
    count = 0
    for v in x:
        if v > 0.0:
            count += 1
            if count == 2:
                return count * 100
    return count


@loop(lambda rng, n: (np.sort(np.round(rng.standard_normal(n) * 3.0, 1)), 0.4), sizes=(4, 0, 1, 7))
def return_insertion_point_linear_search(x, v):
    for i in range(x.shape[0]):
        if x[i] >= v:
            return i
    return x.shape[0]


@loop(_grid_points, sizes=(4, 0, 1, 7))
def return_first_escaping_point(cr, ci):
    # A `while` with a compound test nested in a `for` that returns early.
    for p in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        k = 0
        while k < 30 and zr * zr + zi * zi <= 4.0:
            zr, zi = zr * zr - zi * zi + cr[p], 2.0 * zr * zi + ci[p]
            k += 1
        if k < 5:
            return p
    return -1


# --- Python integer semantics inside loops --------------------------------------------------


@loop(_vec)
def floor_division_and_modulo_of_negative_ints(x):
    acc = 0
    for i in range(-x.shape[0], x.shape[0]):
        acc = acc * 3 + i // 3 - i % 3 + (-7) // (abs(i) + 1) + 7 % -(abs(i) + 2)
    return acc, x * (acc % 5)


@loop(lambda rng, n: (rng.integers(-20, 20, n),))
def numpy_floor_division_and_modulo_of_negatives(x):
    for k in range(1, x.shape[0] // 2 + 1):
        x = x // -k + x % (k + 1) - np.fmod(x, k + 2)
    return x


@loop(_vec)
def shifts_of_negative_python_ints(x):
    acc = -1
    for i in range(x.shape[0]):
        acc = (acc << 3) - i
        acc = acc >> 1
    return acc, (-acc) >> 2, x * (acc >> 60)


@loop(lambda rng, n: (rng.integers(-1000, 1000, n),))
def numpy_shifts_of_negative_int64(x):
    for k in range(x.shape[0] // 2):
        x = (x >> 1) + (x << k)
    return x


# --- slices bounded by the loop index (the index as a bounded size symbol) ---------------------


@loop(_vec, sizes=(4, 0, 1, 7))
def prefix_sums_by_growing_slices(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[: i + 1].sum()
    return out


@loop(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)), sizes=(4, 0, 1, 7))
def suffix_times_reversed_prefix_dot(x, y):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i:] @ y[: n - i][::-1]
    return s


@loop(_spd, sizes=(4, 0, 1, 7))
def triangular_row_scaling_in_place(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, :j] *= 0.5
            A[j, j + 1 :] -= 0.25 * A[i, j]
    return A


@loop(_spd, sizes=(4, 1, 7))
def gaussian_elimination_row_updates(A):
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k:] -= (A[i, k] / A[k, k]) * A[k, k:]
    return A


@loop(_vec, sizes=(4, 0, 1, 7))
def reversed_prefix_overlaps_its_store(x):
    for k in range(1, x.shape[0]):
        x[:k] = x[:k] + 0.5 * x[k - 1 :: -1]
    return x


@loop(_mat, sizes=(4, 0, 1, 7))
def shifted_row_add_in_place_overlaps(A):
    for i in range(A.shape[0]):
        A[i, 1:-1] += A[i, :-2]
    return A


@loop(_vec, sizes=(4, 0, 1, 7))
def shift_right_by_index_overlapping(x):
    n = x.shape[0]
    for i in range(1, n):
        x[i:] = x[: n - i] * 0.5
    return x


@loop(_vec, sizes=(4, 0, 1, 7))
def negative_step_loop_with_suffix_slices(x):
    n = x.shape[0]
    out = np.zeros_like(x)
    for i in range(n - 1, -1, -2):
        out[i] = x[i:].sum() - x[:i:-1].sum()
    return out


@loop(_vec, sizes=(4, 0, 1, 7))
def slices_past_the_end_clamp(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i + 3 :].sum() + x[-i - 1 :].sum() + x[: i - 2].sum() + x[i : i + 100].sum()
    return s


@loop(_lower_system, sizes=(4, 0, 1, 7))
def forward_substitution_by_slices(L, b):
    n = b.shape[0]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    return y


@loop(_upper_system, sizes=(4, 0, 1, 7))
def back_substitution_by_slices(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


@loop(lambda rng, n: (rng.integers(-5, 5, (n, n)),), sizes=(4, 0, 1, 7))
def int_rows_prefix_dot_products(A):
    n = A.shape[0]
    out = np.zeros(n, dtype=A.dtype)
    for i in range(n):
        out[i] = A[i, :i] @ A[:i, i]
    return out


@loop(_vec, sizes=(4, 0, 1, 7))
def index_slice_as_scalar_fill(x):
    for i in range(x.shape[0]):
        x[i:] = x[i]
    return x


@invalid_loop(lambda rng, n: (np.zeros((3, 5)), rng.standard_normal(n)), sizes=(5, 7))
def index_out_of_bounds_after_sliced_writes(A, v):
    for i in range(v.shape[0]):
        A[i, : i + 1] = v[i]
    return A


# --- array-sized bodies: fused kernels called from the C loop (the trip count is an argument:
# the calls at sizes 0 and 1 run the same compiled loop with 0 and 1 iterations) ----------


def _grid_and_steps(rng, n):
    return (rng.standard_normal((6, 7)), n)


def _bodies_and_steps(rng, n):
    return (rng.standard_normal((5, 2)), rng.standard_normal((5, 2)) * 0.1, n)


@loop(_grid_and_steps, sizes=(4, 0, 1, 7))
def jacobi_2d_steps_argument(A, steps):
    A = A.copy()
    B = A.copy()
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )
    return A, B


@loop(_grid_and_steps, sizes=(4, 0, 1, 7))
def stencil_into_the_argument_in_place(A, steps):
    for _ in range(steps):
        A[1:-1, 1:-1] += 0.1 * (A[:-2, 1:-1] + A[2:, 1:-1] - 2.0 * A[1:-1, 1:-1])
    return A


@loop(_grid_and_steps, sizes=(4, 0, 1, 7))
def heat_2d_swapping_buffers(u, steps):
    v = u.copy()
    for _ in range(steps):
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.2 * (u[:-2, 1:-1] + u[2:, 1:-1] - 2.0 * u[1:-1, 1:-1])
        u, v = v, u
    return u, v


@loop(_bodies_and_steps, sizes=(4, 0, 1, 7))
def leapfrog_in_place_with_the_index(pos, vel, steps):
    for t in range(steps):
        pos += 0.05 * vel
        vel -= 0.05 * pos
        vel[0] = 0.0
        pos[-1, :] += t
    return pos, vel


@loop(_bodies_and_steps, sizes=(4, 0, 1, 7), rtol=1e-12)
def particles_carried_anew(pos, vel, steps):
    n = pos.shape[0]
    for _ in range(steps):
        d = pos.reshape(n, 1, 2) - pos.reshape(1, n, 2)
        r2 = (d * d).sum(axis=2) + 0.01
        acc = -(d * (r2**-1.5).reshape(n, n, 1)).sum(axis=1)
        vel = vel + acc * 0.001
        pos = pos + vel * 0.001
    return pos, vel


@loop(_grid_and_steps, sizes=(4, 0, 1, 7))
def stores_overlapping_their_reads(A, steps):
    for _ in range(steps):
        A[1:, :] = A[:-1, :] * 0.5 + 1.0
        A[:, :-1] += A[:, 1:]
    return A


@loop(
    lambda rng, n: (rng.integers(-5, 5, (4, 3)), rng.standard_normal((4, 3)) > 0, n),
    sizes=(4, 0, 1, 7),
)
def int_counts_with_mask_and_index(counts, mask, steps):
    total = counts * 0
    for t in range(steps):
        counts += mask
        total = total + counts * t
    return counts, total


@loop(lambda rng, n: (rng.standard_normal(8), n), sizes=(4, 0, 1, 7))
def time_loop_with_index_sized_slices(x, steps):
    for t in range(steps):
        x[: t + 1] += 1.0
        x = x * 0.5
    return x


# --- invalid loops: errors as eager raises them, with the earlier iterations' writes --------


@invalid_loop(lambda rng, n: (rng.standard_normal(n + 4),))
def index_out_of_bounds_in_fifth_iteration(x):
    for i in range(12):
        x[2 * i] += 1.0
    return x


@invalid_loop(_vec)
def index_out_of_bounds_with_symbolic_trip_count(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + x[i + 1]
    return x


@invalid_loop(_vec)
def range_step_zero_raises_value_error(x):
    for i in range(0, x.shape[0], 0):
        x[i] = 0.0
    return x


@invalid_loop(lambda rng, n: (rng.standard_normal(n), 0))
def range_step_argument_zero_after_a_write(x, step):
    x += 1.0
    for i in range(0, x.shape[0], step):
        x[i] = 0.0
    return x


@invalid_loop(lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal(n)))
def slice_shape_mismatch_in_fourth_iteration(A, v):
    for i in range(A.shape[0]):
        A[i, : i + 1] = v[: min(i, 2) + 1]
    return A


@invalid_loop(_vec)
def python_zero_division_in_a_later_iteration(x):
    acc = 0
    for i in range(x.shape[0]):
        acc += 12 // (3 - i)
        x[i] = acc
    return x


@invalid_loop(lambda rng, n: (np.zeros(n, dtype=np.int64),))
def python_int_too_large_for_an_int64_element(x):
    acc = 1
    for i in range(x.shape[0]):
        acc = acc * 1_000_003
        x[i] = acc
    return x


@invalid_loop(_vec)
def while_index_runs_past_the_end(x):
    i = 0
    while True:
        x[i] += 1.0
        i += 1


# -- issue 23, loops kept on 3.11-3.13 (loopcf26): `while True:` with breaks on run-time ----
# values (3.12+ copy the code after such a loop into each break), `continue` in nested loops.


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_breaks_on_running_sum(x):
    i = 0
    s = np.float64(0.0)
    while True:
        if i >= x.shape[0]:
            break
        s += x[i]
        if s > 2.0:
            break
        i += 1
    return s, i


@loop(lambda rng, n: (np.abs(rng.standard_normal(n + 1)) + 0.5,), sizes=(4, 0, 1, 7))
def while_true_newton_sqrt_of_an_element(a):
    x = a[0] + 2.0
    y = x
    steps = 0
    while True:
        y = 0.5 * (x + a[a.shape[0] - 1] / x)
        steps += 1
        if abs(y - x) < 1e-12:
            break
        x = y
    a[0] = y
    return a, steps


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_halvings_per_element(x):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for j in range(x.shape[0]):
        v = abs(x[j]) * 10.0 + 1.0
        n = 0
        while True:
            v = v * 0.5
            n += 1
            if v < 1.0:
                break
        out[j] = n
    return out


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_skips_negatives_with_continue(x):
    i = -1
    s = np.float64(0.0)
    while True:
        i += 1
        if i >= x.shape[0]:
            break
        if x[i] < 0.0:
            continue
        s += x[i]
        if s > 3.0:
            break
    return s, i


@loop(lambda rng, n: (np.round(rng.standard_normal((n, 3)) * 2.0, 1),), sizes=(4, 0, 1, 7))
def continue_in_an_inner_loop(a):
    s = 0.0
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            if a[r, c] < 0.0:
                continue
            s += a[r, c]
    return s


@loop(lambda rng, n: (np.round(rng.standard_normal((n, 3)) * 2.0, 1),), sizes=(4, 0, 1, 7))
def continue_outer_loop_before_its_inner_loop(a):
    s = 0.0
    for r in range(a.shape[0]):
        if a[r, 0] < 0.0:
            continue
        for c in range(a.shape[1]):
            if a[r, c] > 2.0:
                continue
            a[r, c] += 1.0
            s += a[r, c]
    return a, s


# -- issue 23, rows at a shifted index (loopcf26): `A[i - 1]`, `A[i + 1]`, `A[i - 1, j]` -----
# in loop bodies run as C; an index past the end raises eager's IndexError with the
# writes of the earlier iterations kept.


def _rows(rng, n):
    return (np.round(rng.standard_normal((n, 6)), 2),)


@loop(_rows, sizes=(4, 0, 1, 7))
def rows_smoothed_by_the_previous_row(A):
    for i in range(1, A.shape[0]):
        A[i] = A[i - 1] * 0.5 + np.tanh(A[i])
    return A


@loop(lambda rng, n: (np.round(rng.standard_normal((n, 5)), 2), np.zeros((n, 5))), sizes=(4, 1, 7))
def rows_differenced_with_the_next_row(A, D):
    for i in range(A.shape[0] - 1):
        D[i] = A[i + 1] - A[i]
    return D


@loop(_rows, sizes=(4, 0, 1, 7))
def dot_of_neighbouring_rows(A):
    s = np.zeros(A.shape[0])
    for i in range(1, A.shape[0]):
        s[i] = A[i - 1] @ A[i]
    return s


@loop(_rows, sizes=(4, 0, 1, 7))
def elements_accumulated_down_columns(A):
    for i in range(1, A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] += 0.5 * A[i - 1, j]
    return A


@loop(lambda rng, n: (np.round(rng.standard_normal((n + 2, 6)), 2),), sizes=(4, 0, 1, 7))
def gauss_seidel_rows_by_slices(A):
    for i in range(1, A.shape[0] - 1):
        A[i, 1:-1] = 0.25 * (A[i - 1, 1:-1] + A[i + 1, 1:-1] + A[i, :-2] + A[i, 2:])
    return A


@invalid_loop(lambda rng, n: (np.round(rng.standard_normal((n, 3)), 2), np.zeros((n, 3))))
def next_row_past_the_end_keeps_earlier_writes(A, D):
    for i in range(A.shape[0]):
        D[i] = A[i + 1] - A[i]
    return D


# -- issue 23, `for ... else` with a break (loopcf26): the clause runs only without a break --


@loop(_signal, sizes=(4, 0, 1, 7))
def for_else_gives_a_default_index(x):
    k = -1
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            k = i
            break
    else:
        k = -7
    return k


@loop(_signal, sizes=(4, 0, 1, 7))
def for_else_writes_only_without_a_break(x):
    total = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] < -2.5:
            break
        total += x[i]
        x[i] = total
    else:
        x *= 2.0
        total = total + 100.0
    return total


# -- issue 23, constructs kept on 3.11-3.13 (loopcf27): returns two levels deep and from
# `while` bodies, `while ... else` with a break, `or` / `and` / `not` break tests and locals
# first bound inside `while True:`, matrix-vector products on a shifted row --


def _grid(rng, n):
    return (np.round(rng.standard_normal((n, 3)) * 2.0, 1),)


@loop(_grid, sizes=(4, 0, 1, 7))
def return_from_a_nested_loop(A):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > 2.5:
                return i * 100 + j
    return -1


@loop(_grid, sizes=(4, 0, 1, 7))
def return_a_row_sum_from_a_nested_loop(A):
    total = np.float64(0.0)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] < -2.5:
                return total * 2.0
        total += A[i, 0]
    return -total


@loop(_grid, sizes=(4, 0, 1, 7))
def return_an_array_from_a_nested_loop(A):
    acc = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > 2.5:
                return acc * 2.0
        acc += A[i]
    return acc


@loop(_grid, sizes=(4, 0, 1, 7))
def return_a_pair_from_a_nested_loop(A):
    count = 0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            count += 1
            if A[i, j] > 2.5:
                return i, count
    return -1, count


@loop(_signal, sizes=(4, 0, 1, 7))
def return_from_a_while_body(x):
    i = 0
    s = np.float64(0.0)
    while i < x.shape[0]:
        s += x[i]
        if s > 2.0:
            return s * 10.0
        i += 1
    return -s


@loop(_signal, sizes=(4, 0, 1, 7))
def return_an_index_from_while_true(x):
    i = 0
    while True:
        if i >= x.shape[0]:
            return -1
        if x[i] < -2.0:
            return i
        i += 1


@loop(_signal, sizes=(4, 0, 1, 7))
def while_else_with_a_break(x):
    i = 0
    s = np.float64(0.0)
    while i < x.shape[0]:
        if x[i] > 2.0:
            break
        s += x[i]
        i += 1
    else:
        s = s + 100.0
    return s, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_else_writes_only_without_a_break(x):
    i = 0
    while i < x.shape[0]:
        if x[i] < -2.5:
            break
        x[i] = x[i] * 2.0
        i += 1
    else:
        x[:] = x + 1.0
    return x, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_breaks_on_an_or(x):
    i = 0
    s = np.float64(0.0)
    while True:
        if i >= x.shape[0] or s > 2.0:
            break
        s += x[i]
        i += 1
    return s, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_breaks_on_an_and(x):
    i = 0
    s = np.float64(0.0)
    while True:
        if i >= x.shape[0]:
            break
        s += abs(x[i])
        i += 1
        if i >= 2 and s > 3.0:
            break
    return s, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_breaks_on_a_not(x):
    i = 0
    s = np.float64(0.0)
    while True:
        if not (i < x.shape[0] and s < 2.0):
            break
        s += abs(x[i]) + 0.25
        i += 1
    return s, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_binds_a_local_read_after(x):
    y = np.concatenate([x, [5.0]])
    i = 0
    while True:
        v = y[i] * 2.0
        i += 1
        if v > 1.0 or i >= y.shape[0]:
            break
    return v, i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_binds_an_int_read_after(x):
    k = 0
    while True:
        last = k * k
        k += 1
        if k >= x.shape[0] or x[k - 1] > 1.5:
            break
    return last, k


def _recurrence(rng, n):
    hidden = 5
    return (
        np.concatenate([rng.standard_normal((1, hidden)), np.zeros((n, hidden))]),
        rng.standard_normal((hidden, hidden)) * 0.5,
        rng.standard_normal(hidden),
    )


@loop(_recurrence, sizes=(4, 0, 1, 7), rtol=1e-12, atol=1e-12)
def rnn_rows_by_a_matrix_product(H, W, b):
    for i in range(1, H.shape[0]):
        H[i] = np.tanh(W @ H[i - 1] + b)
    return H


@loop(_recurrence, sizes=(4, 0, 1, 7), rtol=1e-12, atol=1e-12)
def rnn_rows_by_a_transposed_product(H, W, b):
    for i in range(1, H.shape[0]):
        H[i] = np.maximum(H[i - 1] @ W, 0.0) - 0.5 * b
    return H


# -- issue 23, NumPy scalar constructors of the loop index (int64idx33): `x[np.int64(i)]`,
# `np.float64(i)`, `np.int32(n - i)` keep the loop (a `numpy_scalar` node, run as C) with
# NumPy's dtypes (NEP 50 against Python scalars and arrays) and NumPy's OverflowError.


@loop(_vec, sizes=(4, 0, 1, 7))
def sum_read_at_an_int64_of_the_index(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[np.int64(i)]
    return s


@loop(_mat, sizes=(4, 0, 1, 7))
def rows_scaled_by_a_float64_of_the_index(A):
    for i in range(A.shape[0]):
        A[np.int64(i), :] = A[np.int64(i), :] * np.float64(i) + 0.5
    return A


@loop(_vec, sizes=(4, 0, 1, 7))
def int32_countdown_of_the_index(x):
    n = x.shape[0]
    out = np.zeros(n, dtype=np.int32)
    for i in range(n):
        out[i] = np.int32(n - i) * 3 + np.int8(1)
    return out


@loop(lambda rng, n: (np.round(rng.standard_normal(n), 2), n + 3), sizes=(4, 0, 1, 7))
def float32_of_an_int_argument_meets_an_array(x, k):
    s = np.zeros((), dtype=np.float32)
    for i in range(x.shape[0]):
        s = s + np.float32(k - i) * x[i]
    return s


@loop(_vec, sizes=(4, 0, 1, 7))
def uint8_of_the_index_meets_python_scalars(x):
    small = np.zeros(x.shape[0], dtype=np.uint8)
    wide = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        small[i] = np.uint8(i) + 3
        wide[i] = np.uint8(i) * 2.5 + x[i]
    return small, wide


@invalid_loop(lambda rng, n: (np.zeros(n),))
def int8_of_the_index_overflows(x):
    for i in range(x.shape[0]):
        x[i] = np.int8(i * 100)
    return x


@invalid_loop(_vec)
def int64_of_the_index_past_the_end(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[np.int64(i + 1)]
    return s


# -- issue 23, the last loop forms (whiletrue38): loops inside `try` blocks (kept when nothing
# in the body may raise; a body that may raise, and constant tuples, are in the capture tests
# of test_capture_loop_forms.py), `while` tests that are chained comparisons of run-time
# values, a `while True:` ending a `for` body (3.12+ thread its break through the `for`'s
# jump back), loops over lists (unrolled by design: each item traced as it is).


@loop(_signal, sizes=(4, 0, 1, 7))
def squares_summed_inside_try(x):
    s = 0.0
    try:
        for i in range(x.shape[0]):
            s += x[i] * x[i]
    except IndexError:
        s = -1.0
    return s


@loop(_signal, sizes=(4, 0, 1, 7))
def newton_sqrt_inside_try_finally(x):
    a = np.abs(x).sum() + 1.0
    r = a
    k = 0
    try:
        while abs(r * r - a) > 1e-9 * a:
            r = 0.5 * (r + a / r)
            k += 1
    finally:
        x += 1.0
    return r, k, x


@loop(_signal, sizes=(4, 0, 1, 7))
def prefix_sums_with_a_try_in_the_body(x):
    for i in range(1, x.shape[0]):
        try:
            x[i] = x[i - 1] + x[i]
        except ValueError:
            x[i] = 0.0
    return x


@loop(_signal, sizes=(4, 0, 1, 7))
def while_chained_comparison_walks(x):
    i = 0
    while i < x.shape[0] and -1.5 < x[i] < 1.5:
        i += 1
    return i


@loop(_signal, sizes=(4, 0, 1, 7))
def while_chained_comparison_in_a_for(x):
    count = 0
    for j in range(x.shape[0]):
        v = x[j]
        k = 0
        while -2.0 < v <= 1.0 and k < 50:
            v = v * 1.5 + 0.37
            k += 1
        count += k
    return count


@loop(_signal, sizes=(4, 0, 1, 7))
def while_true_or_break_ends_a_for_body(x):
    steps = 0
    v = 0.0
    for j in range(x.shape[0]):
        v = abs(x[j]) + 0.25
        while True:
            v = v * 1.5
            steps += 1
            if v > 2.0 or steps > 50:
                break
    return steps, v


@loop(_signal)
def sums_over_a_list_of_views(x):
    total = np.float64(0.0)
    views = [x, x[::2], x[::-1] * 2.0]
    for w in views:
        total = total + w.sum()
    return total, w


# -- issue 23 (tupletry39): a `break` on a run-time value inside a loop over a tuple: the
# copies stay in one graph, each after the first guarded by a `cond` on the stop flag.


@loop(_signal)
def halving_over_a_tuple_until_small(x):
    n = 0
    for w in (0.5, 0.25, 0.125):
        x = x * w
        n += 1
        if np.abs(x).max() < 0.4:
            break
    return x, n, w


# A loop in a `try` block indexed by a counter its test bounds by an int argument: kept (and
# run as C) under a guard `N <= len(x)`; a call past the end captures again and the loop
# runs in Python, where the handler sees the IndexError.


@loop(lambda rng, n: (np.round(rng.standard_normal(n) * 2.0, 1), n - 1), sizes=(4, 1, 7))
def sum_to_a_counter_inside_try(x, N):
    s = 0.0
    k = 0
    try:
        while k < N:
            s = s + x[k] * x[k]
            k += 1
    except IndexError:
        s = -s
    return s, k
