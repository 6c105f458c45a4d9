"""Bindings of calls that build arrays: creation from shapes and constants, joining, and
linear algebra.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ScalarMeta
from ..ops._shapes import normalize_axis
from ..ops.creation import normalize_shape
from ..ops.linalg import normalize_tensordot_axes
from ._arguments import (
    NO_VALUE,
    UnsupportedCall,
    array_input,
    array_meta,
    constant_array,
    dtype_param,
    emit,
    operand,
    static,
    unsupported_if,
)
from ._elementwise import emit_astype
from ._views import bind_atleast_1d, bind_atleast_2d, emit_reshape

# --- creation ------------------------------------------------------------------------------


def _check_creation(name: str, order: Any, like: Any = None, device: Any = None) -> None:
    unsupported_if(order not in ("C", "K", None), f"np.{name} with order={order!r}")
    unsupported_if(like is not None, f"np.{name} with like=")
    unsupported_if(device not in (None, "cpu"), f"np.{name} with device=")


def _shape_param(shape: Any) -> tuple[Any, ...]:
    return normalize_shape(static(shape, "a shape"))


def bind_filled(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        shape: Any,
        dtype: Any = None,
        order: str = "C",
        *,
        device: Any = None,
        like: Any = None,
    ) -> Node:
        _check_creation(name, order, like, device)
        return emit(graph, name, shape=_shape_param(shape), dtype=np.dtype(static(dtype, "dtype")))

    return apply


def bind_full(
    graph: Graph,
    shape: Any,
    fill_value: Any,
    dtype: Any = None,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
) -> Node:
    _check_creation("full", order, like, device)
    params = {"shape": _shape_param(shape), "dtype": dtype_param(dtype)}
    return emit(graph, "full", operand(graph, fill_value), **params)


def bind_arange(
    graph: Graph,
    start_or_stop: Any = NO_VALUE,
    /,
    stop: Any = None,
    step: Any = 1,
    *,
    start: Any = NO_VALUE,
    dtype: Any = None,
    device: Any = None,
    like: Any = None,
) -> Node:
    _check_creation("arange", "C", like, device)
    if start is not NO_VALUE:
        begin, end = start, (start_or_stop if stop is None else stop)
    elif start_or_stop is NO_VALUE:
        raise TypeError("arange() requires stop to be specified.")
    elif stop is None:
        begin, end = 0, start_or_stop
    else:
        begin, end = start_or_stop, stop
    if end is NO_VALUE or end is None:
        raise TypeError("arange() requires stop to be specified.")
    values = tuple(static(v, "an arange bound") for v in (begin, end, step))
    return emit(
        graph, "arange", start=values[0], stop=values[1], step=values[2], dtype=dtype_param(dtype)
    )


def bind_linspace(
    graph: Graph,
    start: Any,
    stop: Any,
    num: Any = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: Any = 0,
    *,
    device: Any = None,
) -> Node:
    unsupported_if(retstep or axis != 0, "np.linspace with retstep= or axis=")
    _check_creation("linspace", "C", None, device)
    for value in (start, stop):
        unsupported_if(
            not isinstance(static(value, "a linspace bound"), int | float | complex | np.generic),
            "np.linspace with array bounds",
        )
    return emit(
        graph,
        "linspace",
        start=start,
        stop=stop,
        num=operator.index(static(num, "num")),
        endpoint=bool(endpoint),
        dtype=dtype_param(dtype),
    )


def bind_eye(
    graph: Graph,
    N: Any,
    M: Any = None,
    k: Any = 0,
    dtype: Any = float,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
) -> Node:
    _check_creation("eye", order, like, device)
    n = operator.index(static(N, "N"))
    m = None if M is None else operator.index(static(M, "M"))
    return emit(graph, "eye", n=n, m=m, k=operator.index(static(k, "k")), dtype=np.dtype(dtype))


def bind_identity(graph: Graph, n: Any, dtype: Any = None, *, like: Any = None) -> Node:
    return bind_eye(graph, n, dtype=float if dtype is None else dtype, like=like)


def bind_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        dtype: Any = None,
        order: str = "K",
        subok: bool = True,
        shape: Any = None,
        *,
        device: Any = None,
    ) -> Node:
        _check_creation(name, order, None, device)
        params: dict[str, Any] = {}
        if dtype is not None:
            params["dtype"] = dtype_param(dtype)
        if shape is not None:
            params["shape"] = _shape_param(shape)
        return emit(graph, name, array_input(graph, a), **params)

    return apply


def bind_full_like(
    graph: Graph,
    a: Any,
    fill_value: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
) -> Node:
    _check_creation("full_like", order, None, device)
    params: dict[str, Any] = {}
    if dtype is not None:
        params["dtype"] = dtype_param(dtype)
    if shape is not None:
        params["shape"] = _shape_param(shape)
    return emit(graph, "full_like", array_input(graph, a), operand(graph, fill_value), **params)


def bind_array(
    graph: Graph,
    object: Any,
    dtype: Any = None,
    *,
    copy: Any = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
    ndmax: int = 0,
    like: Any = None,
) -> Node:
    _check_creation("array", order, like)
    unsupported_if(ndmin != 0 or ndmax != 0, "np.array with ndmin=/ndmax=")
    if not isinstance(object, Node):
        return constant_array(graph, object, dtype_param(dtype))
    if dtype is not None and array_meta(object).dtype != np.dtype(dtype):
        return emit_astype(graph, object, dtype, "unsafe", True)
    if copy is False:
        return object
    if copy is None:
        return object
    return emit(graph, "copy", object, order="K")


def bind_asarray(
    graph: Graph,
    a: Any,
    dtype: Any = None,
    order: Any = None,
    *,
    device: Any = None,
    copy: Any = None,
    like: Any = None,
) -> Node:
    _check_creation("asarray", order, like, device)
    return bind_array(graph, a, dtype, copy=False if copy is None else copy)


# --- joining -------------------------------------------------------------------------------


def bind_concatenate(
    graph: Graph,
    arrays: Any,
    /,
    axis: Any = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Node:
    unsupported_if(out is not None, "np.concatenate with out=")
    unsupported_if(isinstance(arrays, Node), "np.concatenate of one traced array")
    nodes = [array_input(graph, a) for a in arrays]
    params: dict[str, Any] = {"axis": static(axis, "axis")}
    if dtype is not None:
        params["dtype"] = dtype_param(dtype)
    if casting != "same_kind":
        params["casting"] = casting
    return emit(graph, "concatenate", *nodes, **params)


def bind_stack(
    graph: Graph,
    arrays: Any,
    axis: Any = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Node:
    unsupported_if(isinstance(arrays, Node), "np.stack of one traced array")
    nodes = [array_input(graph, a) for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to stack")
    shapes = {array_meta(n).shape for n in nodes}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    result_axis = normalize_axis(static(axis, "axis"), array_meta(nodes[0]).ndim + 1)
    expanded = [emit(graph, "expand_dims", n, axis=(result_axis,)) for n in nodes]
    return bind_concatenate(graph, expanded, result_axis, out, dtype=dtype, casting=casting)


def bind_hstack(graph: Graph, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Node:
    unsupported_if(isinstance(tup, Node), "np.hstack of one traced array")
    nodes = [bind_atleast_1d(graph, a) for a in tup]
    axis = 0 if nodes and array_meta(nodes[0]).ndim == 1 else 1
    return bind_concatenate(graph, nodes, axis, dtype=dtype, casting=casting)


def bind_vstack(graph: Graph, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Node:
    unsupported_if(isinstance(tup, Node), "np.vstack of one traced array")
    nodes = [bind_atleast_2d(graph, a) for a in tup]
    return bind_concatenate(graph, nodes, 0, dtype=dtype, casting=casting)


# --- linear algebra ------------------------------------------------------------------------


def _is_scalar_operand(value: Any) -> bool:
    if isinstance(value, Node):
        return isinstance(value.meta, ScalarMeta) or value.meta.ndim == 0
    return not isinstance(value, list | tuple | np.ndarray)


def bind_dot(graph: Graph, a: Any, b: Any, out: Any = None) -> Node:
    unsupported_if(out is not None, "np.dot with out=")
    if _is_scalar_operand(a) or _is_scalar_operand(b):
        return emit(graph, "multiply", operand(graph, a), operand(graph, b))
    return emit(graph, "dot", array_input(graph, a), array_input(graph, b))


def bind_outer(graph: Graph, a: Any, b: Any, out: Any = None) -> Node:
    unsupported_if(out is not None, "np.outer with out=")
    column = emit_reshape(graph, a, (-1, 1))
    row = emit_reshape(graph, b, (1, -1))
    return emit(graph, "multiply", column, row)


def bind_einsum(
    graph: Graph, *operands: Any, out: Any = None, optimize: Any = False, **kwargs: Any
) -> Node:
    unsupported_if(out is not None or bool(kwargs), "np.einsum with out=/dtype=/casting=")
    if not operands or not isinstance(operands[0], str):
        raise UnsupportedCall("np.einsum with sublist operands is not supported yet")
    subscripts = operands[0]
    nodes = [array_input(graph, x) for x in operands[1:]]
    return emit(graph, "einsum", *nodes, subscripts=subscripts)


def bind_tensordot(graph: Graph, a: Any, b: Any, axes: Any = 2) -> Node:
    x, y = array_input(graph, a), array_input(graph, b)
    normalized = normalize_tensordot_axes(
        static(axes, "axes"), array_meta(x).ndim, array_meta(y).ndim
    )
    return emit(graph, "tensordot", x, y, axes=normalized)


def bind_triangle(name: str) -> Callable[..., Any]:
    def apply(graph: Graph, m: Any, k: Any = 0) -> Node:
        params = {} if k == 0 else {"k": operator.index(static(k, "k"))}
        return emit(graph, name, array_input(graph, m), **params)

    return apply


def bind_ordering(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = -1,
        kind: Any = None,
        order: Any = None,
        *,
        stable: Any = None,
    ) -> Node:
        unsupported_if(order is not None, f"np.{name} with order=")
        x = array_input(graph, a)
        params: dict[str, Any] = {}
        axis = static(axis, "axis")
        params["axis"] = None if axis is None else normalize_axis(axis, array_meta(x).ndim)
        if kind is not None:
            params["kind"] = static(kind, "kind")
        if stable is not None:
            params["stable"] = bool(static(stable, "stable"))
        return emit(graph, name, x, **params)

    return apply


def bind_norm(
    graph: Graph, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False
) -> Node:
    params: dict[str, Any] = {}
    if ord is not None:
        params["ord"] = static(ord, "ord")
    if axis is not None:
        axis = static(axis, "axis")
        params["axis"] = tuple(axis) if isinstance(axis, tuple | list) else axis
    if keepdims:
        params["keepdims"] = True
    return emit(graph, "norm", array_input(graph, x), **params)


def bind_inv(graph: Graph, a: Any) -> Node:
    return emit(graph, "inv", array_input(graph, a))


def bind_det(graph: Graph, a: Any) -> Node:
    return emit(graph, "det", array_input(graph, a))


def bind_solve(graph: Graph, a: Any, b: Any) -> Node:
    return emit(graph, "solve", array_input(graph, a), array_input(graph, b))
