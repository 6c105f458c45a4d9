"""Bindings of calls that give views: reshape, transpose, flips, broadcasting, diagonals."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..ops._shapes import (
    broadcast_shapes,
    normalize_axes,
    normalize_axis,
    reshape_strides,
    strides_of,
)
from ..ops.view import infer_reshape, normalize_transpose_axes
from ._arguments import (
    array_input,
    array_meta,
    axes_param,
    dtype_param,
    emit,
    static,
    unsupported_if,
)

# --- views ---------------------------------------------------------------------------------


def emit_reshape(graph: Graph, a: Any, shape: Any, copy: Any = None) -> Node:
    x = array_input(graph, a)
    meta = array_meta(x)
    resolved = infer_reshape(meta.shape, normalize_shape_arg(shape))
    viewable = reshape_strides(meta.shape, strides_of(meta), resolved) is not None
    if copy is False and not viewable:
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    if copy or not viewable:
        x = emit(graph, "copy", x, order="C")
    return emit(graph, "reshape", x, shape=resolved)


def normalize_shape_arg(shape: Any) -> tuple[Any, ...]:
    """A reshape target (an int or a sequence of ints, -1 allowed) as a tuple.

    >>> normalize_shape_arg(6)
    (6,)
    """
    shape = static(shape, "a shape")
    items = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    return tuple(operator.index(d) if isinstance(d, int | np.integer) else d for d in items)


def bind_reshape(
    graph: Graph,
    a: Any,
    shape: Any = None,
    order: str = "C",
    *,
    newshape: Any = None,
    copy: Any = None,
) -> Node:
    unsupported_if(order != "C", "reshape with order other than 'C'")
    target = shape if newshape is None else newshape
    if target is None:
        raise TypeError("reshape() missing required argument 'shape' (pos 2)")
    return emit_reshape(graph, a, target, copy)


def bind_method_reshape(
    graph: Graph, x: Node, *shape: Any, order: str = "C", copy: Any = None
) -> Node:
    unsupported_if(order != "C", "reshape with order other than 'C'")
    target = shape[0] if len(shape) == 1 else shape
    return emit_reshape(graph, x, target, copy)


def bind_ravel(graph: Graph, a: Any, order: str = "C") -> Node:
    unsupported_if(order != "C", "ravel with order other than 'C'")
    return emit_reshape(graph, a, (-1,))


def bind_flatten(graph: Graph, x: Node, order: str = "C") -> Node:
    unsupported_if(order != "C", "flatten with order other than 'C'")
    return emit_reshape(graph, x, (-1,), copy=True)


def bind_transpose(graph: Graph, a: Any, axes: Any = None) -> Node:
    x = array_input(graph, a)
    perm = normalize_transpose_axes(static(axes, "axes"), array_meta(x).ndim)
    return emit(graph, "transpose", x, axes=perm)


def bind_method_transpose(graph: Graph, x: Node, *axes: Any) -> Node:
    if len(axes) == 0 or (len(axes) == 1 and axes[0] is None):
        return bind_transpose(graph, x)
    return bind_transpose(graph, x, axes[0] if len(axes) == 1 else axes)


def bind_swapaxes(graph: Graph, a: Any, axis1: Any, axis2: Any) -> Node:
    x = array_input(graph, a)
    ndim = array_meta(x).ndim
    first = normalize_axis(static(axis1, "axis1"), ndim)
    second = normalize_axis(static(axis2, "axis2"), ndim)
    perm = list(range(ndim))
    perm[first], perm[second] = perm[second], perm[first]
    return emit(graph, "transpose", x, axes=tuple(perm))


def bind_moveaxis(graph: Graph, a: Any, source: Any, destination: Any) -> Node:
    x = array_input(graph, a)
    ndim = array_meta(x).ndim
    src = normalize_axes(static(source, "source"), ndim, what="repeated axis in `source` argument")
    dst = normalize_axes(
        static(destination, "destination"), ndim, what="repeated axis in `destination` argument"
    )
    if len(src) != len(dst):
        raise ValueError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    order = [n for n in range(ndim) if n not in src]
    for dest, s in sorted(zip(dst, src, strict=True)):
        order.insert(dest, s)
    return emit(graph, "transpose", x, axes=tuple(order))


def bind_matrix_transpose(graph: Graph, x: Node) -> Node:
    ndim = array_meta(x).ndim
    if ndim < 2:
        raise ValueError("matrix transpose with ndim < 2 is undefined")
    return bind_swapaxes(graph, x, -1, -2)


def bind_expand_dims(graph: Graph, a: Any, axis: Any) -> Node:
    x = array_input(graph, a)
    axis = static(axis, "axis")
    axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    out_ndim = array_meta(x).ndim + len(axes)
    return emit(graph, "expand_dims", x, axis=normalize_axes(axes, out_ndim, what="repeated axis"))


def bind_squeeze(graph: Graph, a: Any, axis: Any = None) -> Node:
    x = array_input(graph, a)
    params = {} if axis is None else {"axis": axes_param(axis, array_meta(x).ndim)}
    return emit(graph, "squeeze", x, **params)


def bind_broadcast_to(graph: Graph, array: Any, shape: Any, subok: bool = False) -> Node:
    target = normalize_shape_arg(shape)
    return emit(graph, "broadcast_to", array_input(graph, array), shape=target)


def bind_broadcast_arrays(graph: Graph, *args: Any, subok: bool = False) -> tuple[Node, ...]:
    nodes = [array_input(graph, a) for a in args]
    shape = broadcast_shapes(*(array_meta(n).shape for n in nodes))
    return tuple(emit(graph, "broadcast_to", n, shape=shape) for n in nodes)


def bind_flip(graph: Graph, m: Any, axis: Any = None) -> Node:
    x = array_input(graph, m)
    ndim = array_meta(x).ndim
    axes = tuple(range(ndim)) if axis is None else normalize_axes(static(axis, "axis"), ndim)
    index = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(ndim))
    return emit(graph, "getitem", x, index=index)


def bind_fliplr(graph: Graph, m: Any) -> Node:
    if array_meta(array_input(graph, m)).ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return bind_flip(graph, m, 1)


def bind_flipud(graph: Graph, m: Any) -> Node:
    if array_meta(array_input(graph, m)).ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return bind_flip(graph, m, 0)


def bind_real(graph: Graph, val: Any) -> Node:
    return emit(graph, "real", array_input(graph, val))


def bind_imag(graph: Graph, val: Any) -> Node:
    x = array_input(graph, val)
    if array_meta(x).dtype.kind != "c":
        return emit(graph, "zeros_like", x)
    return emit(graph, "imag", x)


def _atleast(graph: Graph, ndim: int, *arys: Any) -> Any:
    results = []
    for ary in arys:
        x = array_input(graph, ary)
        shape = array_meta(x).shape
        if len(shape) < ndim:
            padded = (1,) * (ndim - len(shape)) + shape if ndim == 2 or not shape else shape
            x = emit(graph, "reshape", x, shape=padded if shape else (1,) * ndim)
        results.append(x)
    return results[0] if len(results) == 1 else tuple(results)


def bind_atleast_1d(graph: Graph, *arys: Any) -> Any:
    return _atleast(graph, 1, *arys)


def bind_atleast_2d(graph: Graph, *arys: Any) -> Any:
    return _atleast(graph, 2, *arys)


# --- diagonals ----------------------------------------------------------------------------


def bind_diagonal(graph: Graph, a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Node:
    params = {
        "offset": operator.index(static(offset, "offset")),
        "axis1": operator.index(static(axis1, "axis1")),
        "axis2": operator.index(static(axis2, "axis2")),
    }
    return emit(graph, "diagonal", array_input(graph, a), **params)


def bind_trace(
    graph: Graph,
    a: Any,
    offset: Any = 0,
    axis1: Any = 0,
    axis2: Any = 1,
    dtype: Any = None,
    out: Any = None,
) -> Node:
    unsupported_if(out is not None, "np.trace with out=")
    diagonal = bind_diagonal(graph, a, offset, axis1, axis2)
    params: dict[str, Any] = {"axis": (array_meta(diagonal).ndim - 1,)}
    if dtype is not None:
        params["dtype"] = dtype_param(dtype)
    return emit(graph, "sum", diagonal, **params)
