"""Extern rows of `np.linalg` beyond inv, det, solve and norm (those are ops of `linalg.py`).

Decompositions give NumPy's tuples (`qr`, `svd`, `eigh`, `slogdet`, `lstsq`) as tuple
nodes. `eig` and `eigvals` are refused: their result dtype depends on the values (real when
every eigenvalue is), which no compiled graph can know. The array-API helpers (`cross`,
`outer`, `vecdot`, `matrix_norm`, ...) take their metadata from NumPy on zero-strided
probes, so they capture static shapes; a symbolic shape is a graph break for them.

    >>> from numpile_capture import ArrayMeta
    >>> from numpile_capture.ops.extern import extern_row
    >>> [str(m) for m in extern_row("linalg.svd").meta(a=ArrayMeta((5, 3), "float32"))]
    ['float32[5, 5]', 'float32[3]', 'float32[3, 3]']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta
from ._probes import is_static_shape, shaped_probe
from .extern import (
    ExternRow,
    call_by_name,
    dtype_of,
    register_extern,
    require_array,
    shaped,
    small,
    unbacked_size,
)

_SINGULAR = "LinAlgError (a singular or not positive-definite matrix)"
_NO_CONVERGENCE = "LinAlgError (the decomposition did not converge)"


@functools.cache
def _dtype(function: Callable[..., Any], dtype: np.dtype[Any], extra: tuple[Any, ...]) -> Any:
    return dtype_of(function, small(shaped((2, 2), dtype)), *extra)


def _matrix(function: Callable[..., Any], a: Any) -> ArrayMeta:
    array = require_array(a, "a")
    if array.ndim < 2:
        function(np.ones((2,), dtype=array.dtype))  # NumPy's own LinAlgError
    return array


def _square(function: Callable[..., Any], a: Any) -> ArrayMeta:
    array = _matrix(function, a)
    rows, cols = array.shape[-2:]
    if isinstance(rows, int) and isinstance(cols, int) and rows != cols:
        function(np.ones((1, 2), dtype=array.dtype))  # NumPy's own LinAlgError
    return array


def _cholesky_meta(a: Any, upper: bool = False) -> ArrayMeta:
    array = _square(np.linalg.cholesky, a)
    return ArrayMeta(array.shape, _dtype(np.linalg.cholesky, array.dtype, ()))


def _qr_meta(a: Any, mode: str = "reduced") -> ArrayMeta | tuple[ArrayMeta, ...]:
    array = _matrix(np.linalg.qr, a)
    *batch, m, n = array.shape
    k = m if isinstance(m, int) and isinstance(n, int) and m <= n else n
    if isinstance(m, int) and isinstance(n, int):
        k = min(m, n)
    elif m != n:
        raise NotImplementedError("qr of a matrix of symbolic, unequal sizes")
    dtype = _dtype(np.linalg.qr, array.dtype, ())
    if mode == "r":
        return shaped((*batch, k, n), dtype)
    if mode == "complete":
        return shaped((*batch, m, m), dtype), shaped((*batch, m, n), dtype)
    if mode != "reduced":
        raise NotImplementedError(f"qr with mode={mode!r}")
    return shaped((*batch, m, k), dtype), shaped((*batch, k, n), dtype)


def _min_dim(m: Any, n: Any) -> Any:
    if isinstance(m, int) and isinstance(n, int):
        return min(m, n)
    if m == n:
        return m
    raise NotImplementedError("a decomposition of a matrix of symbolic, unequal sizes")


def _svd_meta(
    a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> ArrayMeta | tuple[ArrayMeta, ...]:
    array = _matrix(np.linalg.svd, a)
    *batch, m, n = array.shape
    k = _min_dim(m, n)
    dtype = _dtype(np.linalg.svd, array.dtype, ())
    real = np.empty(0, dtype).real.dtype
    values = ArrayMeta((*batch, k), real)
    if not compute_uv:
        return values
    left = (m, m) if full_matrices else (m, k)
    right = (n, n) if full_matrices else (k, n)
    return ArrayMeta((*batch, *left), dtype), values, ArrayMeta((*batch, *right), dtype)


def _svdvals_meta(x: Any) -> ArrayMeta:
    array = _matrix(np.linalg.svdvals, x)
    *batch, m, n = array.shape
    dtype = _dtype(np.linalg.svdvals, array.dtype, ())
    return ArrayMeta((*batch, _min_dim(m, n)), dtype)


def _eigh_meta(a: Any, UPLO: str = "L") -> tuple[ArrayMeta, ArrayMeta]:
    array = _square(np.linalg.eigh, a)
    dtype = _dtype(np.linalg.eigh, array.dtype, ())
    values = ArrayMeta(array.shape[:-1], np.empty(0, dtype).real.dtype)
    return values, ArrayMeta(array.shape, dtype)


def _eigvalsh_meta(a: Any, UPLO: str = "L") -> ArrayMeta:
    array = _square(np.linalg.eigvalsh, a)
    return ArrayMeta(array.shape[:-1], _dtype(np.linalg.eigvalsh, array.dtype, ()))


def _pinv_meta(
    a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None
) -> ArrayMeta:
    array = _matrix(np.linalg.pinv, a)
    *batch, m, n = array.shape
    return ArrayMeta((*batch, n, m), _dtype(np.linalg.pinv, array.dtype, ()))


def _slogdet_meta(a: Any) -> tuple[ArrayMeta, ArrayMeta]:
    array = _square(np.linalg.slogdet, a)
    sign, log = np.linalg.slogdet(small(shaped((2, 2), array.dtype)))
    batch = array.shape[:-2]
    return ArrayMeta(batch, np.asarray(sign).dtype), ArrayMeta(batch, np.asarray(log).dtype)


def _lstsq_meta(a: Any, b: Any, rcond: Any = None, *, nnz: str) -> tuple[ArrayMeta, ...]:
    left = _matrix(np.linalg.lstsq, a)
    right = require_array(b, "b")
    if left.ndim != 2 or right.ndim not in (1, 2):
        np.linalg.lstsq(np.ones((2, 2, 2)), np.ones(2))  # NumPy's own error
    m, n = left.shape
    if isinstance(m, int) and isinstance(right.shape[0], int) and m != right.shape[0]:
        np.linalg.lstsq(np.ones((1, 1)), np.ones(2))  # NumPy's own error
    x, residuals, _, s = np.linalg.lstsq(
        small(shaped((2, 2), left.dtype)),
        np.ones((2,), right.dtype) if right.ndim == 1 else np.ones((2, 1), right.dtype),
    )
    cols = right.shape[1:]
    return (
        ArrayMeta((n, *cols), x.dtype),
        ArrayMeta((unbacked_size(nnz),), residuals.dtype),  # empty unless full rank and m > n
        ArrayMeta((), np.dtype(np.int32)),
        ArrayMeta((_min_dim(m, n),), s.dtype),
    )


def _matrix_rank_meta(
    A: Any,
    tol: Any = None,
    hermitian: bool = False,
    *,
    rtol: Any = None,
) -> ArrayMeta:
    array = require_array(A, "A")
    if array.ndim < 2:
        return ArrayMeta((), np.dtype(np.intp))
    return ArrayMeta(array.shape[:-2], dtype_of(np.linalg.matrix_rank, small(array)))


def _matrix_power_meta(a: Any, n: Any) -> ArrayMeta:
    array = _square(np.linalg.matrix_power, a)
    int(n)
    return ArrayMeta(array.shape, dtype_of(np.linalg.matrix_power, small(array), n))


def _cond_meta(x: Any, p: Any = None) -> ArrayMeta:
    array = _matrix(np.linalg.cond, x)
    return ArrayMeta(array.shape[:-2], dtype_of(np.linalg.cond, small(array), p))


def _multi_dot_meta(arrays: list[Any], *, out: Any = None) -> ArrayMeta:
    metas = [require_array(a, "arrays") for a in arrays]
    if len(metas) < 2:
        raise ValueError("Expecting at least two arrays.")
    first = metas[0].shape[:1] if metas[0].ndim == 2 else ()
    last = metas[-1].shape[1:] if metas[-1].ndim == 2 else ()
    dtype = dtype_of(np.linalg.multi_dot, [np.ones((2, 2), m.dtype) for m in metas])
    return ArrayMeta((*first, *last), dtype)


def _tensorinv_meta(a: Any, ind: int = 2) -> ArrayMeta:
    array = require_array(a, "a")
    dtype = _dtype(np.linalg.inv, array.dtype, ())
    return ArrayMeta((*array.shape[ind:], *array.shape[:ind]), dtype)


def _tensorsolve_meta(a: Any, b: Any, axes: Any = None) -> ArrayMeta:
    left, right = require_array(a, "a"), require_array(b, "b")
    if axes is not None:
        raise NotImplementedError("tensorsolve with axes=")
    dtype = dtype_of(np.linalg.solve, small(shaped((2, 2), left.dtype)), np.ones(2, right.dtype))
    return ArrayMeta(left.shape[right.ndim :], dtype)


def _probed(function: Callable[..., Any]) -> Callable[..., ArrayMeta]:
    # The metadata of `function` from NumPy itself, on zero-strided probes of static shapes.
    def meta(**arguments: Any) -> ArrayMeta:
        if not is_static_shape(*arguments.values()):
            raise NotImplementedError(f"{function.__name__} of symbolic shapes")
        probes = {
            key: shaped_probe(value) if isinstance(value, ArrayMeta) else value
            for key, value in arguments.items()
        }
        with np.errstate(all="ignore"):
            result = np.asarray(call_by_name(function, probes))
        return ArrayMeta(result.shape, result.dtype)

    return meta


def _refuse_eig(**_: Any) -> str:
    return "np.linalg.eig/eigvals: the result dtype depends on the values (real or complex)"


# NOTE: as JAX decides: eigenvalues of a general matrix have a derivative (Giles 2008, eq.
# 4.60), its eigenvectors none (each is defined up to a complex phase, the gauge, which no
# normalization fixes continuously). Capture breaks before either anyway (`_refuse_eig`).
_EIG = (
    "not in the graph (a break: the result is real or complex by the values); eigenvectors "
    "of a general matrix have no derivative (their complex phase is arbitrary, as in JAX), "
    "eigenvalues would take Giles's rule"
)
_INTEGER = "integer or bool result"
_ROWS = [
    ExternRow(
        "linalg.cholesky", np.linalg.cholesky, _cholesky_meta, ("a",), run_time_error=_SINGULAR
    ),
    ExternRow("linalg.qr", np.linalg.qr, _qr_meta, ("a",)),
    ExternRow(
        "linalg.svd",
        np.linalg.svd,
        _svd_meta,
        ("a",),
        run_time_error=_NO_CONVERGENCE,
    ),
    ExternRow(
        "linalg.svdvals", np.linalg.svdvals, _svdvals_meta, ("x",), run_time_error=_NO_CONVERGENCE
    ),
    ExternRow(
        "linalg.eigh",
        np.linalg.eigh,
        _eigh_meta,
        ("a",),
        run_time_error=_NO_CONVERGENCE,
    ),
    ExternRow(
        "linalg.eigvalsh",
        np.linalg.eigvalsh,
        _eigvalsh_meta,
        ("a",),
        run_time_error=_NO_CONVERGENCE,
    ),
    ExternRow("linalg.eig", np.linalg.eig, _eigh_meta, ("a",), no_grad=_EIG, refuse=_refuse_eig),
    ExternRow(
        "linalg.eigvals",
        np.linalg.eigvals,
        _eigvalsh_meta,
        ("a",),
        no_grad=_EIG,
        refuse=_refuse_eig,
    ),
    ExternRow(
        "linalg.pinv",
        np.linalg.pinv,
        _pinv_meta,
        ("a",),
        run_time_error=_NO_CONVERGENCE,
    ),
    ExternRow("linalg.slogdet", np.linalg.slogdet, _slogdet_meta, ("a",)),
    ExternRow(
        "linalg.lstsq",
        np.linalg.lstsq,
        _lstsq_meta,
        ("a", "b"),
        data_dependent=True,
        run_time_error=_NO_CONVERGENCE,
    ),
    ExternRow(
        "linalg.matrix_rank", np.linalg.matrix_rank, _matrix_rank_meta, ("A",), no_grad=_INTEGER
    ),
    ExternRow(
        "linalg.matrix_power",
        np.linalg.matrix_power,
        _matrix_power_meta,
        ("a",),
        no_grad="not written yet: a product of n factors (TODO issue 24)",
        run_time_error=_SINGULAR,
    ),
    ExternRow(
        "linalg.cond",
        np.linalg.cond,
        _cond_meta,
        ("x",),
        no_grad="not written yet: the ratio of extreme singular values (TODO issue 24)",
    ),
    ExternRow(
        "linalg.multi_dot",
        np.linalg.multi_dot,
        _multi_dot_meta,
        ("arrays",),
        variadic="arrays",
        no_grad="not written yet: a chain of matmuls (TODO issue 24)",
    ),
    ExternRow(
        "linalg.tensorinv",
        np.linalg.tensorinv,
        _tensorinv_meta,
        ("a",),
        no_grad="not written yet: inv of a reshaped tensor (TODO issue 24)",
        run_time_error=_SINGULAR,
    ),
    ExternRow(
        "linalg.tensorsolve",
        np.linalg.tensorsolve,
        _tensorsolve_meta,
        ("a", "b"),
        no_grad="not written yet: solve of a reshaped tensor (TODO issue 24)",
        run_time_error=_SINGULAR,
    ),
]
for _name, _arrays in (
    ("cross", ("x1", "x2")),
    ("outer", ("x1", "x2")),
    ("vecdot", ("x1", "x2")),
    ("matrix_norm", ("x",)),
    ("vector_norm", ("x",)),
    ("trace", ("x",)),
    ("diagonal", ("x",)),
    ("matmul", ("x1", "x2")),
    ("tensordot", ("x1", "x2")),
    ("matrix_transpose", ("x",)),
):
    _function = getattr(np.linalg, _name)
    _ROWS.append(
        ExternRow(
            f"linalg.{_name}",
            _function,
            _probed(_function),
            _arrays,
            no_grad="not written yet: the array-API alias of a differentiable op (TODO issue 24)",
        )
    )

for _row in _ROWS:
    register_extern(_row)
