"""Joining arrays: `concatenate` (np.stack, hstack and vstack decompose onto it in the bindings).

The inputs are the arrays to join, in order; `axis` (an int, or None to
join flattened arrays), `dtype` and `casting` are static params. Shape
errors are NumPy's own ValueErrors; the result dtype comes from NumPy.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> a = ArrayMeta((2, 3), "float32")
    >>> str(get_op("concatenate").meta(a, a, axis=1))
    'float32[2, 6]'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..meta import ArrayMeta
from ..op import Op, OpKind, register_op
from ._probes import probe, result_dtype
from ._shapes import normalize_axis


def _concatenate_meta(
    *arrays: ArrayMeta, axis: int | None = 0, dtype: Any = None, casting: str = "same_kind"
) -> ArrayMeta:
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    out_dtype = result_dtype(
        np.concatenate, [probe(a) for a in arrays], dtype=dtype, casting=casting
    )
    if axis is None:
        total: Any = sum((a.numel for a in arrays), start=0)
        return ArrayMeta((total,), out_dtype)
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, first.ndim)
    size: Any = 0
    for i, array in enumerate(arrays):
        if array.ndim != first.ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {first.ndim} dimension(s) and the array at index {i} has "
                f"{array.ndim} dimension(s)"
            )
        for dim, (expected, got) in enumerate(zip(first.shape, array.shape, strict=True)):
            if dim != axis and expected != got:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {dim}, the array at index 0 has size "
                    f"{expected} and the array at index {i} has size {got}"
                )
        size = size + array.shape[axis]
    shape = tuple(size if d == axis else first.shape[d] for d in range(first.ndim))
    return ArrayMeta(shape, out_dtype)


def _concatenate_impl(
    *arrays: Any, axis: int | None = 0, dtype: Any = None, casting: Any = "same_kind"
) -> Any:
    return np.concatenate(arrays, axis=axis, dtype=dtype, casting=casting)


concatenate = register_op(Op("concatenate", OpKind.EXTERN, _concatenate_meta, _concatenate_impl))
