"""`cublas_matmul`: the column-major gemm plan checked on the CPU, the cuBLAS call on a GPU.

The CPU test runs the plan the way cuBLAS reads it: each operand's memory viewed
column-major with the plan's leading dimension, transposed where the plan says, and
the product written column-major into a C-contiguous output.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_runtime.cublas_matmul import GemmPlan, gemm_plan

_GPU = rt.cupy_available()


def _column_major(flat: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    # The (rows x cols) column-major matrix cuBLAS reads at `flat` with leading dimension ld.
    step = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (step, ld * step))


def _run_plan(plan: GemmPlan, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # cuBLAS's A is `b` and its B is `a`; each read from its first element's address.
    def operand(x: np.ndarray, op: int, rows: int, cols: int, ld: int) -> np.ndarray:
        flat = np.lib.stride_tricks.as_strided(x, (x.size,), (x.itemsize,))
        if op == 0:
            return _column_major(flat, rows, cols, ld)
        return _column_major(flat, cols, rows, ld).T

    op_a = operand(b, plan.transa, plan.m, plan.k, plan.lda)
    op_b = operand(a, plan.transb, plan.k, plan.n, plan.ldb)
    out = np.empty((plan.n, plan.m), dtype=a.dtype)  # row-major (n x m) = column-major C
    flat_out = out.reshape(-1)
    _column_major(flat_out, plan.m, plan.n, plan.ldc)[...] = op_a @ op_b
    return out


def _layouts(rows: int, cols: int, dtype: str) -> list[np.ndarray]:
    base = np.arange(rows * cols, dtype=dtype).reshape(rows, cols) % 7 - 3
    fortran = np.asfortranarray(base)
    transposed = np.ascontiguousarray(base.T).T  # a transposed view: Fortran layout
    return [base, fortran, transposed]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,k,n", [(2, 3, 4), (1, 5, 3), (4, 1, 2), (3, 4, 1), (1, 1, 1)])
def test_the_gemm_plan_computes_a_row_major_product(dtype: str, m: int, k: int, n: int) -> None:
    for a, b in itertools.product(_layouts(m, k, dtype), _layouts(k, n, dtype)):
        plan = gemm_plan(a.shape, a.strides, b.shape, b.strides, a.itemsize)
        assert plan is not None, (a.strides, b.strides)
        np.testing.assert_array_equal(_run_plan(plan, a, b), a @ b)


def test_size_one_axes_with_any_stride_are_still_contiguous() -> None:
    a = np.arange(3.0).reshape(1, 3)
    column = np.arange(3.0).reshape(3, 1)
    odd_a = np.lib.stride_tricks.as_strided(a, (1, 3), (999, 8))
    odd_b = np.lib.stride_tricks.as_strided(column, (3, 1), (8, 999))
    plan = gemm_plan(odd_a.shape, odd_a.strides, odd_b.shape, odd_b.strides, 8)
    assert plan is not None
    np.testing.assert_array_equal(_run_plan(plan, odd_a, odd_b), a @ column)


@pytest.mark.parametrize(
    "a_shape,a_strides,b_shape,b_strides",
    [
        ((4, 4), (64, 16), (4, 4), (32, 8)),  # every other column: strided
        ((4, 4), (-32, 8), (4, 4), (32, 8)),  # reversed rows
        ((2, 3), (24, 8), (4, 4), (32, 8)),  # mismatched inner sizes
        ((0, 3), (24, 8), (3, 4), (32, 8)),  # empty
    ],
)
def test_layouts_cublas_cannot_read_have_no_plan(
    a_shape: Any, a_strides: Any, b_shape: Any, b_strides: Any
) -> None:
    assert gemm_plan(a_shape, a_strides, b_shape, b_strides, 8) is None


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU, reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cublas_matmul_matches_cupy_for_every_contiguous_layout(dtype: str) -> None:
    import cupy

    from numpile_runtime.cublas_matmul import cublas_matmul as matmul

    rng = np.random.default_rng(0)
    for m, k, n in [(64, 48, 80), (1, 33, 7), (130, 1, 5), (5, 70, 1)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        for x, y in itertools.product((a, np.asfortranarray(a)), (b, np.asfortranarray(b))):
            got = matmul(cupy.asarray(x), cupy.asarray(y))
            assert got is not None and got.flags.c_contiguous and got.dtype == dtype
            tol = 1e-5 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(got.get(), a @ b, rtol=tol, atol=tol)
    assert matmul(cupy.ones((2, 3)), cupy.ones((3, 2), dtype="f")) is None
    assert matmul(cupy.ones((4, 4))[:, ::2], cupy.ones((2, 2))) is None
    assert matmul(cupy.ones((2, 2, 2)), cupy.ones((2, 2))) is None
