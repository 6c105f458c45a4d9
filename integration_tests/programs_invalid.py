"""Invalid programs: compiled code must raise what NumPy raises (same type and message), and leave
the inputs as eager left them (including mutations made before the failing line)."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

invalid = functools.partial(program, "invalid", expect_error=True)


@invalid(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n, 4))))
def broadcast_shape_mismatch(a, b):
    return a + b


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def reduction_axis_out_of_range(x):
    return x.sum(axis=2)


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def negative_axis_out_of_range(x):
    return np.max(x, axis=-3)


@invalid(lambda rng, n: (rng.integers(0, 9, n),))
def int_inplace_add_float_casting(x):
    x += 1.5
    return x


@invalid(lambda rng, n: (rng.integers(0, 9, n, dtype=np.int32), rng.standard_normal(n)))
def int_inplace_multiply_float_array(x, y):
    x *= y
    return x


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def reshape_wrong_size(x):
    return x.reshape(5, -1) if x.size % 5 else x.reshape(7, 7)


@invalid(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((4, 2))))
def matmul_inner_dimension_mismatch(a, b):
    return a @ b


@invalid(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n, 2))))
def concatenate_mismatched_axis(a, b):
    return np.concatenate([a, b], axis=0)


@invalid(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((n, 3, 1))))
def stack_mismatched_shapes(a, b):
    return np.stack([a, b])


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def transpose_bad_axes(x):
    return np.transpose(x, (0, 0))


@invalid(lambda rng, n: (rng.standard_normal(n),))
def index_out_of_bounds(x):
    return x[x.shape[0] + 2]


@invalid(lambda rng, n: (rng.integers(0, 9, n, dtype=np.uint8),))
def python_int_out_of_bounds_for_uint8(x):
    return x + 300


@invalid(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n + 1)))
def mutation_before_error_is_kept(x, y):
    x += 1.0
    return x + y


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def squeeze_non_unit_axis(x):
    return np.squeeze(x, axis=1)


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def broadcast_to_incompatible(x):
    return np.broadcast_to(x, (2, 3, 3))


@invalid(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal(3)))
def setitem_shape_mismatch(x, v):
    x[:2] = v[:2]
    return x


@invalid(lambda rng, n: (rng.standard_normal(n),))
def bitwise_on_float(x):
    return x & 1


@invalid(lambda rng, n: (rng.standard_normal((n, 3)),))
def einsum_bad_subscripts(x):
    return np.einsum("ij,jk->ik", x, x)
