"""Stencils written with slices, as scientists write NumPy (issue 24, item 0).

Every kernel updates a grid from shifted slices of itself: no loops, no index arrays. The full
sizes give grids of 1-20 MB of float64; the quick ones fit a cache.

    >>> sorted({k.family for k in KERNELS})
    ['stencils']
    >>> len(KERNELS) >= 8
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .kernel import ScienceKernel

Array = npt.NDArray[np.float64]


def _rng(size: int) -> np.random.Generator:
    return np.random.default_rng(24_000 + size)


# --- the kernels ---------------------------------------------------------------------------


def hdiff(in_field: Array, out_field: Array, coeff: Array) -> None:
    """Horizontal diffusion (COSMO's): a Laplacian, fluxes limited with ``np.where``."""
    I, J, _ = out_field.shape  # noqa: E741 - the grid's names in the atmospheric code
    lap_field = 4.0 * in_field[1 : I + 3, 1 : J + 3, :] - (
        in_field[2 : I + 4, 1 : J + 3, :]
        + in_field[0 : I + 2, 1 : J + 3, :]
        + in_field[1 : I + 3, 2 : J + 4, :]
        + in_field[1 : I + 3, 0 : J + 2, :]
    )
    res = lap_field[1:, 1 : J + 1, :] - lap_field[:-1, 1 : J + 1, :]
    flx_field = np.where(
        (res * (in_field[2 : I + 3, 2 : J + 2, :] - in_field[1 : I + 2, 2 : J + 2, :])) > 0,
        0,
        res,
    )
    res = lap_field[1 : I + 1, 1:, :] - lap_field[1 : I + 1, :-1, :]
    fly_field = np.where(
        (res * (in_field[2 : I + 2, 2 : J + 3, :] - in_field[2 : I + 2, 1 : J + 2, :])) > 0,
        0,
        res,
    )
    out_field[:, :, :] = in_field[2 : I + 2, 2 : J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :]
    )


def _hdiff_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    shape = (size, size, 60)
    in_field = rng.random((size + 4, size + 4, 60))
    return in_field, np.zeros(shape), rng.random(shape)


def jacobi_2d(a: Array) -> Array:
    """One Jacobi sweep of a 2-D grid: the five-point average inside, the boundary kept."""
    b = a.copy()
    b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
    return b


def jacobi_3d(a: Array) -> Array:
    """One Jacobi sweep of the interior of a 3-D grid (the seven-point average)."""
    return (
        a[1:-1, 1:-1, 1:-1]
        + a[2:, 1:-1, 1:-1]
        + a[:-2, 1:-1, 1:-1]
        + a[1:-1, 2:, 1:-1]
        + a[1:-1, :-2, 1:-1]
        + a[1:-1, 1:-1, 2:]
        + a[1:-1, 1:-1, :-2]
    ) / 7.0


