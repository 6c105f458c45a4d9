"""Bindings of calls that join arrays: concatenate, stack, hstack, vstack; and np.roll."""

from __future__ import annotations

from typing import Any

from ..graph import Graph, Node
from ..ops._shapes import normalize_axis
from ..ops.join import roll_shifts
from ._arguments import (
    array_input,
    array_meta,
    dtype_param,
    emit,
    static,
    unsupported_if,
)
from ._view import bind_atleast_1d, bind_atleast_2d, emit_reshape

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


# --- rotating ------------------------------------------------------------------------------


def bind_roll(graph: Graph, a: Any, shift: Any, axis: Any = None) -> Node:
    x = array_input(graph, a)
    shift = static(shift, "shift")
    if axis is None:
        # NumPy rolls the flattened array and reshapes it back (a C-ordered result).
        shape = array_meta(x).shape
        flat = emit_reshape(graph, x, (-1,))
        axes, shifts = roll_shifts(1, shift, 0)
        return emit_reshape(graph, emit(graph, "roll", flat, shift=shifts, axis=axes), shape)
    axes, shifts = roll_shifts(array_meta(x).ndim, shift, static(axis, "axis"))
    return emit(graph, "roll", x, shift=shifts, axis=axes)
