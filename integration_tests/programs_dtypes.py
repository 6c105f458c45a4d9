"""Mixed dtypes and weak Python scalars (NEP 50): int8 + 1, float32 * 2.5, uint8 and int32
wrap-around, bool arithmetic, complex, explicit casts, true division of integers."""

from __future__ import annotations

import functools

import numpy as np
from harness import Inputs, program

dtypes = functools.partial(program, "dtypes")


@dtypes(lambda rng, n: (rng.integers(-100, 100, n, dtype=np.int8),))
def int8_plus_python_int_stays_int8(x):
    return x + 1, x * 3, x - 100


@dtypes(lambda rng, n: (rng.standard_normal(n).astype(np.float32),))
def float32_times_python_float_stays_float32(x):
    return x * 2.5, 1.0 / (x + 3.0), x**2


@dtypes(lambda rng, n: (rng.integers(200, 256, n, dtype=np.uint8),))
def uint8_wraps_around(x):
    return x + 100, x * 2, x - 250


@dtypes(lambda rng, n: (rng.integers(2**30, 2**31 - 1, n, dtype=np.int32),))
def int32_overflow_wraps(x):
    return x + x, x * 4, -x - x


@dtypes(lambda rng, n: (np.full(n, np.iinfo(np.int64).max), np.full(n, np.iinfo(np.int64).min)))
def int64_extremes_wrap(hi, lo):
    return hi + 1, lo - 1, abs(lo), -lo


@dtypes(lambda rng, n: (rng.integers(0, 2, n).astype(bool), rng.integers(0, 2, n).astype(bool)))
def bool_arithmetic(a, b):
    return a + b, a & b, a | b, a ^ b, ~a, a * 3, a.sum()


@dtypes(lambda rng, n: (rng.integers(0, 2, n).astype(bool), rng.standard_normal(n)))
def bool_times_float(mask, x):
    return mask * x, mask + 0.5, np.where(mask, x, 0.0) + True


@dtypes(
    lambda rng, n: (
        rng.integers(-5, 5, n, dtype=np.int16),
        rng.standard_normal(n).astype(np.float32),
    )
)
def int16_with_float32_promotes(i, f):
    return i + f, i * 1.5, f + np.int16(3)


@dtypes(
    lambda rng, n: (rng.integers(1, 9, n, dtype=np.int32), rng.integers(1, 9, n, dtype=np.int32))
)
def integer_true_division(a, b):
    return a / b, a // b, a % b, np.divmod(a, b)


@dtypes(
    lambda rng, n: (rng.integers(-9, 9, n, dtype=np.int64), rng.integers(-9, 9, n, dtype=np.int64))
)
def integer_floor_division_signs(a, b):
    b = np.where(b == 0, 3, b)
    return a // b, a % b, np.fmod(a, b), np.remainder(a, b)


@dtypes(lambda rng, n: (rng.standard_normal(n) + 1j * rng.standard_normal(n),))
def complex_arithmetic(z):
    return z * (1 - 2j), z.conj() * z, np.abs(z), z.real + z.imag, np.angle(z)


@dtypes(
    lambda rng, n: (
        rng.standard_normal(n).astype(np.float32),
        rng.standard_normal(n).astype(np.float32),
    )
)
def complex64_from_float32(a, b):
    z = a + 1j * b
    return z, np.exp(z), z * 2.0


@dtypes(lambda rng, n: (rng.standard_normal(n),))
def astype_round_trips(x):
    y = np.clip(x * 100, -120.0, 120.0)
    return y.astype(np.int32), y.astype(np.int8), y.astype(np.float16), (y > 0).astype(np.uint8)


@dtypes(
    lambda rng, n: (
        rng.integers(0, 255, n, dtype=np.uint8),
        rng.integers(-100, 100, n, dtype=np.int8),
    )
)
def uint8_with_int8_promotes_to_int16(u, i):
    return u + i, u * i, np.maximum(u, i)


@dtypes(lambda rng, n: (rng.standard_normal(n).astype(np.float16),))
def float16_chain(x):
    return x * 3.0 + 1.0, np.exp(x), x.sum(), x.mean()


@dtypes(lambda rng, n: (rng.standard_normal(n).astype(np.float32), np.float64(2.0)))
def numpy_scalar_is_strong(x, s):
    return x * s, x * np.float32(2.0), x + np.int64(1)


@dtypes(lambda rng, n: Inputs((rng.integers(-50, 50, n, dtype=np.int8),), {"k": 7, "f": 0.5}))
def python_scalar_arguments(x, k, f):
    return x * k, x * f, x + (k * 2)


@dtypes(
    lambda rng, n: (
        rng.integers(0, 100, n, dtype=np.uint32),
        rng.integers(0, 100, n, dtype=np.int64),
    )
)
def unsigned_with_signed(a, b):
    return a + b, a - 50, a.astype(np.int64) - b


@dtypes(lambda rng, n: (rng.integers(0, 2**16, n, dtype=np.uint16),))
def bitwise_and_shifts(x):
    return x >> 3, x << 2, x & 0xFF, x | 1, np.invert(x)


@dtypes(lambda rng, n: (rng.standard_normal(n), rng.integers(0, 5, n)), fullgraph=False)
def python_scalars_from_reductions(x, i):
    total = float(x.sum())
    count = int(i.max())
    return x * total + count, x.dtype.itemsize, x.ndim
