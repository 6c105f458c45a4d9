"""Bindings of calls that create arrays from shapes and constants: zeros, full, arange,
linspace, eye, the *_like family, array and asarray.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..ops.creation import normalize_shape
from ..ops.extern import RunTimeSize
from ..ops.loop_values import ScalarSlot
from ._arguments import (
    NO_VALUE,
    array_input,
    array_meta,
    constant_array,
    dtype_param,
    emit,
    operand,
    pinned_sizes,
    slotted_sizes,
    static,
    unsupported_if,
)
from ._pointwise import emit_astype

# --- creation ------------------------------------------------------------------------------


def _check_creation(name: str, order: Any, like: Any = None, device: Any = None) -> None:
    unsupported_if(order not in ("C", "K", None), f"np.{name} with order={order!r}")
    unsupported_if(like is not None, f"np.{name} with like=")
    unsupported_if(device not in (None, "cpu"), f"np.{name} with device=")


def _shape_param(shape: Any, sizes: list[Any]) -> tuple[Any, ...]:
    # A symbolic size stays a slot over the int input computing it (appended to `sizes`).
    shape = static(shape, "a shape")
    items = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    kept = tuple(slotted_sizes(item, sizes) for item in items)
    plain = normalize_shape(tuple(0 if isinstance(d, ScalarSlot) else d for d in kept))
    return tuple(d if isinstance(d, ScalarSlot) else p for d, p in zip(kept, plain, strict=True))


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
        sizes: list[Any] = []
        params = {"shape": _shape_param(shape, sizes), "dtype": np.dtype(static(dtype, "dtype"))}
        return emit(graph, name, *sizes, **params)

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
    sizes: list[Any] = []
    params = {"shape": _shape_param(shape, sizes), "dtype": dtype_param(dtype)}
    value = fill_value.node() if isinstance(fill_value, RunTimeSize) else None
    if not isinstance(value, Node):  # a size as the fill value is an int input where it can be
        value = operand(graph, pinned_sizes(fill_value))
    return emit(graph, "full", value, *sizes, **params)


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
    # An int bound known only at run time stays a slot over the int input computing it; a
    # step, float bounds and other bounds are static (a symbolic one pinned, and guarded).
    sizes: list[Any] = []
    integral = all(isinstance(v, int | RunTimeSize) for v in (begin, end, step))
    begin, end = (slotted_sizes(v, sizes) if integral else pinned_sizes(v) for v in (begin, end))
    values = tuple(static(v, "an arange bound") for v in (begin, end, pinned_sizes(step)))
    return emit(
        graph,
        "arange",
        *sizes,
        start=values[0],
        stop=values[1],
        step=values[2],
        dtype=dtype_param(dtype),
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
            params["shape"] = _shape_param(shape, [])  # sizes arrive as ints here
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
        params["shape"] = _shape_param(shape, [])  # sizes arrive as ints here
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
