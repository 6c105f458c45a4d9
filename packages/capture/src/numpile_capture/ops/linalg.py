"""Linear algebra as EXTERN ops that call NumPy (matmul, dot, inner, einsum, tensordot), and
tril/triu.

Their meta rules compute shapes in pure Python; on an invalid program with
static shapes they call NumPy on zero-strided probes so the exception is
NumPy's own, message included. Result dtypes come from NumPy on one-element
probes.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("matmul").meta(ArrayMeta((5, 2, 3), "float32"), ArrayMeta((3,), "int8")))
    'float32[5, 2]'
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta
from ..op import Op, OpKind, register_op
from ._probes import is_static_shape, probe, result_dtype, shaped_probe
from ._shapes import broadcast_shapes, normalize_axes, reduced_shape


def _error_probe(value: Any) -> Any:
    if isinstance(value, ArrayMeta):
        return shaped_probe(value) if is_static_shape(value) else probe(value)
    return probe(value)


def _raise_like_numpy(function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    # Called only where the shapes are invalid: NumPy raises before allocating anything.
    function(*(_error_probe(a) for a in args), **kwargs)
    raise ValueError(f"{getattr(function, '__name__', function)}: invalid operand shapes")


def _core_probe(value: Any) -> Any:
    if isinstance(value, ArrayMeta):
        return np.zeros((1,) * value.ndim, dtype=value.dtype)
    return probe(value)


def _matmul_meta(a: Any, b: Any) -> ArrayMeta:
    if not (isinstance(a, ArrayMeta) and isinstance(b, ArrayMeta)) or 0 in (a.ndim, b.ndim):
        _raise_like_numpy(np.matmul, a, b)
    dtype = result_dtype(np.matmul, _core_probe(a), _core_probe(b))
    a_shape = a.shape if a.ndim >= 2 else (1, *a.shape)
    b_shape = b.shape if b.ndim >= 2 else (*b.shape, 1)
    if a_shape[-1] != b_shape[-2]:
        _raise_like_numpy(np.matmul, a, b)
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    rows = (a_shape[-2],) if a.ndim >= 2 else ()
    cols = (b_shape[-1],) if b.ndim >= 2 else ()
    return ArrayMeta((*batch, *rows, *cols), dtype)


matmul = register_op(Op("matmul", OpKind.EXTERN, _matmul_meta, np.matmul))


def _dot_meta(a: Any, b: Any) -> ArrayMeta:
    if not (isinstance(a, ArrayMeta) and isinstance(b, ArrayMeta)):
        a_meta = a if isinstance(a, ArrayMeta) else b
        dtype = result_dtype(np.dot, _core_probe(a), _core_probe(b))
        return ArrayMeta(a_meta.shape if isinstance(a_meta, ArrayMeta) else (), dtype)
    dtype = result_dtype(np.dot, _core_probe(a), _core_probe(b))
    if a.ndim == 0 or b.ndim == 0:
        return ArrayMeta(b.shape if a.ndim == 0 else a.shape, dtype)
    contracted = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if a.shape[-1] != contracted:
        _raise_like_numpy(np.dot, a, b)
    rest = () if b.ndim == 1 else (*b.shape[:-2], b.shape[-1])
    return ArrayMeta((*a.shape[:-1], *rest), dtype)


dot = register_op(Op("dot", OpKind.EXTERN, _dot_meta, np.dot))


def _inner_meta(a: Any, b: Any) -> ArrayMeta:
    dtype = result_dtype(np.inner, _core_probe(a), _core_probe(b))
    if not (isinstance(a, ArrayMeta) and isinstance(b, ArrayMeta)) or 0 in (a.ndim, b.ndim):
        shapes = [v.shape for v in (a, b) if isinstance(v, ArrayMeta) and v.ndim]
        return ArrayMeta(shapes[0] if shapes else (), dtype)
    if a.shape[-1] != b.shape[-1]:
        _raise_like_numpy(np.inner, a, b)
    return ArrayMeta((*a.shape[:-1], *b.shape[:-1]), dtype)


inner = register_op(Op("inner", OpKind.EXTERN, _inner_meta, np.inner))


def normalize_tensordot_axes(axes: Any, a_ndim: int, b_ndim: int) -> tuple[tuple[int, ...], ...]:
    """np.tensordot's `axes` (an int N, or two sequences) as two tuples of non-negative axes.

    >>> normalize_tensordot_axes(1, 2, 2)
    ((1,), (0,))
    """
    if isinstance(axes, int | np.integer):
        count = operator.index(axes)
        if count < 0 or count > min(a_ndim, b_ndim):
            raise ValueError("shape-mismatch for sum")
        return tuple(range(a_ndim - count, a_ndim)), tuple(range(count))
    a_axes, b_axes = axes
    a_axes = tuple(a_axes) if isinstance(a_axes, tuple | list) else (a_axes,)
    b_axes = tuple(b_axes) if isinstance(b_axes, tuple | list) else (b_axes,)
    if len(a_axes) != len(b_axes):
        raise ValueError("shape-mismatch for sum")
    return (
        tuple(operator.index(x) % a_ndim if a_ndim else 0 for x in a_axes),
        tuple(operator.index(x) % b_ndim if b_ndim else 0 for x in b_axes),
    )


def _tensordot_meta(a: ArrayMeta, b: ArrayMeta, *, axes: tuple[tuple[int, ...], ...]) -> ArrayMeta:
    a_axes, b_axes = normalize_tensordot_axes(axes, a.ndim, b.ndim)
    if any(a.shape[i] != b.shape[j] for i, j in zip(a_axes, b_axes, strict=True)):
        raise ValueError("shape-mismatch for sum")
    dtype = result_dtype(np.dot, _core_probe(a), _core_probe(b))
    a_free = tuple(d for i, d in enumerate(a.shape) if i not in a_axes)
    b_free = tuple(d for i, d in enumerate(b.shape) if i not in b_axes)
    return ArrayMeta((*a_free, *b_free), dtype)


def _tensordot_impl(a: Any, b: Any, *, axes: Any) -> Any:
    return np.tensordot(a, b, axes)


tensordot = register_op(Op("tensordot", OpKind.EXTERN, _tensordot_meta, _tensordot_impl))


def _einsum_terms(subscripts: str, operands: tuple[ArrayMeta, ...]) -> tuple[Any, ...] | None:
    # The output shape of einsum, or None when the subscripts do not fit the operands.
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        return None
    sizes: dict[str, Any] = {}
    counts: dict[str, int] = {}
    ellipsis_shapes: list[tuple[Any, ...]] = []
    for term, meta in zip(terms, operands, strict=True):
        before, dots, after = term.partition("...")
        labels = before + after
        extra = meta.ndim - len(labels)
        if (extra != 0 and not dots) or extra < 0 or (not labels.isalpha() and labels):
            return None
        dims = list(meta.shape)
        ellipsis_shapes.append(tuple(dims[len(before) : len(before) + extra]))
        labelled = dims[: len(before)] + dims[len(before) + extra :]
        for label, dim in zip(labels, labelled, strict=True):
            counts[label] = counts.get(label, 0) + 1
            previous = sizes.get(label, 1)
            if dim != 1 and previous != 1 and dim != previous:
                return None
            sizes[label] = dim if previous == 1 else previous
    ellipsis = broadcast_shapes(*ellipsis_shapes)
    if not arrow:
        singles = sorted(label for label, count in counts.items() if count == 1)
        return (*ellipsis, *(sizes[label] for label in singles))
    before, dots, after = rhs.partition("...")
    if any(label not in sizes for label in before + after):
        return None
    return (
        *(sizes[label] for label in before),
        *(ellipsis if dots else ()),
        *(sizes[label] for label in after),
    )


def _einsum_meta(*operands: ArrayMeta, subscripts: str, optimize: Any = False) -> ArrayMeta:
    if not all(isinstance(x, ArrayMeta) for x in operands):
        raise TypeError("einsum operands must be arrays")
    shape = _einsum_terms(subscripts, operands)
    if shape is None:
        _raise_like_numpy(np.einsum, subscripts, *operands)
    dtype = result_dtype(np.einsum, subscripts, *(_core_probe(x) for x in operands))
    return ArrayMeta(tuple(shape or ()), dtype)


def _einsum_impl(*operands: Any, subscripts: str, optimize: Any = False) -> Any:
    # `optimize` picks NumPy's contraction path (tensordot/BLAS): other roundings and layouts.
    return np.einsum(subscripts, *operands, optimize=optimize)


einsum = register_op(Op("einsum", OpKind.EXTERN, _einsum_meta, _einsum_impl))


def _triangle_meta(function: Callable[..., Any]) -> Callable[..., ArrayMeta]:
    def meta(x: ArrayMeta, *, k: int = 0) -> ArrayMeta:
        operator.index(k)
        if x.ndim == 0:
            function(np.zeros((), dtype=x.dtype), k)  # raises NumPy's own error
        shape = (x.shape[0], x.shape[0]) if x.ndim == 1 else x.shape
        return ArrayMeta(shape, x.dtype)

    return meta


def _triangle_impl(function: Callable[..., Any]) -> Callable[..., Any]:
    def impl(x: Any, *, k: int = 0) -> Any:
        return function(x, k)

    return impl


tril = register_op(Op("tril", OpKind.EXTERN, _triangle_meta(np.tril), _triangle_impl(np.tril)))
triu = register_op(Op("triu", OpKind.EXTERN, _triangle_meta(np.triu), _triangle_impl(np.triu)))


def _linalg_probe(meta: ArrayMeta) -> Any:
    # A tiny well-conditioned stand-in with `meta`'s dtype (1x1 identity matrices).
    return np.ones((1,) * max(meta.ndim, 2), dtype=meta.dtype)


def _check_square(function: Callable[..., Any], a: ArrayMeta) -> None:
    if a.ndim < 2:
        function(np.zeros((1,) * a.ndim, dtype=a.dtype))  # raises NumPy's own LinAlgError
    if a.shape[-1] != a.shape[-2]:
        function(np.zeros((1, 2), dtype=a.dtype))  # raises NumPy's own LinAlgError
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _inv_meta(a: ArrayMeta) -> ArrayMeta:
    _check_square(np.linalg.inv, a)
    return ArrayMeta(a.shape, result_dtype(np.linalg.inv, _linalg_probe(a)))


_SINGULAR = "LinAlgError (a singular matrix)"

inv = register_op(Op("inv", OpKind.EXTERN, _inv_meta, np.linalg.inv, run_time_error=_SINGULAR))


def _det_meta(a: ArrayMeta) -> ArrayMeta:
    _check_square(np.linalg.det, a)
    return ArrayMeta(a.shape[:-2], result_dtype(np.linalg.det, _linalg_probe(a)))


det = register_op(Op("det", OpKind.EXTERN, _det_meta, np.linalg.det))


def _solve_meta(a: ArrayMeta, b: ArrayMeta) -> ArrayMeta:
    _check_square(np.linalg.solve, a)
    dtype = result_dtype(np.linalg.solve, _linalg_probe(a), np.ones((1,), dtype=b.dtype))
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            _raise_like_numpy(np.linalg.solve, a, b)
        return ArrayMeta((*a.shape[:-2], a.shape[-1]), dtype)
    if b.ndim == 0 or b.shape[-2] != a.shape[-1]:
        _raise_like_numpy(np.linalg.solve, a, b)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return ArrayMeta((*batch, a.shape[-1], b.shape[-1]), dtype)


solve = register_op(
    Op("solve", OpKind.EXTERN, _solve_meta, np.linalg.solve, run_time_error=_SINGULAR)
)


def _norm_meta(
    x: ArrayMeta,
    *,
    ord: Any = None,
    axis: Any = None,
    keepdims: bool = False,
) -> ArrayMeta:
    if axis is None:
        if ord is not None and x.ndim not in (1, 2):
            np.linalg.norm(np.zeros((1,) * x.ndim, dtype=x.dtype), ord)  # raises NumPy's error
        axes = tuple(range(x.ndim))
        core = x.ndim if ord is not None else 1
    else:
        axes = normalize_axes(axis, x.ndim, what="Duplicate axes given.")
        if len(axes) > 2:
            raise ValueError("Improper number of dimensions to norm.")
        core = len(axes)
    sample = np.ones((1,) * core, dtype=x.dtype)
    dtype = result_dtype(np.linalg.norm, sample, ord if core in (1, 2) else None)
    shape = reduced_shape(x.shape, axes, keepdims)
    return ArrayMeta(shape, dtype)


def _norm_impl(x: Any, *, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    return np.linalg.norm(x, ord, axis, keepdims)


norm = register_op(Op("norm", OpKind.EXTERN, _norm_meta, _norm_impl))
