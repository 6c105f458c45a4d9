"""Reductions over axes: sum, prod, max, min, arg*, any, all, mean, var, std; scans."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

reductions = functools.partial(program, "reductions")


def _mat(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 6)),)


def _cube(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((3, n, 5)),)


def _ints(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.integers(-50, 50, (n, 6), dtype=np.int32),)


def _small(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.uniform(0.5, 1.5, (n, 4)),)


@reductions(_mat)
def sum_all(x):
    return x.sum()


@reductions(_mat)
def sum_axis0_axis1(x):
    return np.sum(x, axis=0), np.sum(x, axis=1)


@reductions(_cube)
def sum_negative_axis_keepdims(x):
    return x.sum(axis=-1, keepdims=True)


@reductions(_cube)
def sum_tuple_axis(x):
    return np.sum(x, axis=(0, 2))


@reductions(_small)
def prod_axis(x):
    return np.prod(x, axis=1), x.prod()


@reductions(_mat)
def max_min_axis(x):
    return x.max(axis=0), np.min(x, axis=1), np.amax(x)


@reductions(_mat)
def argmax_argmin(x):
    return np.argmax(x, axis=1), x.argmin(axis=0), x.argmax()


@reductions(lambda rng, n: (rng.integers(0, 3, (n, 5)),))
def argmax_ties_first(x):
    return x.argmax(axis=1), x.argmin(axis=1)


@reductions(_mat)
def any_all_axis(x):
    return np.any(x > 1.0, axis=1), np.all(x > -3.0, axis=0), (x > 0).all()


@reductions(_cube)
def mean_axes(x):
    return x.mean(), x.mean(axis=1), np.mean(x, axis=(0, 1), keepdims=True)


@reductions(_mat)
def var_std_ddof(x):
    return x.var(axis=0), np.std(x, axis=1, ddof=1), np.var(x, ddof=1)


@reductions(_ints)
def int_sum_and_mean(x):
    return x.sum(axis=0), x.mean(axis=1), np.sum(x, dtype=np.int8)


@reductions(lambda rng, n: (rng.standard_normal((n, 5)).astype(np.float32),))
def float32_sum_dtype_float64(x):
    return x.sum(axis=1, dtype=np.float64), x.mean(dtype=np.float64), x.sum(axis=0)


@reductions(lambda rng, n: (rng.integers(0, 2, (n, 7)).astype(bool),))
def bool_sum_counts(x):
    return x.sum(axis=0), np.count_nonzero(x, axis=1), x.sum()


@reductions(_mat)
def cumsum_axes(x):
    return np.cumsum(x, axis=0), x.cumsum(axis=1), np.cumsum(x)


@reductions(_small)
def cumprod_axis(x):
    return np.cumprod(x, axis=1), x.cumprod()


@reductions(lambda rng, n: (rng.integers(-5, 5, (n, 4), dtype=np.int8),))
def int8_sum_promotes(x):
    return x.sum(axis=1), np.cumsum(x, axis=0), x.prod(axis=0)


@reductions(_mat)
def softmax_last_axis(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@reductions(_mat)
def log_sum_exp(x):
    m = np.max(x, axis=1)
    return m + np.log(np.sum(np.exp(x - m[:, None]), axis=1))


@reductions(_mat)
def l2_norm_rows(x):
    return np.sqrt((x * x).sum(axis=1))


@reductions(_cube)
def max_keepdims_then_subtract(x):
    return x - np.max(x, axis=(1, 2), keepdims=True)


@reductions(_mat)
def nan_aware_reductions(x):
    y = np.where(x > 1.0, np.nan, x)
    return np.nansum(y, axis=0), np.nanmax(y), np.nanmean(y, axis=1)


@reductions(_mat)
def reduction_then_pointwise(x):
    return np.abs(x).max(axis=0) * 2.0 + x.min(axis=0)


@reductions(_mat)
def ptp_and_median_free(x):
    return np.ptp(x, axis=1), x.max(axis=1) - x.min(axis=1)


@reductions(lambda rng, n: (rng.standard_normal((n, 6)),))
def sum_with_initial_and_where(x):
    return np.sum(x, axis=1, initial=10.0), np.max(x, axis=0, initial=-1.0)


@reductions(_ints)
def int_max_min_keepdims(x):
    return x.max(axis=1, keepdims=True), x.min(axis=0, keepdims=True)
