"""Special inputs: 0-d arrays, empty arrays, non-contiguous, negative-stride and Fortran-order
inputs, inputs that view one buffer, NaN/inf propagation, -0.0."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

special_inputs = functools.partial(program, "special_inputs")


@special_inputs(lambda rng, n: (np.array(rng.standard_normal()), np.array(3, dtype=np.int32)))
def zero_d_inputs(x, k):
    return x * 2.0 + 1.0, k + 1, x * k, np.sin(x)


@special_inputs(lambda rng, n: (np.array(rng.standard_normal()),))
def zero_d_reductions_and_views(x):
    return x.sum(), x.reshape(1), x[None], x[()], x.T


@special_inputs(lambda rng, n: (np.zeros((0, n)), np.zeros(0, dtype=np.int64)))
def empty_arrays_pointwise(x, i):
    return x + 1.0, np.exp(x), i * 2, x.T


@special_inputs(lambda rng, n: (np.zeros((0, n)),))
def empty_reductions_with_identity(x):
    return x.sum(axis=0), x.sum(axis=1), x.prod(), x.max(axis=1, initial=-np.inf), x.any(), x.all()


@special_inputs(lambda rng, n: (np.ones((n, 0, 2)),))
def empty_middle_axis(x):
    return x.reshape(x.shape[0], 0), x.mean(axis=1), np.concatenate([x, x], axis=1)


@special_inputs(lambda rng, n: (rng.standard_normal((n, 8))[:, ::2],))
def non_contiguous_input(x):
    return x * 2.0, x.sum(axis=0), x.T, x.reshape(-1)


@special_inputs(lambda rng, n: (rng.standard_normal((n, 5))[::-1, ::-1],))
def negative_stride_input(x):
    return np.exp(x), x.cumsum(axis=0), x[0], x.copy()


@special_inputs(lambda rng, n: (np.asfortranarray(rng.standard_normal((n, 5))),))
def fortran_order_input(x):
    return np.sin(x) + 1.0, x.sum(axis=0), x.ravel(), x.reshape(-1, 5), x.T


@special_inputs(
    lambda rng, n: (np.asfortranarray(rng.standard_normal((n, 3))), rng.standard_normal((n, 3)))
)
def fortran_plus_c_order(f, c):
    return f + c, f * 2.0


def _overlapping(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    base = rng.standard_normal(n + 1)
    return (base[1:], base[:-1])


@special_inputs(_overlapping)
def overlapping_input_views(a, b):
    return a - b, a[::2]


@special_inputs(_overlapping)
def write_into_one_of_overlapping_inputs(a, b):
    a += b
    return b.copy()


@special_inputs(_overlapping, fullgraph=False)
def shares_memory_query_on_inputs(a, b):
    return np.shares_memory(a, b), np.may_share_memory(a, b[::2])


@special_inputs(lambda rng, n: (np.array([1.0, np.nan, -np.inf, np.inf, 0.0, -2.0] * n),))
def nan_inf_propagation(x):
    return x * 2.0, x - x, np.maximum(x, 0.0), np.fmax(x, 0.0), x.sum(), x.max(), np.isnan(x)


@special_inputs(lambda rng, n: (np.array([np.nan, 1.0, np.nan, -1.0] * n),))
def nan_reductions_and_args(x):
    return x.min(), np.argmax(x), np.nanargmin(x), np.nansum(x), x.mean(), np.sort(x)


@special_inputs(lambda rng, n: (np.array([0.0, -0.0, 1.0, -1.0] * n),))
def signed_zeros(x):
    return -x, x * -1.0, x * 0.0, np.abs(x), np.copysign(1.0, x), 1.0 / np.where(x == 0, x, 1.0)


@special_inputs(lambda rng, n: (np.array([-0.0] * n),))
def negative_zero_sum_and_max(x):
    return x.sum(), x.max(), x + 0.0, x - 0.0, np.maximum(x, 0.0)


@special_inputs(lambda rng, n: (np.array([1e308, -1e308, 1e-320, 5e-324] * n),))
def overflow_and_subnormals(x):
    return x * 10.0, x / 10.0, np.exp(np.abs(x)), x * x


@special_inputs(lambda rng, n: (rng.standard_normal((n, 4)).astype(">f8"),))
def big_endian_input(x):
    return x + 1.0, x.sum(), (x * 2.0).dtype.str


@special_inputs(lambda rng, n: (np.broadcast_to(rng.standard_normal(4), (n, 4)),))
def zero_stride_broadcast_input(x):
    return x + 1.0, x.sum(axis=0), x.T, x[1]


@special_inputs(lambda rng, n: (rng.standard_normal((1, n, 1, 3)),))
def size_one_axes_input(x):
    return x.squeeze(), x.sum(axis=(0, 2)), x * x.transpose(2, 1, 0, 3)
