"""Bindings of linear algebra: dot, outer, einsum, tensordot, tril/triu, and np.linalg's
norm, inv, det and solve.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ScalarMeta
from ..ops.linalg import normalize_tensordot_axes
from ._arguments import (
    UnsupportedCall,
    array_input,
    array_meta,
    emit,
    freeze,
    operand,
    static,
    unsupported_if,
)
from ._view import emit_reshape

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
    params = {} if optimize is False else {"optimize": freeze(static(optimize, "optimize"))}
    return emit(graph, "einsum", *nodes, subscripts=subscripts, **params)


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