def fdtd_2d(ex: Array, ey: Array, hz: Array) -> None:
    """One step of the 2-D finite-difference time-domain update (PolyBench's fdtd-2d)."""
    ey[1:, :] = ey[1:, :] - 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] = ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] = hz[:-1, :-1] - 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def _three_2d(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return tuple(rng.random((size, size)) for _ in range(3))


def fdtd_3d_h(hx: Array, hy: Array, hz: Array, ex: Array, ey: Array, ez: Array) -> None:
    """The magnetic-field half step of the 3-D Yee scheme: H -= c * curl E."""
    c = 0.5
    hx[:, :-1, :-1] -= c * ((ez[:, 1:, :-1] - ez[:, :-1, :-1]) - (ey[:, :-1, 1:] - ey[:, :-1, :-1]))
    hy[:-1, :, :-1] -= c * ((ex[:-1, :, 1:] - ex[:-1, :, :-1]) - (ez[1:, :, :-1] - ez[:-1, :, :-1]))
    hz[:-1, :-1, :] -= c * ((ey[1:, :-1, :] - ey[:-1, :-1, :]) - (ex[:-1, 1:, :] - ex[:-1, :-1, :]))


def _six_3d(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return tuple(rng.random((size, size, size)) for _ in range(6))


def laplacian_2d(u: Array) -> Array:
    """The five-point Laplacian of the interior of a 2-D grid (unit spacing)."""
    return u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]


def periodic_laplacian(u: Array) -> Array:
    """The five-point Laplacian of a periodic 2-D grid, with ``np.roll`` (every point)."""
    return (
        np.roll(u, 1, axis=0)
        + np.roll(u, -1, axis=0)
        + np.roll(u, 1, axis=1)
        + np.roll(u, -1, axis=1)
        - 4.0 * u
    )


def laplacian_3d(u: Array) -> Array:
    """The seven-point Laplacian of the interior of a 3-D grid (unit spacing)."""
    return (
        u[2:, 1:-1, 1:-1]
        + u[:-2, 1:-1, 1:-1]
        + u[1:-1, 2:, 1:-1]
        + u[1:-1, :-2, 1:-1]
        + u[1:-1, 1:-1, 2:]
        + u[1:-1, 1:-1, :-2]
        - 6.0 * u[1:-1, 1:-1, 1:-1]
    )


def limited_laplacian(u: Array) -> Array:
    """A 2-D Laplacian whose x-fluxes are limited where they would steepen the gradient."""
    lap = 4.0 * u[1:-1, 1:-1] - (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
    flux = lap[1:, :] - lap[:-1, :]
    flux = np.where(flux * (u[2:-1, 1:-1] - u[1:-2, 1:-1]) > 0, 0.0, flux)
    return flux[1:, 1:-1] - flux[:-1, 1:-1]


def heat_step(u: Array) -> Array:
    """One explicit Euler step of the 2-D heat equation, the boundary held fixed."""
    alpha_dt_dx2 = 0.2
    un = u.copy()
    un[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha_dt_dx2 * (
        u[2:, 1:-1] - 2.0 * u[1:-1, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] - 2.0 * u[1:-1, 1:-1]
        + u[1:-1, :-2]
    )  # fmt: skip
    return un


def nine_point(u: Array) -> Array:
    """The nine-point (compact) Laplacian of the interior of a 2-D grid."""
    return (
        4.0 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
        + (u[2:, 2:] + u[2:, :-2] + u[:-2, 2:] + u[:-2, :-2])
        - 20.0 * u[1:-1, 1:-1]
    ) / 6.0


def wave_step(u: Array, u_prev: Array) -> Array:
    """One leapfrog step of the 2-D wave equation: 2u - u_prev + (c dt/dx)^2 * Laplacian."""
    c2 = 0.25
    lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
    return 2.0 * u[1:-1, 1:-1] - u_prev[1:-1, 1:-1] + c2 * lap


def _one_2d(size: int) -> tuple[Any, ...]:
    return (_rng(size).random((size, size)),)


def _two_2d(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return rng.random((size, size)), rng.random((size, size))


def _one_3d(size: int) -> tuple[Any, ...]:
    return (_rng(size).random((size, size, size)),)


# --- the set -------------------------------------------------------------------------------

KERNELS: list[ScienceKernel] = [
    ScienceKernel("hdiff", "stencils", hdiff, _hdiff_inputs, (16, 128), mutates=True),
    ScienceKernel(
        "jacobi_2d",
        "stencils",
        jacobi_2d,
        _one_2d,
        (64, 1024),
        jax_port=lambda jnp, a: a.at[1:-1, 1:-1].set(
            0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
        ),
    ),
    ScienceKernel(
        "jacobi_3d",
        "stencils",
        jacobi_3d,
        _one_3d,
        (24, 128),
        jax_port=lambda jnp, a: (
            (
                a[1:-1, 1:-1, 1:-1]
                + a[2:, 1:-1, 1:-1]
                + a[:-2, 1:-1, 1:-1]
                + a[1:-1, 2:, 1:-1]
                + a[1:-1, :-2, 1:-1]
                + a[1:-1, 1:-1, 2:]
                + a[1:-1, 1:-1, :-2]
            )
            / 7.0
        ),
    ),
    ScienceKernel("fdtd_2d", "stencils", fdtd_2d, _three_2d, (64, 1024), mutates=True),
    ScienceKernel("fdtd_3d_h", "stencils", fdtd_3d_h, _six_3d, (16, 96), mutates=True),
    ScienceKernel(
        "laplacian_2d",
        "stencils",
        laplacian_2d,
        _one_2d,
        (64, 1024),
        jax_port=lambda jnp, u: (
            u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        ),
    ),
    ScienceKernel(
        "periodic_laplacian",
        "stencils",
        periodic_laplacian,
        _one_2d,
        (64, 1024),
        numba=False,  # numba's np.roll takes no axis
        jax_port=lambda jnp, u: (
            jnp.roll(u, 1, axis=0)
            + jnp.roll(u, -1, axis=0)
            + jnp.roll(u, 1, axis=1)
            + jnp.roll(u, -1, axis=1)
            - 4.0 * u
        ),
    ),
    ScienceKernel(
        "laplacian_3d",
        "stencils",
        laplacian_3d,
        _one_3d,
        (24, 128),
        jax_port=lambda jnp, u: (
            u[2:, 1:-1, 1:-1]
            + u[:-2, 1:-1, 1:-1]
            + u[1:-1, 2:, 1:-1]
            + u[1:-1, :-2, 1:-1]
            + u[1:-1, 1:-1, 2:]
            + u[1:-1, 1:-1, :-2]
            - 6.0 * u[1:-1, 1:-1, 1:-1]
        ),
    ),
    ScienceKernel(
        "limited_laplacian",
        "stencils",
        limited_laplacian,
        _one_2d,
        (64, 1024),
        jax_port=lambda jnp, u: _limited_laplacian_jax(jnp, u),
    ),
    ScienceKernel("heat_step", "stencils", heat_step, _one_2d, (64, 1024)),
    ScienceKernel(
        "nine_point",
        "stencils",
        nine_point,
        _one_2d,
        (64, 1024),
        jax_port=lambda jnp, u: (
            (
                4.0 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
                + (u[2:, 2:] + u[2:, :-2] + u[:-2, 2:] + u[:-2, :-2])
                - 20.0 * u[1:-1, 1:-1]
            )
            / 6.0
        ),
    ),
    ScienceKernel(
        "wave_step",
        "stencils",
        wave_step,
        _two_2d,
        (64, 1024),
        jax_port=lambda jnp, u, u_prev: (
            2.0 * u[1:-1, 1:-1]
            - u_prev[1:-1, 1:-1]
            + 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1])
        ),
    ),
]


def _limited_laplacian_jax(jnp: Any, u: Any) -> Any:
    # the NumPy source with jnp for np: `limited_laplacian` is written against np
    lap = 4.0 * u[1:-1, 1:-1] - (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
    flux = lap[1:, :] - lap[:-1, :]
    flux = jnp.where(flux * (u[2:-1, 1:-1] - u[1:-2, 1:-1]) > 0, 0.0, flux)
    return flux[1:, 1:-1] - flux[:-1, 1:-1]
