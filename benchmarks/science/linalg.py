"""Linear-algebra kernels of the scientific benchmark set, as scientists write them in NumPy.

Products chained with vector updates (matrix-vector chains, a conjugate-gradient step, BiCG's
two products of one matrix, a power-iteration step), Gram and correlation matrices, least
squares through the normal equations, a batched dense layer with its epilogue, and the
broadcasting kernels that sit next to them in practice (n-body forces, the k-means
assignment step, pairwise distances). ``size`` is the number of rows (or bodies, or points).

    >>> [k.name for k in KERNELS][:3]
    ['matvec_chain', 'bicg_products', 'cg_step']
    >>> all(k.family == "linalg" for k in KERNELS)
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import ScienceKernel

_FAMILY = "linalg"


def _rng(size: int) -> np.random.Generator:
    return np.random.default_rng(2400 + size)


# -- matrix-vector chains ------------------------------------------------------------------


def matvec_chain(A: Any, x: Any) -> Any:
    """`(A @ x) @ A`: a matrix-vector product, then a vector-matrix one (PolyBench ATAX)."""
    return (A @ x) @ A


def _square_and_vector(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return (rng.standard_normal((size, size)), rng.standard_normal(size))


def bicg_products(A: Any, r: Any, p: Any) -> Any:
    """BiCG's two products of one matrix: `s = r @ A` and `q = A @ p` (PolyBench BICG)."""
    return r @ A, A @ p


def _bicg_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return (
        rng.standard_normal((size, size)),
        rng.standard_normal(size),
        rng.standard_normal(size),
    )


def cg_step(A: Any, x: Any, r: Any, p: Any) -> Any:
    """One conjugate-gradient iteration on a symmetric positive definite system."""
    Ap = A @ p
    rr = r @ r
    alpha = rr / (p @ Ap)
    x_new = x + alpha * p
    r_new = r - alpha * Ap
    beta = (r_new @ r_new) / rr
    p_new = r_new + beta * p
    return x_new, r_new, p_new


