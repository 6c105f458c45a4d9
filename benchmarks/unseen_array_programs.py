"""Unseen arrays (round 2 goals): loop-free NumPy programs written the way users write them,
new to the compiler when they were added (round 2, fifteenth session), to find what breaks
on array programs nobody tuned it for: stencils (np.roll, slices, 3-D, Sobel, np.pad in
each mode), convolutions, einsum contractions, small and batched linear algebra, tensordot,
kron, matmul of 1-d/2-d/3-d mixes, boolean mask assignment, repeated indices, sorting,
scans, narrow-integer wrap-around, NEP 50 with Python scalars, NaN-aware reductions,
non-contiguous and Fortran inputs, `out=` ufunc arguments, views returned, floating-point
warnings, the numerics of softmax / logsumexp / layernorm, and invalid inputs.

`PROGRAMS` holds each with its input factory `(rng, n) -> args`, the sizes to check it
at, its tolerance and whether NumPy rejects it (``expect_error``).
``python -m benchmarks.unseen_arrays`` checks and times them all; the corpus
(integration_tests/programs_unseen_arrays.py) runs the few that found a bug.

    >>> import numpy as np
    >>> PROGRAMS["laplacian_5pt_roll"].fn(np.ones((3, 3))).sum()
    np.float64(0.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

Factory = Callable[[np.random.Generator, int], tuple[Any, ...]]


@attrs.frozen
class UnseenArrays:
    """One program: the function, its input factory, the sizes it is checked at, the
    relative tolerance of its floats (None: exact) and whether NumPy raises on it."""

    fn: Callable[..., Any]
    inputs: Factory
    sizes: tuple[int, ...] = (4, 7)
    rtol: float | None = None
    atol: float | None = None
    expect_error: bool = False


#: Every program by name, in the order of this module.
PROGRAMS: dict[str, UnseenArrays] = {}


def unseen(
    inputs: Factory,
    *,
    sizes: tuple[int, ...] = (4, 7),
    rtol: float | None = None,
    atol: float | None = None,
    expect_error: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated program under its name and return it unchanged."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS[fn.__name__] = UnseenArrays(fn, inputs, sizes, rtol, atol, expect_error)
        return fn

    return register


def _grid(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n + 2, n + 3)),)


def _spd_batch(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    a = rng.standard_normal((n, 3, 3))
    return (a @ a.transpose(0, 2, 1) + 3 * np.eye(3),)


# --- stencils -----------------------------------------------------------------------------


@unseen(_grid)
def laplacian_5pt_roll(u):
    return (
        np.roll(u, 1, axis=0)
        + np.roll(u, -1, axis=0)
        + np.roll(u, 1, axis=1)
        + np.roll(u, -1, axis=1)
        - 4 * u
    )


@unseen(_grid)
def laplacian_5pt_slices_into_copy(u):
    out = u.copy()
    out[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    return out


@unseen(_grid)
def box_blur_9pt(u):
    c = u[1:-1, 1:-1]
    edges = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
    corners = u[:-2, :-2] + u[:-2, 2:] + u[2:, :-2] + u[2:, 2:]
    return (4 * c + 2 * edges + corners) / 16


@unseen(lambda rng, n: (rng.standard_normal((n, n + 1, 5)),))
def heat_3d_7pt_step(u):
    lap = (
        u[:-2, 1:-1, 1:-1]
        + u[2:, 1:-1, 1:-1]
        + u[1:-1, :-2, 1:-1]
        + u[1:-1, 2:, 1:-1]
        + u[1:-1, 1:-1, :-2]
        + u[1:-1, 1:-1, 2:]
        - 6 * u[1:-1, 1:-1, 1:-1]
    )
    nxt = u.copy()
    nxt[1:-1, 1:-1, 1:-1] += 0.1 * lap
    return nxt


@unseen(lambda rng, n: (rng.random((n + 3, n + 2)).astype(np.float32),))
def sobel_magnitude_f32(img):
    gx = (
        img[:-2, 2:]
        + 2 * img[1:-1, 2:]
        + img[2:, 2:]
        - img[:-2, :-2]
        - 2 * img[1:-1, :-2]
        - img[2:, :-2]
    )
    gy = (
        img[2:, :-2]
        + 2 * img[2:, 1:-1]
        + img[2:, 2:]
        - img[:-2, :-2]
        - 2 * img[:-2, 1:-1]
        - img[:-2, 2:]
    )
    return np.hypot(gx, gy), np.arctan2(gy, gx)


@unseen(_grid)
def padded_stencils_each_mode(u):
    results = []
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
        p = np.pad(u, 1, mode=mode)
        results.append(p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u)
    return results


@unseen(lambda rng, n: (rng.standard_normal(4 * n), rng.random(3).astype(np.float32)), rtol=1e-6)
def moving_average_and_matched_filter(x, k):
    w = k / k.sum()
    return np.convolve(x, w, mode="valid"), np.correlate(x, k, mode="same")


# --- contractions and linear algebra ------------------------------------------------------


@unseen(lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal((n, 3))), rtol=1e-6)
def einsum_diagonal_total_and_products(a, b):
    return (
        np.einsum("ii->i", a),
        np.einsum("ij->", a),
        np.einsum("ij,jk->ik", a.T, b),
        np.einsum("ij,j->i", a, b[:, 0]),
        np.einsum("i,i->", b[:, 1], b[:, 2]),
    )


@unseen(lambda rng, n: (rng.standard_normal((n, 3, 4)), rng.standard_normal((n, 4, 2))), rtol=1e-6)
def einsum_batched_and_bilinear(a, b):
    return (
        np.einsum("bij,bjk->bik", a, b),
        np.einsum("bij,bjk->", a, b),
        np.einsum("bii->b", a[:, :, :3]),
    )


@unseen(
    lambda rng, n: (rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal((3, n))),
    rtol=1e-6,
)
def small_solve_inv_det_norm(a, b):
    x = np.linalg.solve(a, b)
    return (
        x,
        np.linalg.inv(a) @ b,
        np.linalg.det(a),
        np.linalg.norm(x),
        np.linalg.norm(x, axis=0),
        np.linalg.norm(a, "fro"),
        np.linalg.norm(a, np.inf),
        np.linalg.norm(b[:, 0], 1),
    )


@unseen(lambda rng, n: (*_spd_batch(rng, n), rng.standard_normal((n, 3, 1))), rtol=1e-6)
def batched_solve_inv_det_cholesky(a, b):
    return (
        np.linalg.solve(a, b),
        np.linalg.inv(a),
        np.linalg.det(a),
        np.linalg.cholesky(a),
        np.linalg.norm(a, axis=(1, 2)),
    )


@unseen(lambda rng, n: (rng.standard_normal((n + 3, n)),), rtol=1e-6, atol=1e-12)
def qr_least_squares_residual(a):
    q, r = np.linalg.qr(a)
    return np.abs(q @ r - a).max() < 1e-9, np.abs(np.diag(r))


@unseen(
    lambda rng, n: (rng.standard_normal((n, 3, 4)), rng.standard_normal((4, 3, 2))),
    sizes=(4,),
    rtol=1e-6,
)
def tensordot_kron_outer(a, b):
    return (
        np.tensordot(a, b, axes=([1, 2], [1, 0])),
        np.tensordot(a[0], b[:, :, 0], axes=1),
        np.kron(a[0, :2, :2], b[:2, 0, :]),
        np.outer(a[0], b[0]),
    )


@unseen(
    lambda rng, n: (
        rng.standard_normal(4),
        rng.standard_normal((n, 4, 3)),
        rng.standard_normal((3, 4)),
    ),
    rtol=1e-6,
)
def matmul_one_two_three_d_mixes(v, t, m):
    return v @ t, t @ v[:3], m @ t, t @ m, v @ m.T @ v[:3]


# --- masks, repeated indices, sorting, scans ----------------------------------------------


@unseen(lambda rng, n: (rng.standard_normal((n, 5)), rng.standard_normal(5)))
def mask_assignment_on_a_copy(x, row):
    y = x.copy()
    y[y > 0] = 0
    z = x.copy()
    z[:, row > 0] = row[row > 0]
    return y, z


@unseen(
    lambda rng, n: (
        rng.standard_normal((n, 3)),
        rng.standard_normal(3),
        rng.integers(-3, 3, (n, 1)),
    )
)
def where_broadcast_scalars_and_ints(x, row, k):
    return (
        np.where(x > 0, x, 0),
        np.where(k > 0, row, 0.5),
        np.where(k < 0, k, 7),
        np.where(x > row, 1, 0),
    )


@unseen(lambda rng, n: (np.zeros(5), rng.integers(0, 5, 3 * n), rng.standard_normal(3 * n)))
def repeated_index_updates(x, idx, w):
    buffered = x.copy()
    buffered[idx] += 1
    unbuffered = x.copy()
    np.add.at(unbuffered, idx, 1)
    weighted = x.copy()
    np.add.at(weighted, idx, w)
    last_wins = x.copy()
    last_wins[idx] = w
    return buffered, unbuffered, weighted, last_wins


@unseen(lambda rng, n: (rng.integers(0, 4, (n, 6)).astype(np.float64), rng.integers(0, 6, 2 * n)))
def sort_argsort_unique_searchsorted(x, labels):
    s = np.sort(x, axis=-1)
    return (
        s,
        np.sort(x, axis=0),
        np.argsort(x, axis=1, kind="stable"),
        np.argsort(-x[:, 0], kind="stable"),
        np.unique(labels),
        np.searchsorted(s[0], [0.5, 1.0, 3.0], side="right"),
    )


@unseen(
    lambda rng, n: (rng.standard_normal((n, 4)), rng.integers(-100, 100, 2 * n).astype(np.int8))
)
def cumsum_diff_gradient(x, small):
    return (
        np.cumsum(x, axis=0),
        np.cumsum(small),
        np.cumsum(small, dtype=np.int8),
        np.diff(x, axis=1, prepend=0.0),
        np.gradient(x[:, 0]),
        np.gradient(x, 0.5, axis=1),
        np.gradient(x),
    )


# --- dtypes, NEP 50, special values ---------------------------------------------------------


@unseen(
    lambda rng, n: (
        rng.integers(-128, 128, 3 * n).astype(np.int8),
        rng.integers(0, 256, 3 * n).astype(np.uint8),
        rng.integers(-32768, 32768, 3 * n).astype(np.int16),
    )
)
def narrow_integers_wrap(a, u, h):
    return (
        a * a,
        a + 100,
        -a,
        np.abs(a),
        u + u,
        u - 200,
        u * 3,
        h * h,
        h + a,
        u + a,
        a // 3,
        a % -3,
        u >> 3,
        a.sum(),
        a.sum(dtype=np.int8),
    )


@unseen(
    lambda rng, n: (
        rng.standard_normal(n).astype(np.float32),
        rng.standard_normal(n),
        rng.integers(-9, 9, n).astype(np.int32),
        rng.random(n) > 0.5,
    )
)
def nep50_mixed_kinds(f32, f64, i32, b):
    return (
        f32 + 1.5,
        f32 * 2,
        f32 + f64,
        f32 + np.float64(1.5),
        i32 + 2.5,
        i32 * 3,
        i32 + f32,
        b + b,
        b * 2,
        b + 0.5,
        f32 + i32.astype(np.int64),
        np.float32(3.0) * i32,
        f32 / 3,
        i32 / 2,
        i32**2,
    )


@unseen(lambda rng, n: (np.where(rng.random((n, 5)) < 0.2, np.nan, rng.standard_normal((n, 5))),))
def nan_max_argmax_and_nan_aware(x):
    y = np.where(np.isnan(x), np.inf, x)
    return (
        np.max(x, axis=1),
        np.min(x, axis=0),
        np.argmax(x, axis=1),
        np.argmin(x),
        np.fmax(x, 0.0),
        np.maximum(x, 0.0),
        np.nanmax(np.where(np.isnan(x[:, :1]), 0.0, x), axis=1),
        np.nansum(x, axis=0),
        np.max(y),
        np.argmax(y, axis=0),
    )


@unseen(
    lambda rng, n: (
        rng.standard_normal((n, 3))[::-2, ::-1],
        np.asfortranarray(rng.standard_normal((n, 3))),
    )
)
def negative_stride_and_fortran_stencil(a, f):
    return a[1:] - a[:-1], f[:, 1:] + f[:, :-1], a.T @ f[: a.shape[0]], np.cumsum(f, axis=1)


@unseen(lambda rng, n: (rng.standard_normal((n, 4)), rng.standard_normal(4)))
def ufunc_out_arguments(x, row):
    y = np.empty_like(x)
    np.multiply(x, row, out=y)
    np.add(y, 1.0, out=y)
    z = np.exp(row, out=np.empty(4))
    np.negative(x[:, ::2], out=x[:, ::2])
    return y, z, x


@unseen(lambda rng, n: (rng.standard_normal((n, 4)),))
def views_of_inputs_returned(x):
    return x[1:-1], x.T, x.reshape(-1), x[::-1, 1], x[..., None], x + 0


@unseen(lambda rng, n: (rng.standard_normal((n, 8)).astype(np.float32) * 40,), rtol=1e-5)
def softmax_logsumexp_layernorm_large(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    softmax = e / e.sum(axis=-1, keepdims=True)
    lse = m[:, 0] + np.log(e.sum(axis=-1))
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    ln = (x - mu) / np.sqrt(var + np.float32(1e-5))
    log_softmax = x - m - np.log(e.sum(axis=-1, keepdims=True))
    return softmax, lse, ln, log_softmax


@unseen(lambda rng, n: (np.zeros((0, n)), np.array(2.5), rng.standard_normal((n, 0))))
def empty_and_zero_d(e, s, e2):
    return (
        e.sum(axis=0),
        e.sum(axis=1),
        np.cumsum(e, axis=1),
        e2 @ e,
        np.roll(e, 1, axis=1),
        s * 2,
        np.sqrt(s),
        s[()],
        np.argmax(s),
        e2.sum(axis=1),
    )


@unseen(lambda rng, n: (rng.standard_normal(n), np.arange(n) % 3 - 1.0))
def floating_point_warnings(x, d):
    return (
        x / d,
        np.log(d + 1),
        np.sqrt(d),
        np.arccos(2 * d),
        np.exp(d * 1000),
        np.floor_divide(x, d),
    )


@unseen(lambda rng, n: (rng.integers(-5, 5, n), np.arange(n) % 3 - 1))
def integer_divide_by_zero_warns(a, d):
    return a // d, a % d, np.divide(a, d)


@unseen(expect_error=True, inputs=lambda rng, n: (np.ones((3, 3)), rng.standard_normal(3)))
def solve_of_singular_raises(a, b):
    return np.linalg.solve(a, b)


@unseen(expect_error=True, inputs=lambda rng, n: (-np.eye(n),))
def cholesky_of_indefinite_raises(a):
    return np.linalg.cholesky(a) + 1


@unseen(expect_error=True, inputs=lambda rng, n: (rng.standard_normal((n, 3)),))
def inv_of_non_square_raises(a):
    return np.linalg.inv(a)


@unseen(expect_error=True, inputs=lambda rng, n: (np.zeros((0, n)),))
def max_of_empty_raises(e):
    return np.max(e, axis=0)


@unseen(expect_error=True, inputs=lambda rng, n: (rng.integers(0, 9, n).astype(np.int32),))
def python_int_too_big_for_int32_raises(i32):
    return i32 + 2**40


@unseen(expect_error=True, inputs=lambda rng, n: (rng.integers(0, 9, n).astype(np.uint8),))
def negative_python_int_for_uint8_raises(u):
    return u + -1


from . import unseen_programs_third  # noqa: E402, F401 - registers the third set's arrays
