"""`ufunc.at`: unbuffered in-place accumulation at an advanced index (`np.add.at(x, i, v)`).

`ufunc_at(x, value, *arrays, ufunc=..., index=...)` applies the binary ufunc named by
`ufunc` to `x[index]` and `value` once per index, in index order, so repeated indices
accumulate (where `x[i] += v` keeps one write per element). The index is a template as for
`index_put` (`IndexArray` slots for the array inputs after the value). The result is cast
to `x`'s dtype with casting='unsafe', as NumPy's `ufunc.at` does, and NumPy checks every
index before it writes: an index out of bounds raises IndexError with `x` untouched.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> from numpile_capture.ops.indexing import IndexArray
    >>> x, i = ArrayMeta((5,), "float64"), ArrayMeta((7,), "int64")
    >>> str(get_op("ufunc_at").meta(x, 1.0, i, ufunc="add", index=(IndexArray(0),)))
    'float64[5]'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, RaisesWhen, register_op
from ._shapes import broadcast_shapes
from .indexing import IndexArray, IndexTemplate, advanced_index_shape
from .mutation import format_shape
from .pointwise import UFUNC_NAMES

__all__ = ["AT_UFUNCS", "ufunc_at"]

# NOTE: the binary ufuncs whose `.at` is an op: one output, two inputs, numbers in and out.
AT_UFUNCS: frozenset[str] = frozenset(
    name
    for name in UFUNC_NAMES
    if isinstance(getattr(np, name, None), np.ufunc)
    and getattr(np, name).nin == 2
    and getattr(np, name).nout == 1
)


def _concrete(index: IndexTemplate, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(arrays[item.position] if isinstance(item, IndexArray) else item for item in index)


def _ufunc_at_meta(
    x: ArrayMeta,
    value: Any,
    *arrays: ArrayMeta,
    ufunc: str,
    index: IndexTemplate,
    nnz: str | None = None,
) -> ArrayMeta:
    if ufunc not in AT_UFUNCS:
        raise ValueError(f"ufunc_at of {ufunc!r}: not a binary numeric ufunc")
    shape = advanced_index_shape(x, arrays, index, nnz or "nnz")
    static = all(isinstance(d, int) for d in shape)
    if isinstance(value, ArrayMeta) and static and broadcast_shapes(shape, value.shape) != shape:
        raise ValueError(
            f"operands could not be broadcast together with remapped shapes "
            f"{format_shape(shape)} {format_shape(value.shape)}"
        )
    # The ufunc must have a loop for the operands (NumPy's UFuncTypeError otherwise).
    if isinstance(value, ScalarMeta):
        value_dtype = np.dtype(value.type)
    else:
        value_dtype = value.dtype if isinstance(value, ArrayMeta) else np.asarray(value).dtype
    with np.errstate(all="ignore"):
        getattr(np, ufunc)(np.zeros((), x.dtype), np.zeros((), value_dtype))
    return x


def _ufunc_at_impl(
    x: Any, value: Any, *arrays: Any, ufunc: str, index: IndexTemplate, nnz: str | None = None
) -> Any:
    getattr(np, ufunc).at(x, _concrete(index, arrays), value)
    return x


ufunc_at = register_op(
    Op(
        "ufunc_at",
        OpKind.MUTATION,
        _ufunc_at_meta,
        _ufunc_at_impl,
        mutates=(0,),
        run_time_error="IndexError (an integer index out of bounds)",
        raises_when=RaisesWhen.INTEGER_INDEX,
    )
)
