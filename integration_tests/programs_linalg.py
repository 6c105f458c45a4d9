"""Linear algebra: matmul, @, dot, outer, einsum, tril, triu."""

from __future__ import annotations

import functools

import numpy as np
from harness import program

linalg = functools.partial(program, "linalg")


def _mm(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    return (rng.standard_normal((n, 5)), rng.standard_normal((5, 3)))


@linalg(_mm, rtol=1e-6)
def matmul_operator(a, b):
    return a @ b


@linalg(_mm, rtol=1e-6)
def matmul_function_and_dot(a, b):
    return np.matmul(a, b), np.dot(a, b), a.dot(b)


@linalg(lambda rng, n: (rng.standard_normal((2, n, 4)), rng.standard_normal((4, 3))), rtol=1e-6)
def batched_matmul_broadcast(a, b):
    return a @ b


@linalg(lambda rng, n: (rng.standard_normal((n, 4)), rng.standard_normal(4)), rtol=1e-6)
def matrix_vector(a, v):
    return a @ v, v @ a.T, np.dot(v, v)


@linalg(lambda rng, n: (rng.standard_normal(n), rng.standard_normal(3)))
def outer_products(a, b):
    return np.outer(a, b), np.multiply.outer(b, a)


@linalg(_mm, rtol=1e-6)
def einsum_matmul_and_transpose(a, b):
    return np.einsum("ij,jk->ik", a, b), np.einsum("ij->ji", a)


@linalg(lambda rng, n: (rng.standard_normal((n, 4)), rng.standard_normal((n, 4))), rtol=1e-6)
def einsum_rowwise_dot_and_trace(a, b):
    return np.einsum("ij,ij->i", a, b), np.einsum("ii", a.T @ b)


@linalg(lambda rng, n: (rng.standard_normal((3, n, 4)), rng.standard_normal((3, 4, 2))), rtol=1e-6)
def einsum_batched(a, b):
    return np.einsum("bij,bjk->bik", a, b), np.einsum("bij->b", a)


@linalg(lambda rng, n: (rng.standard_normal((n, n)),))
def tril_triu(x):
    return np.tril(x), np.triu(x, k=1), np.tril(x, -1) + np.triu(x)


@linalg(lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal(n)), rtol=1e-6)
def quadratic_form(a, v):
    return v @ a @ v, (a + a.T) @ v


@linalg(lambda rng, n: (rng.integers(-4, 4, (n, 3)), rng.integers(-4, 4, (3, 2))))
def integer_matmul(a, b):
    return a @ b, np.dot(a.astype(np.int8), b.astype(np.int8))


@linalg(
    lambda rng, n: (
        rng.standard_normal((n, 6)).astype(np.float32),
        rng.standard_normal((6, 2)).astype(np.float32),
    ),
    rtol=1e-5,
)
def float32_linear_layer(x, w):
    return np.maximum(x @ w + np.float32(0.1), 0)


@linalg(lambda rng, n: (rng.standard_normal((n, 3)),), rtol=1e-6)
def gram_matrix_and_inner(x):
    return x.T @ x, np.inner(x, x), np.vdot(x, x)


@linalg(lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((3,))), rtol=1e-6)
def matmul_on_transposed_views(x, v):
    return x[::-1].T @ x[::-1], np.tensordot(x, v, axes=1)


@linalg(lambda rng, n: (np.asfortranarray(rng.standard_normal((n, 4))),), rtol=1e-6)
def matmul_fortran_operand(x):
    return x @ x.T, x.T @ x


@linalg(lambda rng, n: (rng.standard_normal((n, 3)) + 1j * rng.standard_normal((n, 3)),), rtol=1e-6)
def complex_matmul_and_conjugate_transpose(z):
    return z.conj().T @ z, np.einsum("ij,ij->j", z, z.conj())


@linalg(lambda rng, n: (rng.standard_normal((n, n)),))
def tril_triu_of_views_and_offsets(x):
    return np.triu(x[::-1], k=-1), np.tril(x.T, k=2), np.triu(x[:, :2])
