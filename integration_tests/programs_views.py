"""Views and slicing: reshape, transpose, swapaxes, moveaxis, None indexing, squeeze, broadcast_to,
strided and reversed slices, flip, ravel. Many return views of inputs, so aliasing is checked."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

views = functools.partial(program, "views")


def _mat(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 6)),)


def _cube(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((2, n, 3)),)


def _vec(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal(2 * n),)


@views(_mat)
def reshape_view_returned(x):
    return x.reshape(-1)


@views(_mat)
def reshape_to_3d(x):
    return x.reshape(x.shape[0], 2, 3)


@views(_mat)
def transpose_returned(x):
    return x.T


@views(_cube)
def transpose_axes_order(x):
    return np.transpose(x, (2, 0, 1)), x.transpose(1, 0, 2)


@views(_cube)
def swapaxes_and_moveaxis(x):
    return np.swapaxes(x, 0, 2), np.moveaxis(x, 0, -1)


@views(_vec)
def expand_dims_and_none(x):
    return np.expand_dims(x, 0), x[:, None], x[None, :, None]


@views(lambda rng, n: (rng.standard_normal((1, n, 1)),))
def squeeze_variants(x):
    return x.squeeze(), np.squeeze(x, axis=0), x.squeeze(-1)


@views(lambda rng, n: (rng.standard_normal(n),))
def broadcast_to_view(x):
    return np.broadcast_to(x, (3, x.shape[0]))


@views(_vec)
def step_slices(x):
    return x[::2], x[1::3], x[1:-1]


@views(_vec)
def negative_step_slices(x):
    return x[::-1], x[-2::-2], x[5:1:-1]


@views(_mat)
def two_d_slices(x):
    return x[1:, ::2], x[::-1, 1:4], x[:, -1]


@views(_mat)
def flip_variants(x):
    return np.flip(x), np.flip(x, axis=0), np.fliplr(x), np.flipud(x)


@views(_mat)
def ravel_contiguous_is_view(x):
    return x.ravel(), np.ravel(x)


@views(_mat)
def ravel_transposed_copies(x):
    return x.T.ravel(), x.flatten()


@views(_mat)
def integer_index_row_is_view(x):
    return x[0], x[-1, 2:], x[1, ...]


@views(_mat)
def ellipsis_and_scalar_index(x):
    return x[..., 0], x[0, 0]


@views(_mat)
def compute_on_views(x):
    return (x[:, ::2] * 2.0 + x.T[::2, :].T).sum(axis=1)


@views(_mat)
def view_then_copy(x):
    y = x[::2].copy()
    return y, np.ascontiguousarray(x.T)


@views(_mat)
def chained_views(x):
    return x.T[::-1].reshape(-1, x.shape[0])[1:]


@views(_cube)
def reshape_after_transpose_copies(x):
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)


@views(_mat)
def mutate_through_view(x):
    x[:, 0] = 0.0
    v = x[1:]
    v *= 2.0
    return v


@views(_mat)
def return_input_itself(x):
    return x


@views(_mat)
def return_input_and_view_in_tuple(x):
    return x, x[::2], x.sum()


@views(_mat)
def diagonal_view(x):
    return np.diagonal(x), x.diagonal(offset=1)


@views(_mat)
def astype_same_dtype_copy_false(x):
    return x.astype(np.float64, copy=False), np.asarray(x), x.view()


@views(lambda rng, n: (rng.standard_normal((n, 4)), rng.standard_normal(4)))
def outputs_alias_each_other(x, b):
    y = x + b
    return y, y.T, y[1:]
