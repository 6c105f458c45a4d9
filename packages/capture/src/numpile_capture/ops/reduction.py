"""Reductions (sum, max, mean, var, argmax, ...) and scans (cumsum, cumprod), nan-aware ones too.

Static params: `axis` (None, or a tuple of non-negative ints; a single int or
None for the arg-reductions and the scans), `keepdims`, `dtype` (where NumPy
takes one), `ddof` (var, std) and `initial` (sum, prod, max, min and their
nan-aware forms: the starting value, which also lets max/min reduce an
empty axis). Result dtypes come from NumPy on
one-element probes; reducing a zero-size axis with no identity raises
NumPy's ValueError.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("sum").meta(ArrayMeta((2, 3), "int8"), axis=(1,)))
    'int64[2]'
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..meta import ArrayMeta, contiguous_strides
from ..op import Op, OpKind, register_op
from ._probes import is_static_shape, result_dtype, shaped_probe
from ._shapes import (
    dense_strides_in,
    elementwise_axes,
    elementwise_strides,
    normalize_axes,
    normalize_axis,
    reduced_shape,
)


@attrs.frozen
class ReductionInfo:
    """What a reduction op accepts; `identityless` ones raise on a zero-size reduced axis.

    >>> REDUCTIONS["var"].takes_ddof
    True
    """

    function: Callable[..., Any]
    takes_dtype: bool = True
    takes_ddof: bool = False
    identityless: bool = False
    single_axis: bool = False
    takes_initial: bool = False


# NOTE: the table of reductions, as data; ops are registered in this order.
REDUCTIONS: dict[str, ReductionInfo] = {
    "sum": ReductionInfo(np.sum, takes_initial=True),
    "prod": ReductionInfo(np.prod, takes_initial=True),
    "max": ReductionInfo(np.max, takes_dtype=False, identityless=True, takes_initial=True),
    "min": ReductionInfo(np.min, takes_dtype=False, identityless=True, takes_initial=True),
    "argmax": ReductionInfo(np.argmax, takes_dtype=False, identityless=True, single_axis=True),
    "argmin": ReductionInfo(np.argmin, takes_dtype=False, identityless=True, single_axis=True),
    "any": ReductionInfo(np.any, takes_dtype=False),
    "all": ReductionInfo(np.all, takes_dtype=False),
    "mean": ReductionInfo(np.mean),
    "var": ReductionInfo(np.var, takes_ddof=True),
    "std": ReductionInfo(np.std, takes_ddof=True),
    "nansum": ReductionInfo(np.nansum, takes_initial=True),
    "nanprod": ReductionInfo(np.nanprod, takes_initial=True),
    "nanmax": ReductionInfo(np.nanmax, takes_dtype=False, identityless=True, takes_initial=True),
    "nanmin": ReductionInfo(np.nanmin, takes_dtype=False, identityless=True, takes_initial=True),
    "nanargmax": ReductionInfo(
        np.nanargmax, takes_dtype=False, identityless=True, single_axis=True
    ),
    "nanargmin": ReductionInfo(
        np.nanargmin, takes_dtype=False, identityless=True, single_axis=True
    ),
    "nanmean": ReductionInfo(np.nanmean),
    "nanvar": ReductionInfo(np.nanvar, takes_ddof=True),
    "nanstd": ReductionInfo(np.nanstd, takes_ddof=True),
    "count_nonzero": ReductionInfo(np.count_nonzero, takes_dtype=False),
}

# NOTE: the table of scans (inclusive prefix reductions along one axis).
SCANS: dict[str, Callable[..., Any]] = {
    "cumsum": np.cumsum,
    "cumprod": np.cumprod,
    "nancumsum": np.nancumsum,
    "nancumprod": np.nancumprod,
}


# Stands for "no initial= given" (None is a value NumPy accepts for max/min's initial).
_NO_INITIAL = "<no initial>"


def _call_kwargs(info: ReductionInfo, dtype: Any, ddof: Any, initial: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if info.takes_dtype and dtype is not None:
        kwargs["dtype"] = dtype
    if info.takes_ddof and ddof != 0:
        kwargs["ddof"] = ddof
    if initial is not _NO_INITIAL:
        if not info.takes_initial:
            raise TypeError(f"{info.function.__name__}() got an unexpected keyword 'initial'")
        kwargs["initial"] = initial
    return kwargs


def _kept_axes_strides(
    x: ArrayMeta, axes: tuple[int, ...], shape: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    # NumPy lays a reduction's result out in the memory order of the input's axes
    # (order='K': the sum over axis 0 of a Fortran-order 3-d array is Fortran-ordered),
    # the reduced ones dropped or, with keepdims, kept in their place as size-1 axes.
    if len(shape) < 2:
        return None
    order = elementwise_axes(x.shape, x)
    if order is None:
        return None
    if len(shape) != x.ndim:
        kept = [a for a in range(x.ndim) if a not in axes]
        order = tuple(kept.index(a) for a in order if a in kept)
    strides = dense_strides_in(shape, order)
    return None if strides == contiguous_strides(shape) else strides


@functools.lru_cache(maxsize=4096)
def _reduction_dtype(
    name: str, dtype: np.dtype[Any], out: Any, scalar: bool, initial: Any
) -> np.dtype[Any]:
    # NOTE: var/std cast differently for 0-d results and arrays, so the probe matches that.
    info = REDUCTIONS[name]
    kwargs = _call_kwargs(info, out, 0, initial)
    if scalar:
        return result_dtype(info.function, np.zeros((1,), dtype=dtype), **kwargs)
    return result_dtype(info.function, np.zeros((1, 1), dtype=dtype), axis=0, **kwargs)


def _reduction_meta(name: str, info: ReductionInfo) -> Callable[..., ArrayMeta]:
    def meta(
        x: ArrayMeta,
        *,
        axis: Any = None,
        keepdims: bool = False,
        dtype: Any = None,
        ddof: Any = 0,
        initial: Any = _NO_INITIAL,
    ) -> ArrayMeta:
        if dtype is not None and not info.takes_dtype:
            raise TypeError(f"{name}() got an unexpected keyword argument 'dtype'")
        if info.single_axis:
            axes = tuple(range(x.ndim)) if axis is None else (normalize_axis(axis, x.ndim),)
        elif axis is None:
            axes = tuple(range(x.ndim))
        else:
            axes = normalize_axes(axis, x.ndim)
        empty = is_static_shape(x) and any(x.shape[a] == 0 for a in axes)
        if info.identityless and initial is _NO_INITIAL and empty:
            probe_axis = axis if info.single_axis or axis is None else axes
            info.function(shaped_probe(x), axis=probe_axis)  # raises NumPy's own error
        shape = reduced_shape(x.shape, axes, keepdims)
        if info.single_axis and axis is None and keepdims:
            shape = (1,) * x.ndim
        # NOTE: var/std cast differently for 0-d results and arrays, so the probe matches that.
        out_dtype = _reduction_dtype(name, x.dtype, dtype, shape == (), initial)
        # argmax and argmin allocate their result C-ordered, whatever the input's layout.
        strides = None if info.single_axis else _kept_axes_strides(x, axes, shape)
        return ArrayMeta(shape, out_dtype, strides)

    return meta


def _reduction_impl(info: ReductionInfo) -> Callable[..., Any]:
    def impl(
        x: Any,
        *,
        axis: Any = None,
        keepdims: bool = False,
        dtype: Any = None,
        ddof: Any = 0,
        initial: Any = _NO_INITIAL,
    ) -> Any:
        kwargs = _call_kwargs(info, dtype, ddof, initial)
        return info.function(x, axis=axis, keepdims=keepdims, **kwargs)

    return impl


# nanargmax / nanargmin raise on a slice that is all NaN: only the data tells.
_RUN_TIME_ERRORS = {
    "nanargmax": "ValueError (an all-NaN slice)",
    "nanargmin": "ValueError (an all-NaN slice)",
}

for _name, _info in REDUCTIONS.items():
    register_op(
        Op(
            _name,
            OpKind.REDUCTION,
            _reduction_meta(_name, _info),
            _reduction_impl(_info),
            run_time_error=_RUN_TIME_ERRORS.get(_name, ""),
        )
    )


def _scan_meta(function: Callable[..., Any]) -> Callable[..., ArrayMeta]:
    def meta(x: ArrayMeta, *, axis: int | None = None, dtype: Any = None) -> ArrayMeta:
        kwargs = {} if dtype is None else {"dtype": dtype}
        out_dtype = result_dtype(function, np.zeros((1,), dtype=x.dtype), **kwargs)
        if axis is None:
            return ArrayMeta((x.numel,), out_dtype)
        normalize_axis(axis, x.ndim)
        # NumPy's accumulate lays its result out as the input (order='K').
        return ArrayMeta(x.shape, out_dtype, elementwise_strides(x.shape, x))

    return meta


def _scan_impl(function: Callable[..., Any]) -> Callable[..., Any]:
    def impl(x: Any, *, axis: int | None = None, dtype: Any = None) -> Any:
        return function(x, axis=axis, dtype=dtype)

    return impl


for _name, _function in SCANS.items():
    register_op(Op(_name, OpKind.SCAN, _scan_meta(_function), _scan_impl(_function)))
