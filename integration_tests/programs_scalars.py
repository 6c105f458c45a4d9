"""Python int and float arguments that change between calls: learning rates, offsets, step
counts. Call 2 draws other values, so with ``dynamic=None`` they become graph inputs there
(weak NEP 50 operands); the factories also draw values NumPy treats specially: out of an
integer dtype's range (OverflowError, or a comparison NumPy still answers), zero divisors,
infinities, NaN and values a float32 cast overflows."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

scalars = functools.partial(program, "scalars")


def _pick(rng: np.random.Generator, choices: list[float]) -> float:
    return choices[int(rng.integers(len(choices)))]


@scalars(
    lambda rng, n: (
        rng.standard_normal(n).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
        float(rng.uniform(0.01, 0.1)),
    )
)
def sgd_step_f32(w, g, lr):
    return w - lr * g


@scalars(
    lambda rng, n: (
        rng.standard_normal((n, 3)),
        rng.standard_normal((n, 3)),
        float(rng.uniform(0.01, 0.1)),
        float(rng.uniform(0.8, 0.99)),
    )
)
def momentum_inplace(w, v, lr, beta):
    v *= beta
    v += w
    w -= lr * v


@scalars(
    lambda rng, n: (
        rng.standard_normal(n).astype(np.float16),
        float(rng.uniform(-3, 3)),
    )
)
def float16_times_float(x, s):
    return x * s + s


@scalars(lambda rng, n: (rng.integers(-50, 50, n, dtype=np.int8), int(rng.integers(-60, 60))))
def int8_plus_int(x, k):
    return x + k, k - x, x * k


@scalars(lambda rng, n: (rng.integers(0, 255, n, dtype=np.uint8), _pick(rng, [7, -1, 300])))
def uint8_compared_with_int(x, k):
    # Comparisons with ints out of uint8's range are answered, not refused.
    return x > k, x == k, k <= x


@scalars(lambda rng, n: (rng.integers(-9, 9, n), _pick(rng, [3, 0, -2])))
def int_floor_divide_by_int(x, k):
    return x // k, x % k


@scalars(lambda rng, n: (rng.integers(-9, 9, (n, 2), dtype=np.int32), float(rng.uniform(1, 2))))
def int_array_times_float(x, s):
    return x * s, x / s


@scalars(lambda rng, n: (rng.uniform(0.5, 2.0, n).astype(np.float32), int(rng.integers(1, 4))))
def float_power_int(x, k):
    return x**k, np.power(k, x)


@scalars(
    lambda rng, n: (
        rng.standard_normal(n).astype(np.float32),
        _pick(rng, [1e300, float("inf"), float("nan"), -0.0, 2.5]),
    )
)
def float32_times_special_float(x, s):
    # 1e300 overflows the float32 cast (a RuntimeWarning in NumPy); NaN and inf propagate.
    return x * s, np.maximum(x, s)


@scalars(
    lambda rng, n: (
        rng.standard_normal(n),
        float(rng.uniform(-1, 1)),
    )
)
def scalar_in_a_branch(x, s):
    if s > 0:
        return x * s
    return x - s


@scalars(lambda rng, n: (rng.standard_normal(2 * n), int(rng.integers(1, 4))))
def int_as_slice_bound_and_operand(x, k):
    return x[:k] * k


@scalars(
    lambda rng, n: (
        rng.standard_normal(n),
        rng.standard_normal(n),
        (float(rng.uniform(0, 1)), float(rng.uniform(0, 1))),
    )
)
def scalars_in_a_tuple(x, y, coefficients):
    a, b = coefficients
    return a * x + b * y, np.add(x, a)


@scalars(lambda rng, n: (rng.standard_normal(n), float(rng.uniform(0, 1))))
def scalar_returned_and_formatted(x, s):
    return x + s, s, f"{s:.3f}"


@scalars(lambda rng, n: (rng.standard_normal(n), float(rng.uniform(0, 1))))
def optional_scalar(x, s=None):
    if s is not None:
        x = x * s
    return np.exp(x)


@scalars(lambda rng, n: (rng.standard_normal(n), float(rng.uniform(0.5, 1))), fullgraph=False)
def scalar_live_across_a_break(x, s):
    y = np.sin(x) * s
    print("scaled")
    return y + s * x


def _adam_inputs(rng: np.random.Generator, n: int) -> tuple[object, ...]:
    w, g, m = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    v = rng.uniform(0, 1, n).astype(np.float32)
    return (w, g, m, v, float(rng.uniform(1e-4, 1e-2)), int(rng.integers(1, 50)))


@scalars(_adam_inputs)
def adam_step_with_bias_correction(w, g, m, v, lr, t):
    b1, b2 = 0.9, 0.999
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    step = lr * (1 - b2**t) ** 0.5 / (1 - b1**t)
    return w - step * m / (np.sqrt(v) + 1e-8), m, v


@scalars(lambda rng, n: (rng.standard_normal(n), _pick(rng, [2, 0, -3]), _pick(rng, [0.5, 0.0])))
def scalar_arithmetic_with_zero_operands(x, k, s):
    # k // 1, s * 2 and k - s never divide by zero; NumPy divides by the zeros in x / s.
    return x * (k // 1 - s * 2), x / s


@scalars(_adam_inputs)
def adam_step_with_math_and_builtins(w, g, m, v, lr, t):
    import math

    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    step = max(lr, 1e-4) * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
    decay = 1.0 - min(abs(lr) * 0.01, 1e-3)
    return w * decay - step * m / (np.sqrt(v) + 1e-8), float(t)


@scalars(_adam_inputs)
def adam_step_with_numpy_ufuncs_of_scalars(w, g, m, v, lr, t):
    # np.sqrt / np.maximum of scalars alone give NumPy float64 scalars (strong: the float32
    # arrays they scale become float64, as in eager).
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    step = np.maximum(lr, 1e-4) * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
    return w - step * m / (np.sqrt(v) + 1e-8), np.sqrt(t), np.add(t, 1)


@scalars(lambda rng, n: (rng.integers(0, 255, n, dtype=np.uint8), _pick(rng, [-129, -1, 0])))
def clip_with_int_bounds_past_the_dtype(x, low):
    # NumPy drops an int bound past the dtype's range on its own side.
    return np.clip(x, low, 2**63 - 1), np.clip(x, None, 300), np.clip(x, low, 200)


@scalars(lambda rng, n: (rng.integers(0, 2, n).astype(bool), rng.standard_normal(n)))
def power_operator_fast_exponents(flags, x):
    # `** 2` on bools is NumPy's square (int8); `** -1` and `** 0.5` are reciprocal and sqrt.
    return flags**2, x**2, x**-1, np.abs(x) ** 0.5, x**2.0
