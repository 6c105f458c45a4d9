"""Joins: concatenate, stack, hstack, vstack (and their dtype promotion)."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

joins = functools.partial(program, "joins")


def _pair(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 3)), rng.standard_normal((n, 3)))


@joins(_pair)
def concatenate_axis0(a, b):
    return np.concatenate([a, b])


@joins(_pair)
def concatenate_axis1_tuple(a, b):
    return np.concatenate((a, b, a), axis=1)


@joins(_pair)
def concatenate_axis_none(a, b):
    return np.concatenate([a, b], axis=None)


@joins(_pair)
def stack_new_axes(a, b):
    return np.stack([a, b]), np.stack([a, b], axis=-1), np.stack((a, b), axis=1)


@joins(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)))
def hstack_vstack_1d(a, b):
    return np.hstack([a, b]), np.vstack([a, b])


@joins(_pair)
def hstack_vstack_2d(a, b):
    return np.hstack((a, b)), np.vstack((a, b * 2))


@joins(lambda rng, n: (rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 9, (n, 3))))
def concatenate_promotes_dtypes(a, b):
    return np.concatenate([a, b]), np.stack([b, b]).dtype.name


@joins(_pair)
def concatenate_then_compute(a, b):
    c = np.concatenate([np.sin(a), np.cos(b)], axis=0)
    return c.sum(axis=0)


@joins(_pair)
def concatenate_views(a, b):
    return np.concatenate(
        [a[::-1], b.T.T[:, ::2].reshape(-1, 1).repeat(2, axis=1)[: a.shape[0]]], axis=1
    )


@joins(lambda rng, n: (rng.standard_normal((n, 2)),))
def concatenate_with_empty(a):
    return np.concatenate([a, np.zeros((0, 2))]), np.vstack([a[:0], a])


@joins(lambda rng, n: (rng.standard_normal(n),))
def stack_zero_d(a):
    return np.stack([a[0], a[1], np.float64(3.0)]), np.hstack([a[0], a])


@joins(_pair)
def loop_built_list_concatenate(a, b):
    parts = []
    for i in range(3):
        parts.append(a * i + b)
    return np.concatenate(parts, axis=1)


@joins(lambda rng, n: (rng.standard_normal((2, n, 3)), rng.standard_normal((2, n, 3))))
def concatenate_3d_middle_axis(a, b):
    return np.concatenate([a, b], axis=1), np.concatenate([a, b], axis=-1)


@joins(lambda rng, n: (rng.integers(0, 9, n, dtype=np.int8), rng.integers(0, 9, n, dtype=np.uint8)))
def stack_mixed_integer_dtypes(a, b):
    return np.stack([a, b]), np.hstack([a, b]).dtype.name


@joins(_pair)
def column_stack_and_dstack(a, b):
    return np.column_stack([a[:, 0], b[:, 1]]), np.dstack([a, b]).shape


@joins(_pair)
def concatenate_is_a_fresh_copy(a, b):
    c = np.concatenate([a, b])
    c[0, 0] = 100.0
    return c, a
