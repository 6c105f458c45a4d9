"""Joining arrays: `concatenate` (np.stack, hstack and vstack decompose onto it in the
bindings), repeating one: `repeat` and `tile`, and rotating one along its axes: `roll`.

The inputs are the arrays to join, in order; `axis` (an int, or None to
join flattened arrays), `dtype` and `casting` are static params. Shape
errors are NumPy's own ValueErrors; the result dtype comes from NumPy.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> a = ArrayMeta((2, 3), "float32")
    >>> str(get_op("concatenate").meta(a, a, axis=1))
    'float32[2, 6]'
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..meta import ArrayMeta
from ..op import Op, OpKind, register_op
from ._probes import is_static_shape, probe, result_dtype
from ._shapes import (
    canonical_strides,
    is_c_contiguous,
    k_order_strides,
    normalize_axis,
    strides_of,
)


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


# --- repeating -----------------------------------------------------------------------------


def _repeated_length(length: Any, repeats: int | tuple[int, ...]) -> Any:
    # The new length of an axis of `length` items repeated by `repeats`; NumPy's errors.
    if isinstance(repeats, int):
        if repeats < 0:
            raise ValueError("negative dimensions are not allowed")
        return length * repeats
    if any(r < 0 for r in repeats):
        raise ValueError("repeats may not contain negative values.")
    if len(repeats) == 1:
        return length * repeats[0]
    if not isinstance(length, int):
        raise NotImplementedError("per-item repeats of a symbolic size wait for issue 6")
    if len(repeats) != length:
        np.repeat(np.zeros(length), repeats)  # raises NumPy's own broadcast error
    return sum(repeats)


def _repeat_meta(
    x: ArrayMeta, *, repeats: int | tuple[int, ...], axis: int | None = None
) -> ArrayMeta:
    if axis is None:
        return ArrayMeta((_repeated_length(x.numel, repeats),), x.dtype)
    axis = normalize_axis(axis, x.ndim)
    length = _repeated_length(x.shape[axis], repeats)
    return ArrayMeta(tuple(length if i == axis else d for i, d in enumerate(x.shape)), x.dtype)


def _repeat_impl(x: Any, *, repeats: Any, axis: int | None = None) -> Any:
    return np.repeat(x, repeats, axis=axis)


repeat = register_op(Op("repeat", OpKind.EXTERN, _repeat_meta, _repeat_impl))


def _tile_meta(x: ArrayMeta, *, reps: tuple[int, ...]) -> ArrayMeta:
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    ndim = max(x.ndim, len(reps))
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    full_reps = (1,) * (ndim - len(reps)) + tuple(reps)
    if all(r == 1 for r in full_reps) and is_static_shape(x) and not is_c_contiguous(x):
        # NumPy copies in order 'K' when nothing repeats.
        strides = (0,) * (ndim - x.ndim) + tuple(strides_of(x))
        return ArrayMeta(shape, x.dtype, canonical_strides(shape, k_order_strides(shape, strides)))
    return ArrayMeta(tuple(d * r for d, r in zip(shape, full_reps, strict=True)), x.dtype)


def _tile_impl(x: Any, *, reps: tuple[int, ...]) -> Any:
    return np.tile(x, reps)


tile = register_op(Op("tile", OpKind.EXTERN, _tile_meta, _tile_impl))


# --- rotating ------------------------------------------------------------------------------


def roll_shifts(ndim: int, shift: Any, axis: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes `np.roll(x, shift, axis)` rotates (`axis` given) and the total shift of each,
    in axis order; NumPy's errors for axes out of range or mismatched lengths.

    >>> roll_shifts(2, (1, 2, -1), (0, 1, 0))
    ((0, 1), (0, 2))
    """
    axes = normalize_axis_tuple(axis, ndim, allow_duplicate=True)
    paired = np.broadcast(shift, axes)
    if paired.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    totals: dict[int, int] = {}
    for amount, ax in paired:
        totals[int(ax)] = totals.get(int(ax), 0) + operator.index(amount)
    order = sorted(totals)
    return tuple(order), tuple(totals[ax] for ax in order)


def _roll_meta(x: ArrayMeta, *, shift: tuple[int, ...], axis: tuple[int, ...]) -> ArrayMeta:
    if len(shift) != len(axis) or any(not 0 <= ax < x.ndim for ax in axis):
        raise ValueError(f"roll of a {x.ndim}-d array by {shift} along {axis}")
    if is_static_shape(x) and not is_c_contiguous(x):
        # NumPy rolls into `empty_like(x)`: a fresh array laid out like x (order 'K').
        return ArrayMeta(x.shape, x.dtype, k_order_strides(x.shape, strides_of(x)))
    return ArrayMeta(x.shape, x.dtype)


def _roll_impl(x: Any, *, shift: tuple[int, ...], axis: tuple[int, ...]) -> Any:
    return np.roll(x, shift, axis)


# NOTE: `shift` and `axis` are as `roll_shifts` makes them: one total shift per axis, the axes
# increasing; `np.roll` with axis=None is a roll of the flattened array, reshaped back.
roll = register_op(Op("roll", OpKind.EXTERN, _roll_meta, _roll_impl))
