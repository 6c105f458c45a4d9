"""Spectral methods, signal processing, Monte Carlo, histograms, resampling, sparse-like
gathers and polynomial fits: the kernels of issue 24 that call library functions (np.fft,
np.convolve, np.random.Generator, np.histogram, np.interp, np.bincount, np.polyfit), which
numpile keeps as extern nodes of one graph so the elementwise work around them fuses.

    >>> len(KERNELS) >= 10
    True
    >>> sorted({k.family for k in KERNELS})
    ['spectral']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import ScienceKernel

__all__ = ["KERNELS"]


def _rng(size: int) -> np.random.Generator:
    return np.random.default_rng(size)


# -- spectral methods --------------------------------------------------------------------------


def poisson_fft(f: Any, kx: Any, ky: Any) -> Any:
    """Solve the periodic Poisson equation lap(u) = f on a square grid by FFT."""
    k2 = kx[:, None] ** 2 + ky[None, :] ** 2
    k2[0, 0] = 1.0
    u_hat = -np.fft.fft2(f) / k2
    u_hat[0, 0] = 0.0
    return np.fft.ifft2(u_hat).real


def _poisson_inputs(size: int) -> tuple[Any, ...]:
    n = size
    x = np.linspace(0, 2 * np.pi, n, endpoint=False)
    f = np.sin(x)[:, None] * np.cos(2 * x)[None, :] + 0.01 * _rng(size).standard_normal((n, n))
    k = np.fft.fftfreq(n, d=1.0 / n) * 1.0
    return f, k, k.copy()


def spectral_derivative(u: Any, k: Any) -> Any:
    """The derivative of a periodic signal and its energy, by the real FFT."""
    du = np.fft.irfft(1j * k * np.fft.rfft(u), n=u.shape[0])
    return du, 0.5 * np.sum(du * du) / u.shape[0]


def _derivative_inputs(size: int) -> tuple[Any, ...]:
    x = np.linspace(0, 2 * np.pi, size, endpoint=False)
    u = np.sin(3 * x) + 0.1 * _rng(size).standard_normal(size)
    return u, np.fft.rfftfreq(size, d=1.0 / size)


def fft_convolution(signal: Any, kernel: Any) -> Any:
    """Linear convolution of a long signal with a short kernel by zero-padded real FFTs."""
    n = signal.shape[0] + kernel.shape[0] - 1
    spectrum = np.fft.rfft(signal, n=n) * np.fft.rfft(kernel, n=n)
    return np.fft.irfft(spectrum, n=n)


def _convolution_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return rng.standard_normal(size), np.hanning(257) / np.hanning(257).sum()


def power_spectrum(x: Any) -> Any:
    """A windowed, normalized power spectrum in decibels."""
    window = np.hanning(x.shape[-1])
    spectrum = np.abs(np.fft.rfft((x - x.mean(axis=-1, keepdims=True)) * window)) ** 2
    return 10.0 * np.log10(spectrum / spectrum.sum(axis=-1, keepdims=True) + 1e-12)


def _spectrum_inputs(size: int) -> tuple[Any, ...]:
    return (_rng(size).standard_normal((64, size)),)


# -- signal filtering -------------------------------------------------------------------------


def fir_filter(x: Any, taps: Any) -> Any:
    """A FIR low-pass with np.convolve, then rectification and a gain."""
    y = np.convolve(x, taps, mode="same")
    return np.sqrt(y * y + 1e-6) * 2.0 - 0.5 * x


def _fir_inputs(size: int) -> tuple[Any, ...]:
    taps = np.sinc(np.linspace(-4, 4, 33)) * np.hamming(33)
    return _rng(size).standard_normal(size), taps / taps.sum()


def iir_like_filter(x: Any, decay: Any) -> Any:
    """An exponential smoother (a one-pole IIR) as a truncated impulse response, and its
    detrended residual."""
    smooth = np.convolve(x, decay, mode="full")[: x.shape[0]]
    residual = x - smooth
    return smooth, residual / (np.abs(residual).max() + 1e-12)


def _iir_inputs(size: int) -> tuple[Any, ...]:
    alpha = 0.05
    decay = alpha * (1 - alpha) ** np.arange(128)
    return _rng(size).standard_normal(size), decay


# -- Monte Carlo --------------------------------------------------------------------------


def monte_carlo_pi(gen: Any, n: int) -> Any:
    """Estimate pi from points drawn uniformly in the unit square."""
    points = gen.random((n, 2))
    inside = (points * points).sum(axis=1) <= 1.0
    return 4.0 * inside.mean()


def option_pricing(gen: Any, spot: Any, strike: float, rate: float, vol: float) -> Any:
    """A European call on each spot by Monte Carlo on terminal prices of geometric Brownian
    motion (one year)."""
    z = gen.standard_normal((spot.shape[0], 512))
    terminal = spot[:, None] * np.exp((rate - 0.5 * vol * vol) + vol * z)
    payoff = np.maximum(terminal - strike, 0.0)
    return np.exp(-rate) * payoff.mean(axis=1)


# -- histograms, resampling, sparse-like gathers, polynomials ----------------------------------


def histogram_normalized(x: Any) -> Any:
    """A density histogram of standardized data and its cumulative distribution."""
    z = (x - x.mean()) / x.std()
    counts, edges = np.histogram(z, bins=64, range=(-4.0, 4.0))
    density = counts / (counts.sum() * (edges[1] - edges[0]))
    return density, np.cumsum(density) * (edges[1] - edges[0])


def interp_resample(t_new: Any, t: Any, y: Any) -> Any:
    """Resample an irregularly sampled signal onto a regular grid, then smooth its slope."""
    resampled = np.interp(t_new, t, y)
    slope = np.diff(resampled) / np.diff(t_new)
    return resampled, np.tanh(slope)


def _interp_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    t = np.sort(rng.uniform(0, 100, size))
    return np.linspace(1, 99, size * 2), t, np.sin(t) + 0.1 * rng.standard_normal(size)


def csr_spmv_bincount(data: Any, rows: Any, cols: Any, x: Any) -> Any:
    """y = A @ x for a sparse A in coordinate form: a gather of x and a bincount per row."""
    products = data * x[cols]
    y = np.bincount(rows, weights=products, minlength=x.shape[0])
    return y / (np.abs(y).max() + 1e-12)


def _spmv_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    nnz = size * 8
    rows = np.sort(rng.integers(0, size, nnz))
    return rng.standard_normal(nnz), rows, rng.integers(0, size, nnz), rng.standard_normal(size)


def scatter_add_at(values: Any, index: Any, n: int) -> Any:
    """A scatter-add with np.add.at (one `ufunc_at` node in numpile), then a normalization."""
    out = np.zeros(n)
    np.add.at(out, index, values * values)
    return np.sqrt(out) / n


def _scatter_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return rng.standard_normal(size * 4), rng.integers(0, size, size * 4), size


def polyfit_detrend(t: Any, y: Any) -> Any:
    """Remove a cubic trend from a signal and report the residual's spread."""
    coefficients = np.polyfit(t, y, 3)
    residual = y - np.polyval(coefficients, t)
    return residual, np.sqrt(np.mean(residual * residual))


