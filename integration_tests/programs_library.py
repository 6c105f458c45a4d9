"""Library functions that stay one graph node (the extern-op table, issue 24): np.fft,
np.linalg, interp, histograms, convolve/correlate, searchsorted, polynomials, pad, einsum,
scipy.special's erf/erfc/gamma/gammaln, and np.random.Generator draws (bit-identical to eager,
the generator's state compared after each call). Edge sizes (1, 0) and NaN inputs where the
function defines them.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
from harness import program

library = functools.partial(program, "library")


def _vector(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal(n),)


def _with_nan(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    x = rng.standard_normal(n)
    if n:
        x[n // 2] = np.nan
    return (x,)


def _matrix(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, n)) + n * np.eye(n),)


def _spd(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n),)


def _tall(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n + 2, n)), rng.standard_normal(n + 2))


# -- np.fft -------------------------------------------------------------------------------------


@library(_vector, sizes=(4, 7, 1))
def fft_magnitude_fused(x):
    return np.abs(np.fft.fft(x * 2.0)) + 1.0


@library(_with_nan, sizes=(4, 7, 1))
def fft_of_nan_and_inverse(x):
    return np.fft.ifft(np.fft.fft(x), norm="ortho").real * 3.0


@library(_vector, sizes=(4, 7, 1))
def rfft_irfft_round_trip(x):
    spectrum = np.fft.rfft(np.sin(x))
    return np.fft.irfft(spectrum * 0.5, n=x.shape[0]) - x


@library(_vector, sizes=(4, 7, 2))
def hfft_and_ihfft(x):
    return np.fft.hfft(np.fft.ihfft(x) * 2.0), np.fft.ihfft(x + 1.0)


@library(lambda rng, n: (rng.standard_normal((n, n + 2)),), sizes=(4, 7, 1))
def fft2_shifted_power(x):
    power = np.abs(np.fft.fftshift(np.fft.fft2(x))) ** 2
    return np.fft.ifftshift(power) / power.sum()


@library(lambda rng, n: (rng.standard_normal((2, n, 3)),))
def fftn_ifftn_axes(x):
    forward = np.fft.fftn(x, axes=(0, 2))
    return np.fft.ifftn(forward * 2.0, axes=(0, 2)).real, np.fft.ifft2(x).imag


@library(lambda rng, n: (rng.standard_normal((n, 6)),))
def rfft2_rfftn_irfftn(x):
    half = np.fft.rfft2(x)
    back = np.fft.irfft2(half, s=x.shape)
    return back + 1.0, np.abs(np.fft.rfftn(x)), np.fft.irfftn(np.fft.rfftn(x), s=x.shape)


@library(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 7, 1))
def spectral_derivative(u):
    k = np.fft.fftfreq(4, d=0.25)
    return np.fft.ifft(1j * np.fft.fft(u, n=4) * k).real, np.fft.rfftfreq(5) * 2.0


# -- np.linalg ----------------------------------------------------------------------------------


@library(_spd, sizes=(4, 7, 1))
def cholesky_solve_chain(a):
    low = np.linalg.cholesky(a)
    return low @ low.T - a, np.linalg.eigvalsh(a) + 1.0


@library(lambda rng, n: (rng.standard_normal((n + 1, n)),), rtol=1e-6)
def qr_and_svd_reconstruct(a):
    q, r = np.linalg.qr(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return q @ r - a, (u * s) @ vh - a, np.linalg.svd(a, compute_uv=False) - s


@library(_spd, sizes=(4, 7, 1), rtol=1e-6)
def eigh_reconstruct(a):
    w, v = np.linalg.eigh(a)
    return (v * w) @ v.T - a, np.abs(v).sum(axis=0)


@library(_matrix, rtol=1e-6)
def pinv_slogdet_cond(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.linalg.pinv(a) @ a, sign * np.exp(logdet) - np.linalg.det(a), np.linalg.cond(a)


@library(_tall, rtol=1e-6)
def lstsq_line_fit(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return a @ x - b, residuals.sum(), rank, s


@library(_matrix, rtol=1e-6)
def matrix_power_rank_multi_dot(a):
    cubed = np.linalg.matrix_power(a, 3)
    chained = np.linalg.multi_dot([a, a, a])
    return cubed - chained, np.linalg.matrix_rank(a), np.linalg.svdvals(a)


@library(lambda rng, n: (rng.standard_normal((6, 6)) + 6 * np.eye(6), rng.standard_normal((2, 3))))
def tensorinv_tensorsolve(a, b):
    tensor = a.reshape(6, 2, 3)
    return np.linalg.tensorinv(tensor, ind=1).shape, np.linalg.tensorsolve(a.reshape(2, 3, 6), b)


@library(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n, 3))))
def array_api_linalg(a, b):
    return (
        np.linalg.cross(a, b),
        np.linalg.vecdot(a, b),
        np.linalg.outer(a[0], b[0]),
        np.linalg.vector_norm(a, axis=1),
        np.linalg.matrix_norm(a[:3]),
        np.linalg.trace(a[:3]),
        np.linalg.diagonal(a[:3]),
        np.linalg.matmul(a.T, b),
        np.linalg.tensordot(a, b, axes=2),
        np.linalg.matrix_transpose(a),
    )


# -- numerical helpers ---------------------------------------------------------------------------


@library(
    lambda rng, n: (rng.uniform(-1, 5, n), np.arange(5.0), rng.standard_normal(5)),
    sizes=(4, 7, 1, 0),
)
def interp_resample(x, xp, fp):
    return np.interp(x, xp, fp) * 2.0, np.interp(x, xp, fp, left=-1.0, right=np.nan)


@library(_with_nan, sizes=(4, 7, 1, 0))
def interp_nan_and_period(x):
    return np.interp(x, np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0]), period=2.0)


@library(lambda rng, n: (rng.standard_normal(n * 10),), sizes=(4, 7, 1, 0))
def histogram_counts_and_density(x):
    counts, edges = np.histogram(x, bins=8, range=(-3.0, 3.0))
    density, _ = np.histogram(x, bins=np.linspace(-2, 2, 5), density=True)
    return counts * 2, edges, density


@library(_with_nan, sizes=(4, 7, 1))
def histogram_ignores_nan_with_range(x):
    return np.histogram(x, bins=4, range=(-1.0, 1.0))[0]


@library(lambda rng, n: (rng.standard_normal(n * 5), rng.standard_normal(n * 5)), sizes=(4, 7, 0))
def histogram2d_weighted(x, y):
    h, xe, ye = np.histogram2d(x, y, bins=(3, 4), range=((-2, 2), (-2, 2)), weights=x * x)
    return h, xe + ye[:4]


@library(lambda rng, n: (rng.standard_normal(n + 3), rng.standard_normal(3)), sizes=(4, 7, 1))
def convolve_and_correlate(x, k):
    return (
        np.convolve(x, k) * 2.0,
        np.convolve(x, k, mode="same"),
        np.correlate(x, k),
        np.correlate(x, k, mode="full"),
    )


@library(
    lambda rng, n: (np.sort(rng.standard_normal(n)), rng.standard_normal(n + 2)), sizes=(4, 7, 1, 0)
)
def searchsorted_sides(a, v):
    return np.searchsorted(a, v), np.searchsorted(a, v, side="right") + 1


@library(lambda rng, n: (rng.standard_normal(n + 3), rng.standard_normal(n + 3)), rtol=1e-6)
def polyfit_polyval(x, y):
    p = np.polyfit(x, y, 2)
    return np.polyval(p, x) - y, np.polyval(np.array([1.0, -2.0, 0.5]), x)


@library(lambda rng, n: (rng.standard_normal((n, 3)),), sizes=(4, 7, 1))
def pad_modes(x):
    return (
        np.pad(x, ((1, 2), (0, 1))) + 1.0,
        np.pad(x, 1, mode="edge"),
        np.pad(x, ((0, 0), (2, 2)), mode="constant", constant_values=-1.0),
    )


@library(lambda rng, n: (rng.standard_normal((n, 3, 4)), rng.standard_normal((4, 5))))
def einsum_unlowered_paths(a, b):
    return np.einsum("bij,jk->bik", a, b, optimize=True) * 2.0, np.einsum("bii->b", a[:, :, :3])


if importlib.util.find_spec("scipy") is not None:
    # SciPy is optional (no package depends on it): without it this program cannot run eagerly.

    @library(_with_nan, sizes=(4, 7, 1, 0))
    def special_functions(x):
        import scipy.special as sp

        return sp.erf(x) + sp.erfc(x * 2.0), sp.gamma(np.abs(x) + 0.5), sp.gammaln(x * x + 1.0)


# -- np.random.Generator ---------------------------------------------------------------------------


def _with_generator(rng: np.random.Generator, n: int) -> tuple[object, ...]:
    return rng.standard_normal(n), np.random.default_rng(1234)


@library(_with_generator, sizes=(4, 7, 1))
def generator_draws_in_program_order(x, gen):
    noise = gen.normal(0.0, 0.5, size=x.shape)
    gen.random(3)  # unused: still advances the state, as in eager
    u = gen.uniform(x, x + 1.0)
    k = gen.integers(0, 10, size=x.shape)
    return x + noise * u, k


@library(_with_generator, sizes=(4, 7))
def generator_distributions(x, gen):
    return (
        gen.standard_normal(x.shape, dtype=np.float32),
        gen.exponential(2.0, size=4),
        gen.poisson(np.abs(x) + 1.0),
        gen.binomial(10, 0.25, size=3),
        gen.gamma(2.0, size=2),
        gen.beta(2.0, 3.0, size=2),
        gen.lognormal(size=2),
        gen.permutation(x),
        gen.choice(5, size=3, replace=False),
        gen.standard_exponential(2),
        gen.laplace(size=2) + gen.logistic(size=2) + gen.geometric(0.5, size=2),
        gen.standard_t(3.0, size=2) + gen.chisquare(2.0, size=2),
    )


@library(_with_generator, sizes=(4, 7))
def monte_carlo_pi(x, gen):
    points = gen.random((x.shape[0] * 100, 2))
    inside = (points**2).sum(axis=1) <= 1.0
    return 4.0 * inside.mean() + x.sum() * 0.0


@library(lambda rng, n: (rng.standard_normal((n, 3)),), sizes=(4, 7, 1))
def diff_orders_and_axes(x):
    return np.diff(x) * 2.0, np.diff(x, n=2, axis=0), np.diff(x > 0.0, axis=0)


# -- edge inputs the functions above define (issue 24: random, 1-element, empty, NaN) ----------


@library(_vector, sizes=(4, 1, 0))
def window_functions(x):
    # A window of the signal's own length (0 and 1 included: NumPy gives [] and [1.]).
    n = x.shape[0]
    return (
        x * np.hanning(n) + np.hamming(n),
        np.blackman(n) - np.bartlett(n),
        np.kaiser(n, 5.0) * x.sum(),
    )


@library(_matrix, sizes=(4, 1), fullgraph=False)
def eig_and_eigvals_break(a):
    # A real matrix's eigenvalues are real or complex depending on the values: np.linalg.eig
    # and eigvals are graph breaks (the refuse rule), the code around them still compiles.
    w = np.linalg.eigvals(a * 2.0)
    values, vectors = np.linalg.eig(a)
    return np.sort_complex(w) + 1.0, np.abs(vectors).sum(axis=0) * np.abs(values)


@library(_vector, sizes=(0,), expect_error=True)
def fft_of_an_empty_signal(x):
    return np.fft.rfft(x * 2.0)


@library(lambda rng, n: (np.full((n, n), np.nan),), sizes=(3,), expect_error=True)
def svd_of_nan_does_not_converge(a):
    return np.linalg.svd(a + 1.0)[1]


@library(_with_nan, sizes=(4,), expect_error=True)
def histogram_of_nan_without_a_range(x):
    return np.histogram(x * 2.0, bins=4)[0]


def _sorted_with_nan(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    v = rng.standard_normal(n + 1)
    v[-1] = np.nan
    return np.append(np.sort(rng.standard_normal(n)), np.nan), v


@library(_sorted_with_nan, sizes=(4, 1))
def searchsorted_with_nan(a, v):
    # NaN sorts last: searching for it gives its place at the end, on both sides.
    return np.searchsorted(a, v), np.searchsorted(a, v * 2.0, side="right")


@library(_with_generator, sizes=(4, 1, 0))
def generator_draws_of_size_one_and_zero(x, gen):
    # Draws whose size is the input's (1 and 0 included) and draws of size 0 (the state
    # does not move) between ones that do.
    empty = gen.standard_normal(0)
    return gen.normal(0.0, 1.0, size=x.shape) + x, empty, gen.integers(0, 5, size=(x.shape[0], 2))
