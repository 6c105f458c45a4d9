"""Pointwise ops: every NumPy ufunc on numbers, one op per ufunc.

Result dtypes come from NumPy itself (`ufunc.resolve_dtypes`, which applies
NEP 50 to weak Python scalars); shapes broadcast as NumPy broadcasts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, register_op


def broadcast_shapes(*shapes: tuple[Any, ...]) -> tuple[Any, ...]:
    """NumPy's broadcasting of `shapes`; raises NumPy's ValueError when they clash."""
    if all(isinstance(d, int) for shape in shapes for d in shape):
        return tuple(np.broadcast_shapes(*shapes))
    raise NotImplementedError("symbolic broadcasting waits for issue 6")


def _dtype_operand(value: Any) -> Any:
    if isinstance(value, ArrayMeta):
        return value.dtype
    if isinstance(value, ScalarMeta):
        return value.type
    return type(value)


def _ufunc_meta(ufunc: np.ufunc) -> Any:
    def meta(*inputs: Any) -> ArrayMeta:
        dtypes = ufunc.resolve_dtypes((*(_dtype_operand(v) for v in inputs), None))
        shapes = [v.shape for v in inputs if isinstance(v, ArrayMeta)]
        return ArrayMeta(broadcast_shapes(*shapes), dtypes[-1])

    return meta


def _ufunc_op(ufunc: np.ufunc) -> Op:
    return register_op(Op(ufunc.__name__, OpKind.POINTWISE, _ufunc_meta(ufunc), ufunc))


add = _ufunc_op(np.add)
multiply = _ufunc_op(np.multiply)
sin = _ufunc_op(np.sin)