def _polyfit_inputs(size: int) -> tuple[Any, ...]:
    t = np.linspace(-1, 1, size)
    return t, 0.5 * t**3 - t + 0.05 * _rng(size).standard_normal(size)


class _Generator:
    # Inputs with a generator: the runner copies them before every call (mutates=True), so
    # each framework draws the same numbers.
    @staticmethod
    def pi(size: int) -> tuple[Any, ...]:
        return np.random.default_rng(size), size

    @staticmethod
    def option(size: int) -> tuple[Any, ...]:
        spot = np.linspace(80.0, 120.0, size)
        return np.random.default_rng(size), spot, 100.0, 0.03, 0.2


KERNELS: list[ScienceKernel] = [
    ScienceKernel(
        "poisson_fft",
        "spectral",
        poisson_fft,
        _poisson_inputs,
        sizes=(64, 512),
        numba=False,
        rtol=1e-6,
        atol=1e-8,
    ),
    ScienceKernel(
        "spectral_derivative",
        "spectral",
        spectral_derivative,
        _derivative_inputs,
        sizes=(256, 1 << 18),
        numba=False,
        rtol=1e-6,
        atol=1e-8,
    ),
    ScienceKernel(
        "fft_convolution",
        "spectral",
        fft_convolution,
        _convolution_inputs,
        sizes=(1024, 1 << 18),
        numba=False,
        jax_port=lambda jnp, s, k: jnp.fft.irfft(
            jnp.fft.rfft(s, n=s.shape[0] + k.shape[0] - 1)
            * jnp.fft.rfft(k, n=s.shape[0] + k.shape[0] - 1),
            n=s.shape[0] + k.shape[0] - 1,
        ),
        rtol=1e-6,
        atol=1e-8,
    ),
    ScienceKernel(
        "power_spectrum",
        "spectral",
        power_spectrum,
        _spectrum_inputs,
        sizes=(128, 4096),
        numba=False,
        rtol=1e-6,
        atol=1e-6,
    ),
    ScienceKernel(
        "fir_filter",
        "spectral",
        fir_filter,
        _fir_inputs,
        sizes=(1024, 1 << 18),
        jax_port=lambda jnp, x, taps: (
            jnp.sqrt(jnp.convolve(x, taps, mode="same") ** 2 + 1e-6) * 2.0 - 0.5 * x
        ),
    ),
    ScienceKernel(
        "iir_like_filter",
        "spectral",
        iir_like_filter,
        _iir_inputs,
        sizes=(1024, 1 << 17),
    ),
    ScienceKernel(
        "monte_carlo_pi",
        "spectral",
        monte_carlo_pi,
        _Generator.pi,
        sizes=(1000, 1 << 20),
        numba=False,
        mutates=True,
    ),
    ScienceKernel(
        "option_pricing",
        "spectral",
        option_pricing,
        _Generator.option,
        sizes=(16, 1024),
        numba=False,
        mutates=True,
    ),
    ScienceKernel(
        "histogram_normalized",
        "spectral",
        histogram_normalized,
        lambda size: (_rng(size).standard_normal(size),),
        sizes=(1000, 1 << 20),
    ),
    ScienceKernel(
        "interp_resample",
        "spectral",
        interp_resample,
        _interp_inputs,
        sizes=(1000, 1 << 18),
    ),
    ScienceKernel(
        "csr_spmv_bincount",
        "spectral",
        csr_spmv_bincount,
        _spmv_inputs,
        sizes=(1000, 1 << 17),
    ),
    ScienceKernel(
        "scatter_add_at",
        "spectral",
        scatter_add_at,
        _scatter_inputs,
        sizes=(1000, 1 << 17),
    ),
    ScienceKernel(
        "polyfit_detrend",
        "spectral",
        polyfit_detrend,
        _polyfit_inputs,
        sizes=(1000, 1 << 18),
        numba=False,
        rtol=1e-6,
        atol=1e-8,
    ),
]
