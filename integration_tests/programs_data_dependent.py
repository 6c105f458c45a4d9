"""Results whose size depends on the data (issue 24): nonzero, flatnonzero, argwhere, unique,
compress, bincount and boolean masks stay in the graph with an unbacked size symbol, and the
code after them runs on that run-time size (each program is compiled once for all counts).
Sizes 1 and 0 and all-false masks included.
"""

from __future__ import annotations

import functools

import numpy as np
from harness import program

data_dependent = functools.partial(program, "data_dependent")


def _vector(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal(n),)


def _labels(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.integers(0, 5, n * 3), rng.standard_normal(n * 3))


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def nonzero_then_arithmetic(x):
    (index,) = np.nonzero(x > 0.0)
    return index * 2 + 1, x[index] * 3.0


@data_dependent(lambda rng, n: (rng.standard_normal((n, 3)),), sizes=(4, 7, 1, 0))
def nonzero_2d_and_argwhere(x):
    rows, cols = np.nonzero(x > 0.5)
    where = np.argwhere(x > 0.5)
    return rows + cols, where.sum(axis=1), np.flatnonzero(x < -0.5) - 1


@data_dependent(_labels, sizes=(4, 7, 1, 0))
def unique_counts_and_inverse(labels, values):
    keys, counts = np.unique(labels, return_counts=True)
    _, inverse = np.unique(labels, return_inverse=True)
    return keys * 10, counts.astype(np.float64) / max(labels.shape[0], 1), inverse + 1


@data_dependent(_labels, sizes=(4, 7, 1, 0))
def bincount_weighted_and_minlength(labels, values):
    sums = np.bincount(labels, weights=values)
    return sums * 0.5 + 1.0, np.bincount(labels, minlength=8) * 2


@data_dependent(_labels, sizes=(4, 7, 1, 0))
def bincount_group_mean(labels, values):
    # Two bincounts' lengths are two unbacked sizes: a run-time check unifies them.
    return np.bincount(labels, weights=values) / np.maximum(np.bincount(labels), 1)


@data_dependent(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)), sizes=(4, 7, 1))
def two_masks_combined(x, y):
    # Two masks' counts: equal here (one mask pattern, computed twice), 1 when n is 1.
    keep = np.abs(x) > 0.5
    scaled = np.where(keep, y, 0.0)
    return x[keep] * 2.0 + scaled[np.abs(x) > 0.5], x[x > 0.0].sum()


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def gaps_between_selected(x):
    # Slices of an unbacked size: `idx[1:] - idx[:-1]` have the same length, Max(0, u - 1).
    idx = np.flatnonzero(x > -0.3)
    keys = np.unique(np.round(x))
    return idx[1:] - idx[:-1], keys[1:] - keys[:-1], idx[: x.shape[0]] + 1


@data_dependent(lambda rng, n: (rng.standard_normal((n, 4)),), sizes=(4, 7, 1, 0))
def compress_rows_and_flat(x):
    keep = x[:, 0] > 0.0
    return np.compress(keep, x, axis=0) * 2.0, np.compress(x.ravel() > 1.0, x) + 1.0


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def mask_select_then_fuse(x):
    positive = x[x > 0.0]
    return np.sqrt(positive) + positive.sum(), positive * 0.5


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def mask_assign(x):
    y = x.copy()
    y[y < 0.0] = 0.0
    return y * 2.0


@data_dependent(lambda rng, n: (-np.abs(rng.standard_normal(n)),), sizes=(4, 7, 1))
def all_false_mask(x):
    (index,) = np.nonzero(x > 0.0)
    return index, x[x > 0.0] + 1.0


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def mask_sum_scan_and_max(x):
    selected = x[np.abs(x) < 1.0]
    return selected.sum(), np.cumsum(selected) * 2.0, np.abs(selected).max(initial=0.0)


@data_dependent(_labels, sizes=(4, 7, 1, 0))
def unique_then_searchsorted(labels, values):
    keys = np.unique(labels)
    positions = np.searchsorted(keys, labels)
    return positions * 2, keys[positions] == labels, values[labels > 2] - 1.0


# Moved from the breaks theme: graph breaks until the extern-op table kept them in the graph.
@data_dependent(_vector, sizes=(4, 7, 1, 0))
def np_unique_values(x):
    u = np.unique(np.round(x))
    return u * 2.0


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def np_argwhere_positive(x):
    idx = np.argwhere(x > 0)
    return idx


@data_dependent(_vector, sizes=(4, 7, 1, 0))
def np_flatnonzero_then_take(x):
    idx = np.flatnonzero(x > 0)
    return x[idx], idx