def _cg_inputs(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    M = rng.standard_normal((size, size))
    A = M @ M.T / size + np.eye(size)
    b = rng.standard_normal(size)
    x = np.zeros(size)
    r = b - A @ x
    return (A, x, r, r.copy())


def power_iteration_step(A: Any, v: Any) -> Any:
    """One power-iteration step: the next unit vector and its Rayleigh quotient."""
    w = A @ v
    norm = np.sqrt(np.sum(w * w))
    return w / norm, v @ w


# -- matrix-matrix products ----------------------------------------------------------------


def correlation_matrix(X: Any) -> Any:
    """Pearson correlation of the columns of X: centred Gram matrix over the norms' outer
    product."""
    Xc = X - X.mean(axis=0)
    G = Xc.T @ Xc
    d = np.sqrt(np.sum(Xc * Xc, axis=0))
    return G / (d[:, None] * d[None, :])


def _samples_by_features(size: int) -> tuple[Any, ...]:
    return (_rng(size).standard_normal((size, 128)),)


def normal_equations(A: Any, b: Any) -> Any:
    """Least squares by the normal equations, ridge-regularized: (AᵀA + λI) x = Aᵀb."""
    AtA = A.T @ A
    Atb = A.T @ b
    n = AtA.shape[0]
    return np.linalg.solve(AtA + 1e-3 * np.eye(n), Atb)


def _tall_system(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return (rng.standard_normal((size, 64)), rng.standard_normal(size))


def batched_dense_tanh(X: Any, W: Any, b: Any) -> Any:
    """A batched dense layer: a stack of matrices times one weight matrix, bias, tanh."""
    return np.tanh(X @ W + b)


def _batched_layer(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return (
        rng.standard_normal((8, size, 64)),
        rng.standard_normal((64, 64)) / 8.0,
        rng.standard_normal(64),
    )


# -- broadcasting kernels next to the products ---------------------------------------------


def nbody_forces(pos: Any, mass: Any) -> Any:
    """Gravitational accelerations of every body from every other, by broadcasting."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = np.sum(d * d, axis=-1) + 1e-3
    inv = mass[None, :] / (r2 * np.sqrt(r2))
    return np.sum(d * inv[:, :, None], axis=1)


def _bodies(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return (rng.standard_normal((size, 3)), rng.uniform(0.5, 1.5, size))


def kmeans_assign(X: Any, C: Any) -> Any:
    """The k-means assignment step: each point's nearest centroid, distances by expansion."""
    d2 = np.sum(X * X, axis=1)[:, None] - 2.0 * (X @ C.T) + np.sum(C * C, axis=1)[None, :]
    return np.argmin(d2, axis=1)


def _points_and_centroids(size: int) -> tuple[Any, ...]:
    rng = _rng(size)
    return (rng.standard_normal((size, 16)), rng.standard_normal((32, 16)))


def pairwise_distances(X: Any) -> Any:
    """Euclidean distances between all pairs of rows (the Gram-matrix expansion)."""
    sq = np.sum(X * X, axis=1)
    D2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    return np.sqrt(np.maximum(D2, 0.0))


def _points(size: int) -> tuple[Any, ...]:
    return (_rng(size).standard_normal((size, 32)),)


KERNELS = [
    ScienceKernel(
        "matvec_chain",
        _FAMILY,
        matvec_chain,
        _square_and_vector,
        sizes=(400, 2000),
        jax_port=lambda jnp, A, x: (A @ x) @ A,
    ),
    ScienceKernel(
        "bicg_products",
        _FAMILY,
        bicg_products,
        _bicg_inputs,
        sizes=(400, 2000),
        jax_port=lambda jnp, A, r, p: (r @ A, A @ p),
    ),
    ScienceKernel("cg_step", _FAMILY, cg_step, _cg_inputs, sizes=(400, 2000)),
    ScienceKernel(
        "power_iteration_step",
        _FAMILY,
        power_iteration_step,
        _square_and_vector,
        sizes=(400, 2000),
        jax_port=lambda jnp, A, v: (
            (A @ v) / jnp.sqrt(jnp.sum((A @ v) ** 2)),
            v @ (A @ v),
        ),
    ),
    ScienceKernel(
        "correlation_matrix",
        _FAMILY,
        correlation_matrix,
        _samples_by_features,
        sizes=(500, 5000),
        numba=False,  # numba has no mean(axis=...)
        rtol=1e-6,
    ),
    ScienceKernel(
        "normal_equations",
        _FAMILY,
        normal_equations,
        _tall_system,
        sizes=(500, 20000),
        rtol=1e-6,
        jax_port=lambda jnp, A, b: jnp.linalg.solve(A.T @ A + 1e-3 * jnp.eye(A.shape[1]), A.T @ b),
    ),
    ScienceKernel(
        "batched_dense_tanh",
        _FAMILY,
        batched_dense_tanh,
        _batched_layer,
        sizes=(64, 1024),
        numba=False,  # numba's @ takes 1-D and 2-D operands only
        jax_port=lambda jnp, X, W, b: jnp.tanh(X @ W + b),
    ),
    ScienceKernel(
        "nbody_forces",
        _FAMILY,
        nbody_forces,
        _bodies,
        sizes=(100, 600),
        rtol=1e-6,
    ),
    ScienceKernel(
        "kmeans_assign",
        _FAMILY,
        kmeans_assign,
        _points_and_centroids,
        sizes=(1000, 50000),
        jax_port=lambda jnp, X, C: jnp.argmin(
            jnp.sum(X * X, axis=1)[:, None] - 2.0 * (X @ C.T) + jnp.sum(C * C, axis=1)[None, :],
            axis=1,
        ),
    ),
    ScienceKernel(
        "pairwise_distances",
        _FAMILY,
        pairwise_distances,
        _points,
        sizes=(200, 1500),
        rtol=1e-6,
        atol=1e-6,
        jax_port=lambda jnp, X: jnp.sqrt(
            jnp.maximum(
                jnp.sum(X * X, 1)[:, None] + jnp.sum(X * X, 1)[None, :] - 2.0 * (X @ X.T), 0.0
            )
        ),
    ),
]
"""The family's kernels, in the order the runner reports them."""
