"""Ordering ops: `sort` and `argsort` along one axis (EXTERN: they run NumPy's own sort).

`axis` is a non-negative int, or None to sort the flattened array; `kind`
and `stable` pass through to NumPy (they only choose the algorithm; stable
sorts keep the order of equal elements).

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("argsort").meta(ArrayMeta((2, 3), "float32"), axis=1))
    'int64[2, 3]'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta
from ..op import Op, OpKind, register_op
from ._probes import result_dtype
from ._shapes import normalize_axis


def _ordering_meta(function: Callable[..., Any]) -> Callable[..., ArrayMeta]:
    def meta(
        x: ArrayMeta, *, axis: int | None = -1, kind: str | None = None, stable: bool | None = None
    ) -> ArrayMeta:
        dtype = result_dtype(function, np.zeros((1,), dtype=x.dtype), kind=kind, stable=stable)
        if axis is None:
            return ArrayMeta((x.numel,), dtype)
        if x.ndim == 0:
            function(np.zeros((), dtype=x.dtype), axis=axis)  # raises NumPy's own error
        normalize_axis(axis, x.ndim)
        return ArrayMeta(x.shape, dtype)

    return meta


def _ordering_impl(function: Callable[..., Any]) -> Callable[..., Any]:
    def impl(
        x: Any, *, axis: int | None = -1, kind: str | None = None, stable: bool | None = None
    ) -> Any:
        return function(x, axis=axis, kind=kind, stable=stable)

    return impl


sort = register_op(Op("sort", OpKind.EXTERN, _ordering_meta(np.sort), _ordering_impl(np.sort)))
argsort = register_op(
    Op("argsort", OpKind.EXTERN, _ordering_meta(np.argsort), _ordering_impl(np.argsort))
)
