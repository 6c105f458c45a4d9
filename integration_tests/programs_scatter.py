"""`ufunc.at` in the graph (issue 24): `np.add.at` and the other binary ufuncs' `.at` are one
`ufunc_at` node each, with repeated indices (accumulated in index order), negative indices,
broadcast values, index tuples and slices, boolean masks, dtype casts into the target and
out-of-bounds indices (IndexError, the target untouched), into fresh arrays and into inputs.
"""

from __future__ import annotations

import functools

import numpy as np
from harness import program

scatter = functools.partial(program, "scatter")


def _values_and_index(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    # Four values per slot: most indices repeat.
    return rng.standard_normal(n * 4), rng.integers(0, max(n, 1), n * 4)


@scatter(_values_and_index, sizes=(4, 7, 1, 0))
def add_at_repeated_indices(values, index):
    out = np.zeros(max(index.shape[0] // 4, 1))
    np.add.at(out, index, values * values)
    return np.sqrt(out) * 2.0


@scatter(lambda rng, n: (rng.standard_normal(n + 1), rng.integers(-n - 1, n + 1, 3 * n + 2)))
def subtract_at_negative_indices_into_input(x, index):
    np.subtract.at(x, index, 0.5)
    return x * 2.0


@scatter(lambda rng, n: (rng.standard_normal(n), rng.integers(0, n, 2 * n), rng.random(2 * n)))
def maximum_minimum_multiply_at(x, index, values):
    high = np.full(x.shape, -1.0)
    np.maximum.at(high, index, values)
    low = x.copy()
    np.minimum.at(low, index, values - 0.5)
    prod = np.ones(x.shape)
    np.multiply.at(prod, index, values + 0.5)
    return high, low, prod


@scatter(lambda rng, n: (rng.standard_normal((n, 3)), rng.integers(0, n, 2 * n)))
def add_at_rows_broadcast_value(x, index):
    # Each index picks a row; the value (3,) broadcasts over the indexed (2n, 3) block.
    out = np.zeros_like(x)
    np.add.at(out, index, np.array([1.0, -2.0, 0.5]))
    np.add.at(out, index, x[index] * 0.25)
    return out + x


@scatter(lambda rng, n: (rng.integers(0, n, 3 * n), rng.integers(0, 4, 3 * n), rng.random(3 * n)))
def add_at_index_tuple_and_slice(rows, cols, weights):
    grid = np.zeros((rows.shape[0] // 3, 4))
    np.add.at(grid, (rows, cols), weights)
    np.add.at(grid, (slice(None), cols[:2]), 1.0)
    return grid / (grid.sum() + 1.0)


@scatter(lambda rng, n: (rng.standard_normal(n), rng.integers(0, n, 2 * n)))
def add_at_casts_into_target_dtype(x, index):
    counts = np.zeros(x.shape[0], dtype=np.int64)
    np.add.at(counts, index, 1)
    single = np.zeros(x.shape[0], dtype=np.float32)
    np.add.at(single, index, x[index])
    truncated = np.zeros(x.shape[0], dtype=np.int32)
    np.add.at(truncated, index, x[index] * 10.0)
    return counts * 2, single, truncated


@scatter(lambda rng, n: (rng.standard_normal(n),), sizes=(4, 7, 1))
def add_at_boolean_mask(x):
    out = np.zeros_like(x)
    np.add.at(out, x > 0.0, 3.0)
    np.subtract.at(out, x < -0.5, x.sum())
    return out


@scatter(lambda rng, n: (rng.standard_normal(n), np.arange(n) + 1), expect_error=True)
def add_at_out_of_bounds(x, index):
    np.add.at(x, index, 1.0)
    return x


@scatter(lambda rng, n: (rng.standard_normal((n, 4)), rng.integers(-n, n, 3 * n)))
def add_at_through_a_view_of_an_input(x, index):
    # The target is a column of an input: the update reaches the input through the view.
    column = x[:, 1]
    np.add.at(column, index, 2.0)
    np.multiply.at(x[::-1, 3], index, 0.5)
    return column * 1.0


@scatter(lambda rng, n: (rng.integers(0, 5, 4 * n), rng.integers(-3, 4, 4 * n)))
def integer_histogram_by_add_at(keys, counts):
    # Integer accumulation (no rounding): per-key sums and counts, then a masked mean.
    total = np.zeros(5, dtype=np.int64)
    seen = np.zeros(5, dtype=np.int64)
    np.add.at(total, keys, counts)
    np.add.at(seen, keys, 1)
    return total, seen, np.where(seen > 0, total / np.maximum(seen, 1), 0.0)
