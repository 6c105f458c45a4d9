"""Extern rows whose result sizes depend on the data: nonzero, flatnonzero, argwhere, unique,
compress and bincount.

Each length is a fresh unbacked size symbol named by the node's `nnz` param (`u<k>`),
with the bounds the op implies recorded in the capture's shape environment: `0 <= u <=
x.size` (nonzero, flatnonzero, argwhere, masks), `1 <= u <= x.size` for unique of a
non-empty array, `u <= min(len(condition), a.shape[axis])` for compress, and bincount's
`u >= max(minlength, 1)` (no upper bound: it is `max(x) + 1`). Code after the
node takes it as a run-time size, so the graph compiles once for all values; the compiled
wrapper binds the symbol from the extern's result (as for `x[mask]`).

    >>> from numpile_capture import ArrayMeta
    >>> from numpile_capture.ops.extern import extern_row
    >>> [str(m) for m in extern_row("nonzero").meta(a=ArrayMeta((4, 5), "float64"), nnz="u2")]
    ['int64[u2]', 'int64[u2]']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..meta import ArrayMeta
from .extern import ExternRow, axis_of, register_extern, require_array, shaped, unbacked_size

_INDEX = np.dtype(np.intp)


def _nonzero_meta(a: Any, *, nnz: str) -> tuple[ArrayMeta, ...]:
    array = require_array(a, "a")
    if array.ndim == 0:
        np.nonzero(np.zeros(()))  # NumPy's own error
    size = unbacked_size(nnz, 0, array.numel)
    return tuple(ArrayMeta((size,), _INDEX) for _ in range(array.ndim))


def _flatnonzero_meta(a: Any, *, nnz: str) -> ArrayMeta:
    array = require_array(a, "a")
    return ArrayMeta((unbacked_size(nnz, 0, array.numel),), _INDEX)


def _argwhere_meta(a: Any, *, nnz: str) -> ArrayMeta:
    array = require_array(a, "a")
    return shaped((unbacked_size(nnz, 0, array.numel), array.ndim), _INDEX)


def _unique_meta(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
    nnz: str,
) -> ArrayMeta | tuple[ArrayMeta, ...]:
    array = require_array(ar, "ar")
    if axis is not None:
        raise NotImplementedError("np.unique with axis=")
    # Every distinct value once: at least one when there is any, at most one per element.
    size = unbacked_size(nnz, _at_least_one(array.numel), array.numel)
    probe = np.zeros(
        array.shape if all(isinstance(d, int) for d in array.shape) else (1,) * array.ndim,
        array.dtype,
    )
    results: Any = np.unique(probe, return_index, return_inverse, return_counts)  # type: ignore[call-overload]
    if not isinstance(results, tuple):
        return ArrayMeta((size,), results.dtype)
    metas = [ArrayMeta((size,), results[0].dtype)]
    rest = list(results[1:])
    if return_index:
        metas.append(ArrayMeta((size,), rest.pop(0).dtype))
    if return_inverse:
        inverse = rest.pop(0)
        shape = array.shape if inverse.ndim == array.ndim else (array.numel,)
        metas.append(ArrayMeta(shape, inverse.dtype))
    if return_counts:
        metas.append(ArrayMeta((size,), rest.pop(0).dtype))
    return tuple(metas)


def _compress_meta(
    condition: Any, a: Any, axis: Any = None, out: Any = None, *, nnz: str
) -> ArrayMeta:
    array = require_array(a, "a")
    if out is not None:
        raise NotImplementedError("np.compress with out=")
    kept = require_array(condition, "condition").numel
    if axis is None:
        return ArrayMeta((unbacked_size(nnz, 0, _least(kept, array.numel)),), array.dtype)
    ax = axis_of(axis, array.ndim)
    size = unbacked_size(nnz, 0, _least(kept, array.shape[ax]))
    shape = tuple(size if d == ax else dim for d, dim in enumerate(array.shape))
    return ArrayMeta(shape, array.dtype)


def _bincount_meta(x: Any, weights: Any = None, minlength: Any = 0, *, nnz: str) -> ArrayMeta:
    values = require_array(x, "x")
    if values.ndim != 1:
        np.bincount(np.zeros((1, 1), np.intp))  # NumPy's own error
    # NOTE: NumPy gives integer zeros for an empty x even with float weights.
    length = 0 if values.shape[0] == 0 else 1
    probe = np.zeros(length, values.dtype)
    weight_probe = None
    if weights is not None:
        weight_probe = np.ones(length, require_array(weights, "weights").dtype)
    dtype = np.bincount(probe, weight_probe, minlength).dtype
    # max(x) + 1 (at least 1 unless x is empty) and at least minlength; no upper bound.
    low = minlength if isinstance(minlength, int) else 0
    if _at_least_one(values.shape[0]) == 1:
        low = max(low, 1)
    return ArrayMeta((unbacked_size(nnz, low, None),), dtype)


def _at_least_one(numel: Any) -> int:
    # 1 when an array of `numel` elements is known to be non-empty (a dynamic size is >= 2).
    if isinstance(numel, int):
        return 1 if numel > 0 else 0
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    return 1 if env is not None and env.decide(numel >= 1) is True else 0


def _least(left: Any, right: Any) -> Any:
    # The smaller of two sizes, without a Min where they are ints.
    if isinstance(left, int) and isinstance(right, int):
        return min(left, right)
    if left == right:
        return left
    import sympy

    return sympy.Min(left, right)


_INTEGER = "integer or bool result"
_SELECTION = "not written yet: a gather of the selected elements (TODO issue 24)"
for _row in (
    ExternRow("nonzero", np.nonzero, _nonzero_meta, ("a",), no_grad=_INTEGER, data_dependent=True),
    ExternRow(
        "flatnonzero",
        np.flatnonzero,
        _flatnonzero_meta,
        ("a",),
        no_grad=_INTEGER,
        data_dependent=True,
    ),
    ExternRow(
        "argwhere", np.argwhere, _argwhere_meta, ("a",), no_grad=_INTEGER, data_dependent=True
    ),
    ExternRow(
        "unique",
        np.unique,
        _unique_meta,
        ("ar",),
        no_grad="sorting and deduplication: piecewise constant selection (TODO issue 24)",
        data_dependent=True,
    ),
    ExternRow(
        "compress",
        np.compress,
        _compress_meta,
        ("condition", "a"),
        no_grad=_SELECTION,
        data_dependent=True,
    ),
    ExternRow(
        "bincount",
        np.bincount,
        _bincount_meta,
        ("x", "weights"),
        no_grad="not written yet: a gather of the cotangent at x (TODO issue 24)",
        data_dependent=True,
    ),
):
    register_extern(_row)
