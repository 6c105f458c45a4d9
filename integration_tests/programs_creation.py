"""Creation: zeros, ones, full, empty_like (fully overwritten), arange, linspace, eye, *_like."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

creation = functools.partial(program, "creation")


def _mat(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 3)),)


@creation(_mat)
def zeros_plus_input(x):
    return np.zeros((x.shape[0], 3)) + x


@creation(_mat)
def ones_with_dtype(x):
    return np.ones(x.shape, dtype=np.float32) * 2, np.ones(3, dtype=np.int64)


@creation(_mat)
def full_with_fill(x):
    return np.full((2, x.shape[1]), 7.5), np.full(x.shape, -1, dtype=np.int16)


@creation(_mat)
def like_family(x):
    return np.zeros_like(x), np.ones_like(x, dtype=np.int32), np.full_like(x, 3.0)


@creation(lambda rng, n: (np.asfortranarray(rng.standard_normal((n, 3))),))
def like_keeps_fortran_order(x):
    return np.zeros_like(x) + 1.0, np.ones_like(x)


@creation(_mat)
def empty_like_fully_written(x):
    out = np.empty_like(x)
    out[...] = x * 2.0
    return out


@creation(_mat)
def empty_filled_by_slices(x):
    out = np.empty((x.shape[0], 2 * x.shape[1]))
    out[:, : x.shape[1]] = x
    out[:, x.shape[1] :] = -x
    return out


@creation(lambda rng, n: (rng.standard_normal(n),))
def arange_against_input(x):
    return x * np.arange(x.shape[0]), np.arange(2, 11, 3), np.arange(5.0)


@creation(lambda rng, n: (rng.standard_normal(n),))
def arange_float_step(x):
    return np.arange(0.0, 1.0, 0.125) + x.sum(), np.arange(-3, 3, dtype=np.float32)


@creation(lambda rng, n: (rng.standard_normal(n),))
def linspace_variants(x):
    return np.linspace(0.0, 1.0, x.shape[0]) * x, np.linspace(-1, 1, 5, endpoint=False)


@creation(lambda rng, n: (rng.standard_normal((n, n)),))
def eye_and_identity(x):
    return x @ np.eye(x.shape[0]), np.identity(3, dtype=np.int8), np.eye(3, 4, k=1)


@creation(lambda rng, n: (rng.standard_normal(n),))
def zeros_accumulated_in_loop(x):
    acc = np.zeros_like(x)
    for k in range(3):
        acc += x * k
    return acc


@creation(lambda rng, n: (rng.standard_normal((n, 2)),))
def asarray_of_python_list(x):
    return np.asarray([1.0, 2.0]) * x, np.array([[1, 2], [3, 4]], dtype=np.int32)


@creation(lambda rng, n: (rng.integers(0, 10, n),))
def zeros_with_input_dtype(x):
    return np.zeros(x.shape, dtype=x.dtype) + x, np.full_like(x, 2.7)


@creation(lambda rng, n: (rng.standard_normal((n, 2)),))
def tri_and_full_scalar_shapes(x):
    return np.tri(3), np.full((), 4.0), np.zeros(0) + 1.0, x.sum() + np.ones(())


@creation(lambda rng, n: (rng.standard_normal((n, 3)),))
def creation_then_inplace_fill(x):
    out = np.zeros((x.shape[0] + 1, 3))
    out[1:] = x
    out[0].fill(-2.0)
    return out, np.ones(2, dtype=bool)
