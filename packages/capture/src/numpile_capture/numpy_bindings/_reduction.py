"""Bindings of reducing calls: sum/prod/max/min/argmax/mean/var/std/any/all with their
axis, keepdims, dtype, ddof and out= arguments, and the scans (cumsum, cumprod).
"""

from __future__ import annotations

import functools
import inspect
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


def _signature(*names: str) -> inspect.Signature:
    # NumPy's parameters after `a`, in its order; those after "*" are keyword-only.
    star = names.index("*") if "*" in names else len(names)
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if position < star
            else inspect.Parameter.KEYWORD_ONLY,
            default=_DEFAULTS.get(name, NO_VALUE),
        )
        for position, name in enumerate(names)
        if name != "*"
    ]
    return inspect.Signature(parameters)


_DEFAULTS: dict[str, Any] = {"axis": None, "dtype": None, "out": None, "ddof": 0}
_SUM = _signature("axis", "dtype", "out", "keepdims", "initial", "where")
_MAX = _signature("axis", "out", "keepdims", "initial", "where")
_ARGMAX = _signature("axis", "out", "*", "keepdims")
_MEAN = _signature("axis", "dtype", "out", "keepdims", "*", "where")
_ANY = _signature("axis", "out", "keepdims", "*", "where")
_VAR = _signature("axis", "dtype", "out", "ddof", "keepdims", "*", "where", "mean", "correction")

# NOTE: the arguments each reduction takes after the array, as NumPy's function does;
# ndarray methods take the same.
REDUCTION_SIGNATURES: dict[str, inspect.Signature] = {
    "sum": _SUM,
    "prod": _SUM,
    "max": _MAX,
    "min": _MAX,
    "argmax": _ARGMAX,
    "argmin": _ARGMAX,
    "any": _ANY,
    "all": _ANY,
    "mean": _MEAN,
    "var": _VAR,
    "std": _VAR,
    "nansum": _SUM,
    "nanprod": _SUM,
    "nanmax": _MAX,
    "nanmin": _MAX,
    "nanargmax": _ARGMAX,
    "nanargmin": _ARGMAX,
    "nanmean": _MEAN,
    "nanvar": _VAR,
    "nanstd": _VAR,
}

# NOTE: the reductions whose out= is captured (a copy into out); the others break the graph.
_WRITES_OUT = frozenset(("sum", "prod", "max", "min", "nansum", "nanprod", "nanmax", "nanmin"))


def reduction_binding(name: str) -> Callable[..., Any]:
    """The apply function of NumPy's reduction `name` (np.sum, np.max, ...): it takes the
    arguments `REDUCTION_SIGNATURES[name]` names after the array.

    >>> from numpile_capture.meta import ArrayMeta
    >>> graph = Graph()
    >>> x = graph.placeholder("x", ArrayMeta((2, 3), "float64"))
    >>> print(reduction_binding("var")(graph, x, 1, correction=1).meta)
    float64[2]
    """
    signature = REDUCTION_SIGNATURES[name]
    writes_out = name in _WRITES_OUT

    def apply(graph: Graph, a: Any, *args: Any, **kwargs: Any) -> Node:
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        arguments = given.arguments
        out = arguments.get("out")
        where = arguments.get("where", NO_VALUE)
        unsupported_if(out is not None and not writes_out, f"np.{name} with out=")
        unsupported_if(where is not NO_VALUE and where is not True, f"np.{name} with where=")
        unsupported_if(arguments.get("mean", NO_VALUE) is not NO_VALUE, f"np.{name} with mean=")
        ddof = arguments.get("ddof", 0)
        if arguments.get("correction", NO_VALUE) is not NO_VALUE:
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = arguments["correction"]
        return emit_reduction(
            graph,
            name,
            a,
            arguments["axis"],
            arguments["keepdims"],
            arguments.get("dtype"),
            ddof,
            initial=arguments.get("initial", NO_VALUE),
            out=out,
        )

    return apply


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
