"""Bindings of reducing calls: sum/prod/max/min/argmax/mean/var/std/any/all with their
axis, keepdims, dtype, ddof and out= arguments, and the scans (cumsum, cumprod).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ArrayMeta
from ..ops._shapes import normalize_axis
from ..ops.reduction import REDUCTIONS
from ._arguments import (
    NO_VALUE,
    array_input,
    array_meta,
    axes_param,
    dtype_param,
    emit,
    static,
    unsupported_if,
)
from ._outputs import out_target, write_reduction_out

# --- reductions and scans ------------------------------------------------------------------


# NOTE: the ufunc whose reduce a dtype-taking reduction is; out= picks its loop (see below).
_REDUCING_UFUNCS: dict[str, np.ufunc] = {
    "sum": np.add,
    "nansum": np.add,
    "prod": np.multiply,
    "nanprod": np.multiply,
}


def _out_loop_dtype(ufunc: np.ufunc, dtype: np.dtype[Any], out: ArrayMeta) -> Any:
    # With out= and no dtype=, NumPy resolves the reduction loop with out's dtype as the
    # result; when that loop cannot cast to out, it keeps the default loop and casts unsafely.
    try:
        resolved = ufunc.resolve_dtypes((out.dtype, dtype, None), reduction=True)
    except (TypeError, ValueError):
        return None
    return resolved[2]


def emit_reduction(
    graph: Graph,
    name: str,
    a: Any,
    axis: Any,
    keepdims: Any,
    dtype: Any = None,
    ddof: Any = 0,
    *,
    initial: Any = NO_VALUE,
    out: Any = None,
) -> Node:
    """The reduction op `name` of `a` as NumPy's function takes it; `out=` copies into out."""
    x = array_input(graph, a)
    target = out_target(out)
    info = REDUCTIONS[name]
    if target is not None and dtype is None and name in _REDUCING_UFUNCS:
        dtype = _out_loop_dtype(_REDUCING_UFUNCS[name], array_meta(x).dtype, array_meta(target))
    params: dict[str, Any] = {}
    if info.single_axis:
        if axis is not None:
            params["axis"] = normalize_axis(static(axis, "axis"), array_meta(x).ndim)
    elif axis is not None:
        params["axis"] = axes_param(axis, array_meta(x).ndim)
    if keepdims is not NO_VALUE and keepdims:
        params["keepdims"] = True
    if dtype is not None:
        params["dtype"] = dtype_param(dtype)
    if ddof != 0:
        params["ddof"] = static(ddof, "ddof")
    if initial is not NO_VALUE:
        params["initial"] = static(initial, "initial")
    result = emit(graph, name, x, **params)
    if target is None:
        return result
    probe_params = {key: value for key, value in params.items() if key != "dtype"}
    return write_reduction_out(
        graph, functools.partial(info.function, **probe_params), x, result, target
    )


def reduction_binding(name: str) -> Callable[..., Any]:
    """The apply function of NumPy's reduction `name` (np.sum, np.max, ...)."""
    return REDUCTION_SIGNATURES[name](name)


def _check_reduction_args(name: str, out: Any, where: Any = NO_VALUE) -> None:
    unsupported_if(out is not None, f"np.{name} with out=")
    unsupported_if(where is not NO_VALUE and where is not True, f"np.{name} with where=")


def _sum_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: Any = NO_VALUE,
        initial: Any = NO_VALUE,
        where: Any = NO_VALUE,
    ) -> Node:
        _check_reduction_args(name, None, where)
        return emit_reduction(graph, name, a, axis, keepdims, dtype, initial=initial, out=out)

    return apply


def bind_max_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        out: Any = None,
        keepdims: Any = NO_VALUE,
        initial: Any = NO_VALUE,
        where: Any = NO_VALUE,
    ) -> Node:
        _check_reduction_args(name, None, where)
        return emit_reduction(graph, name, a, axis, keepdims, initial=initial, out=out)

    return apply


def _arg_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph, a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = NO_VALUE
    ) -> Node:
        _check_reduction_args(name, out)
        return emit_reduction(graph, name, a, axis, keepdims)

    return apply


def _mean_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: Any = NO_VALUE,
        *,
        where: Any = NO_VALUE,
    ) -> Node:
        _check_reduction_args(name, out, where=where)
        return emit_reduction(graph, name, a, axis, keepdims, dtype)

    return apply


def _var_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: Any = 0,
        keepdims: Any = NO_VALUE,
        *,
        where: Any = NO_VALUE,
        mean: Any = NO_VALUE,
        correction: Any = NO_VALUE,
    ) -> Node:
        _check_reduction_args(name, out, where=where)
        unsupported_if(mean is not NO_VALUE, f"np.{name} with mean=")
        if correction is not NO_VALUE:
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        return emit_reduction(graph, name, a, axis, keepdims, dtype, ddof)

    return apply


# NOTE: which signature each reduction has; ndarray methods share them.
REDUCTION_SIGNATURES: dict[str, Callable[[str], Callable[..., Any]]] = {
    "sum": _sum_like,
    "prod": _sum_like,
    "max": bind_max_like,
    "min": bind_max_like,
    "argmax": _arg_like,
    "argmin": _arg_like,
    "any": _mean_like,
    "all": _mean_like,
    "mean": _mean_like,
    "var": _var_like,
    "std": _var_like,
    "nansum": _sum_like,
    "nanprod": _sum_like,
    "nanmax": bind_max_like,
    "nanmin": bind_max_like,
    "nanargmax": _arg_like,
    "nanargmin": _arg_like,
    "nanmean": _mean_like,
    "nanvar": _var_like,
    "nanstd": _var_like,
}


def _any_all(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        out: Any = None,
        keepdims: Any = NO_VALUE,
        *,
        where: Any = NO_VALUE,
    ) -> Node:
        _check_reduction_args(name, out, where=where)
        return emit_reduction(graph, name, a, axis, keepdims)

    return apply


REDUCTION_SIGNATURES["any"] = _any_all
REDUCTION_SIGNATURES["all"] = _any_all


def bind_scan(name: str) -> Callable[..., Any]:
    def apply(graph: Graph, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Node:
        unsupported_if(out is not None, f"np.{name} with out=")
        x = array_input(graph, a)
        params: dict[str, Any] = {}
        if axis is not None:
            params["axis"] = normalize_axis(static(axis, "axis"), array_meta(x).ndim)
        if dtype is not None:
            params["dtype"] = dtype_param(dtype)
        return emit(graph, name, x, **params)

    return apply
