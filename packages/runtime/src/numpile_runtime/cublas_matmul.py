"""2-D matrix products of CuPy arrays straight through cuBLAS.

`cupy.matmul` wraps one cuBLAS call in its gufunc machinery; a compiled graph
whose matmuls are small is bound by host time, and calling cuBLAS directly saves
some of it (figures in docs/performance_notes.md). `cublas_matmul` calls `cublasSgemm` or
`cublasDgemm` for the common case: two 2-D float32 or float64 arrays, each C- or
Fortran-contiguous (a transposed weight is Fortran-contiguous), on CuPy's current
stream and cuBLAS handle, so the math mode CuPy chose (`CUPY_TF32`) applies.
Anything else returns None and the caller keeps `cupy.matmul`.

cuBLAS is column-major. A row-major product `C = A @ B` (m x n) is the
column-major product `C^T = B^T A^T` (n x m): a C-contiguous operand read
column-major is already its transpose (no op), a Fortran-contiguous one needs
the transpose op. `gemm_plan` works that out from shapes and strides alone
(tested on the CPU).

    >>> gemm_plan((2, 3), (24, 8), (3, 4), (32, 8), 8)
    GemmPlan(transa=0, transb=0, m=4, n=2, k=3, lda=4, ldb=3, ldc=4)
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

_OP_N, _OP_T = 0, 1
_POINTER_MODE_HOST = 0
_INT32_MAX = 2**31 - 1
# alpha = 1 and beta = 0 in host memory, per dtype; passed to cuBLAS by address (read
# once: `ndarray.ctypes` builds an object per access).
_SCALARS = {char: (np.ones(1, dtype=char), np.zeros(1, dtype=char)) for char in ("f", "d")}
_SCALAR_ADDRESSES = {
    char: (int(one.ctypes.data), int(zero.ctypes.data)) for char, (one, zero) in _SCALARS.items()
}
# Each layout's plan (or None), remembered: a compiled call multiplies the same shapes and
# strides call after call. Key: (a.shape, a.strides, b.shape, b.strides, itemsize).
_PLANS: dict[tuple[Any, ...], GemmPlan | None] = {}
_MAX_PLANS = 1024


@attrs.frozen
class GemmPlan:
    """The column-major gemm arguments computing a row-major `A @ B` into a C-contiguous
    output: cuBLAS's A is our B and its B our A; m, n, k and leading dimensions in
    elements."""

    transa: int
    transb: int
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int


def _operand(shape: tuple[int, int], strides: tuple[int, int], itemsize: int) -> tuple[int, int]:
    # (op, leading dimension) of a row-major (rows x cols) operand read column-major, or
    # (-1, 0) when its layout is neither C- nor Fortran-contiguous.
    rows, cols = shape
    if strides[1] == itemsize and (rows == 1 or strides[0] == cols * itemsize):
        return _OP_N, max(cols, 1)
    if strides[0] == itemsize and (cols == 1 or strides[1] == rows * itemsize):
        return _OP_T, max(rows, 1)
    return -1, 0


def gemm_plan(
    a_shape: tuple[int, int],
    a_strides: tuple[int, int],
    b_shape: tuple[int, int],
    b_strides: tuple[int, int],
    itemsize: int,
) -> GemmPlan | None:
    """The gemm computing `a @ b` from the operands' shapes and byte strides, or None when
    a layout is not contiguous, a size is 0 or over 32 bits.

    >>> gemm_plan((2, 3), (8, 16), (3, 4), (32, 8), 8).transb  # `a` Fortran-ordered
    1
    """
    (m, k), (k2, n) = a_shape, b_shape
    if k != k2 or 0 in (m, n, k) or max(m, n, k) > _INT32_MAX:
        return None
    op_b, ld_b = _operand(b_shape, b_strides, itemsize)
    op_a, ld_a = _operand(a_shape, a_strides, itemsize)
    if op_a < 0 or op_b < 0:
        return None
    return GemmPlan(op_b, op_a, n, m, k, ld_b, ld_a, n)


def cublas_matmul(a: Any, b: Any) -> Any:
    """`a @ b` for 2-D CuPy arrays of one float dtype through cuBLAS, or None when the
    operands are not such (3-D, integer, mixed dtypes, strided views, empty).

    >>> cublas_matmul(cupy.ones((2, 3), "f"), cupy.ones((3, 4), "f"))  # doctest: +SKIP
    array([[3., 3., 3., 3.], [3., 3., 3., 3.]], dtype=float32)
    """
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype.char not in _SCALARS:
        return None
    key = (a.shape, a.strides, b.shape, b.strides, a.itemsize)
    try:
        plan = _PLANS[key]
    except KeyError:
        plan = gemm_plan(*key)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    if plan is None:
        return None
    import cupy
    from cupy.cuda import cublas, device

    out = cupy.empty((plan.n, plan.m), dtype=a.dtype)
    handle = device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, _POINTER_MODE_HOST)
    one, zero = _SCALAR_ADDRESSES[a.dtype.char]
    gemm = cublas.sgemm if a.dtype.char == "f" else cublas.dgemm
    gemm(
        handle,
        plan.transa,
        plan.transb,
        plan.m,
        plan.n,
        plan.k,
        one,
        b.data.ptr,
        plan.lda,
        a.data.ptr,
        plan.ldb,
        zero,
        out.data.ptr,
        plan.ldc,
    )
    return out
