"""Broadcasting: rows, columns, outer products, 0-d operands, size-1 axes, in-place broadcasts."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

broadcasting = functools.partial(program, "broadcasting")


@broadcasting(lambda rng, n: (rng.standard_normal((n, 5)), rng.standard_normal(5)))
def add_row(x, row):
    return x + row


@broadcasting(lambda rng, n: (rng.standard_normal((n, 5)), rng.standard_normal((n, 1))))
def multiply_column(x, col):
    return x * col


@broadcasting(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(6)))
def outer_via_none(a, b):
    return a[:, None] * b[None, :]


@broadcasting(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(3)))
def outer_via_reshape(a, b):
    return a.reshape(-1, 1) - b.reshape(1, -1)


@broadcasting(lambda rng, n: (rng.standard_normal((n, 4)), np.array(2.5)))
def zero_d_array_operand(x, s):
    return x * s + s


@broadcasting(lambda rng, n: (np.array(1.5), rng.standard_normal(n)))
def zero_d_on_left(s, x):
    return s - x, s / (np.abs(x) + 1.0)


@broadcasting(lambda rng, n: (rng.standard_normal((2, 1, n)), rng.standard_normal((3, 1))))
def three_d_against_two_d(a, b):
    return a + b


@broadcasting(lambda rng, n: (rng.standard_normal((n, 1, 3)), rng.standard_normal((1, 4, 1))))
def both_sides_expand(a, b):
    return a * b - a


@broadcasting(lambda rng, n: (rng.standard_normal((n, 5)),))
def normalize_rows(x):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / (x.std(axis=1, keepdims=True) + 1e-6)


@broadcasting(lambda rng, n: (rng.standard_normal((n, 5)),))
def center_columns(x):
    return x - x.mean(axis=0)


@broadcasting(lambda rng, n: (rng.standard_normal((n, 5)), rng.standard_normal(5)))
def inplace_broadcast_local(x, row):
    y = x.copy()
    y += row
    y *= 2.0
    return y


@broadcasting(
    lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n, 1)), np.array(-1.0))
)
def where_three_way_broadcast(x, col, s):
    return np.where(x > col, x, s)


@broadcasting(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def pairwise_distance(a, b):
    return np.abs(a[:, np.newaxis] - b[np.newaxis, :])


@broadcasting(lambda rng, n: (rng.standard_normal((n, 1)),))
def size_one_with_itself_transposed(col):
    return col + col.T


@broadcasting(lambda rng, n: (rng.standard_normal((n, 4)), rng.standard_normal((1, 1))))
def one_by_one_operand(x, s):
    return np.maximum(x, s)


@broadcasting(lambda rng, n: (rng.standard_normal((n, 3)), 2.0, 3))
def python_scalars_broadcast(x, f, k):
    return x * f + k, f - x, k // (np.abs(x) + 1.0)


@broadcasting(lambda rng, n: (rng.standard_normal((n, 1, 4)), rng.standard_normal((5, 1))))
def broadcast_arrays_and_shapes(a, b):
    x, y = np.broadcast_arrays(a, b)
    return x + y, np.broadcast_shapes(a.shape, b.shape)


@broadcasting(lambda rng, n: (rng.standard_normal((n, 4)), rng.standard_normal(4)))
def inplace_input_broadcast_row(x, row):
    x -= row
    x /= 2.0
    return x
