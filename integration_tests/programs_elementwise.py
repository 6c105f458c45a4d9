"""Elementwise chains: ufunc chains, transcendental functions, mixed operators and methods."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

elementwise = functools.partial(program, "elementwise")


def _one(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 5)),)


def _two(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 5)), rng.standard_normal((n, 5)))


def _three(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return tuple(rng.standard_normal((n, 6)) for _ in range(3))


def _positive(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.uniform(0.1, 4.0, (n, 5)),)


def _f32(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (
        rng.standard_normal((n, 8)).astype(np.float32),
        rng.standard_normal(8).astype(np.float32),
    )


@elementwise(_two)
def add_mul_sub(x, y):
    return (x + y) * (x - y)


@elementwise(_three)
def fused_multiply_add(a, b, c):
    return np.sin(a) * b + c


@elementwise(_one)
def sin_cos_identity(x):
    return np.sin(x) ** 2 + np.cos(x) ** 2


@elementwise(_positive)
def exp_log_sqrt(x):
    return np.exp(np.log(x) * 0.5) - np.sqrt(x)


@elementwise(_one)
def tanh_sigmoid(x):
    return np.tanh(x) + 1.0 / (1.0 + np.exp(-x))


@elementwise(_one)
def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


@elementwise(_one)
def relu_via_maximum(x):
    return np.maximum(x, 0.0)


@elementwise(_two)
def where_select(x, y):
    return np.where(x > y, x, y * 2.0)


@elementwise(_one)
def clip_and_abs(x):
    return np.abs(np.clip(x, -0.5, 0.5))


@elementwise(_one)
def floor_ceil_round(x):
    y = x * 3.7
    return np.floor(y) + np.ceil(y) - np.round(y) + np.trunc(y)


@elementwise(_two)
def divide_floor_divide_mod(x, y):
    y = np.abs(y) + 0.5
    return x / y, x // y, x % y


@elementwise(_positive)
def power_and_reciprocal(x):
    return np.power(x, 1.5) + np.reciprocal(x) + x**-2


@elementwise(_one)
def comparisons_to_float(x):
    return (x > 0).astype(np.float64) - (x <= -0.5) * 1.0


@elementwise(_two)
def logical_combination(x, y):
    return np.logical_and(x > 0, y < 0) | np.logical_not(x > y) ^ (y > 1)


@elementwise(_one)
def sign_and_negative(x):
    return np.sign(x) * np.negative(x) + np.positive(x)


@elementwise(_positive)
def log_family(x):
    return np.log2(x) + np.log10(x) + np.log1p(x) + np.expm1(-x)


@elementwise(_one)
def inverse_trig(x):
    t = np.tanh(x)
    return np.arcsin(t) + np.arccos(t) + np.arctan(x) + np.arctan2(x, 1.5)


@elementwise(_one)
def hyperbolic(x):
    return np.sinh(x) - np.cosh(x) + np.arcsinh(x)


@elementwise(_f32)
def float32_chain(x, b):
    return np.exp(x - 1.0) * b + np.float32(0.25)


@elementwise(_two)
def methods_chain(x, y):
    return x.clip(-1.0, 1.0).round(2) + abs(y)


@elementwise(_two)
def hypot_copysign_fmax(x, y):
    return np.hypot(x, y) + np.copysign(x, y) + np.fmax(x, y) - np.fmin(x, y)


@elementwise(_one)
def square_cbrt_deg(x):
    return np.square(x) + np.cbrt(x) + np.deg2rad(np.rad2deg(x))


@elementwise(_two)
def softplus_stable(x, y):
    return np.logaddexp(x, y) + np.log(1.0 + np.exp(-np.abs(x))) + np.maximum(x, 0.0)
