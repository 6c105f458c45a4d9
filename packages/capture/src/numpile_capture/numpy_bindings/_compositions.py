"""Bindings that compose existing ops: ptp, count_nonzero, tri, diag, column_stack, dstack,
inner, vdot, kron, repeat, tile, the ufunc methods (`np.multiply.outer`, `np.add.reduce`), the
contiguity conversions and `ndarray.view()`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ScalarMeta
from ..ops._shapes import is_c_contiguous, is_f_contiguous
from ..ops.pointwise import UFUNC_NAMES
from ..ops.ufunc_at import AT_UFUNCS
from ._arguments import (
    NO_VALUE,
    Binding,
    UnsupportedCall,
    array_input,
    array_meta,
    dtype_param,
    emit,
    operand,
    static,
    unsupported_if,
)
from ._indexing import bind_ufunc_at
from ._outputs import out_target, write_ufunc_out
from ._pointwise import emit_astype
from ._reduction import bind_scan, emit_reduction, reduction_binding
from ._view import bind_diagonal, emit_reshape

# --- reductions built from others ----------------------------------------------------------


def bind_ptp(
    graph: Graph, a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO_VALUE
) -> Any:
    high = reduction_binding("max")(graph, a, axis, None, keepdims)
    low = reduction_binding("min")(graph, a, axis, None, keepdims)
    result = emit(graph, "subtract", high, low)
    target = out_target(out)
    if target is None:
        return result
    return write_ufunc_out(graph, np.subtract, [high, low], result, target, "same_kind")


def bind_count_nonzero(graph: Graph, a: Any, axis: Any = None, *, keepdims: bool = False) -> Node:
    result: Node = emit_reduction(graph, "count_nonzero", a, axis, keepdims)
    return result


# --- creation and joins --------------------------------------------------------------------


def bind_tri(
    graph: Graph, N: Any, M: Any = None, k: Any = 0, dtype: Any = float, *, like: Any = None
) -> Node:
    unsupported_if(like is not None, "np.tri with like=")
    rows = static(N, "N")
    cols = rows if M is None else static(M, "M")
    ones = emit(graph, "ones", shape=(rows, cols), dtype=np.dtype(static(dtype, "dtype")))
    offset = static(k, "k")
    return emit(graph, "tril", ones, **({} if offset == 0 else {"k": offset}))


def bind_diag(graph: Graph, v: Any, k: Any = 0) -> Node:
    x = array_input(graph, v)
    meta = array_meta(x)
    offset = operator.index(static(k, "k"))
    if meta.ndim == 2:
        return bind_diagonal(graph, x, offset)  # NumPy's own: a read-only view
    if meta.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    length = meta.shape[0]
    unsupported_if(not isinstance(length, int), "np.diag of a 1-d array of symbolic length")
    # v on the k-th diagonal of an (n, n) matrix of zeros: v, padded to n with zeros, is read
    # along the rows above the diagonal (k >= 0) and along the columns below it.
    size = length + abs(offset)
    zero = emit(graph, "zeros", shape=(), dtype=meta.dtype)
    if offset:
        padding = emit(graph, "zeros", shape=(abs(offset),), dtype=meta.dtype)
        x = emit(graph, "concatenate", x, padding)
    along = emit_reshape(graph, x, (size, 1) if offset >= 0 else (1, size))
    mask = emit(graph, "eye", n=size, m=size, k=offset, dtype=np.dtype(bool))
    return emit(graph, "where", mask, along, zero)


def _joined(graph: Graph, tup: Any, what: str) -> list[Node]:
    unsupported_if(isinstance(tup, Node), f"np.{what} of one traced array")
    return [array_input(graph, item) for item in tup]


def bind_column_stack(graph: Graph, tup: Any) -> Node:
    columns = []
    for x in _joined(graph, tup, "column_stack"):
        ndim = array_meta(x).ndim
        columns.append(emit_reshape(graph, x, (-1, 1) if ndim == 1 else (1, 1)) if ndim < 2 else x)
    return emit(graph, "concatenate", *columns, axis=1)


def _atleast_3d(graph: Graph, x: Node) -> Node:
    shape = tuple(array_meta(x).shape)
    if len(shape) == 0:
        return emit_reshape(graph, x, (1, 1, 1))
    if len(shape) == 1:
        return emit_reshape(graph, x, (1, shape[0], 1))
    if len(shape) == 2:
        return emit_reshape(graph, x, (*shape, 1))
    return x


def bind_dstack(graph: Graph, tup: Any) -> Node:
    layers = [_atleast_3d(graph, x) for x in _joined(graph, tup, "dstack")]
    return emit(graph, "concatenate", *layers, axis=2)


def _repeats_param(repeats: Any) -> int | tuple[int, ...]:
    value = static(repeats, "repeats")
    if isinstance(value, list | tuple | np.ndarray):
        return tuple(int(r) for r in value)
    return int(value)


def bind_repeat(graph: Graph, a: Any, repeats: Any, axis: Any = None) -> Node:
    params: dict[str, Any] = {"repeats": _repeats_param(repeats)}
    if axis is not None:
        params["axis"] = static(axis, "axis")
    return emit(graph, "repeat", array_input(graph, a), **params)


def bind_tile(graph: Graph, A: Any, reps: Any) -> Node:
    value = static(reps, "reps")
    tup = tuple(int(r) for r in value) if isinstance(value, list | tuple) else (int(value),)
    return emit(graph, "tile", array_input(graph, A), reps=tup)


# --- products ------------------------------------------------------------------------------


def _is_scalar(value: Any) -> bool:
    if isinstance(value, Node):
        return isinstance(value.meta, ScalarMeta) or value.meta.ndim == 0
    return not isinstance(value, list | tuple | np.ndarray)


def bind_inner(graph: Graph, a: Any, b: Any, /) -> Node:
    if _is_scalar(a) or _is_scalar(b):
        return emit(graph, "multiply", operand(graph, a), operand(graph, b))
    return emit(graph, "inner", array_input(graph, a), array_input(graph, b))


def bind_vdot(graph: Graph, a: Any, b: Any, /) -> Node:
    x, y = array_input(graph, a), array_input(graph, b)
    if array_meta(x).dtype.kind == "c":
        x = emit(graph, "conjugate", x)
    return emit(graph, "dot", emit_reshape(graph, x, (-1,)), emit_reshape(graph, y, (-1,)))


def bind_kron(graph: Graph, a: Any, b: Any) -> Node:
    # NumPy's own steps: the product of a and b with their axes interleaved, reshaped.
    y = array_input(graph, b)
    x = array_input(graph, a)
    ndb = array_meta(y).ndim
    if array_meta(x).ndim < ndb:  # np.array(a, ndmin=b.ndim)
        x = emit_reshape(graph, x, (1,) * (ndb - array_meta(x).ndim) + tuple(array_meta(x).shape))
    nda = array_meta(x).ndim
    if nda == 0 or ndb == 0:
        return emit(graph, "multiply", x, y)
    a_shape = tuple(array_meta(x).shape)
    b_shape = (1,) * (nda - ndb) + tuple(array_meta(y).shape)
    if nda > ndb:
        y = emit(graph, "expand_dims", y, axis=tuple(range(nda - ndb)))
    x = emit(graph, "expand_dims", x, axis=tuple(range(1, nda * 2, 2)))
    y = emit(graph, "expand_dims", y, axis=tuple(range(0, nda * 2, 2)))
    product = emit(graph, "multiply", x, y)
    return emit_reshape(graph, product, tuple(p * q for p, q in zip(a_shape, b_shape, strict=True)))


# --- ufunc methods -------------------------------------------------------------------------


def _ufunc_outer(ufunc: np.ufunc) -> Callable[..., Any]:
    def apply(graph: Graph, A: Any, B: Any, /, **kwargs: Any) -> Node:
        unsupported_if(bool(kwargs), f"np.{ufunc.__name__}.outer with keywords")
        if ufunc.nin != 2 or ufunc.nout != 1:
            raise ValueError("method outer is only supported for binary functions")
        x, y = array_input(graph, A), array_input(graph, B)
        x_ndim, y_ndim = array_meta(x).ndim, array_meta(y).ndim
        if y_ndim:
            x = emit(graph, "expand_dims", x, axis=tuple(range(x_ndim, x_ndim + y_ndim)))
        return emit(graph, ufunc.__name__, x, y)

    return apply


# NOTE: which reduction or scan op `ufunc.reduce` / `ufunc.accumulate` is (their axis is 0).
_UFUNC_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}
_UFUNC_SCANS = {"add": "cumsum", "multiply": "cumprod"}


def _ufunc_reduce(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        array: Any,
        axis: Any = 0,
        dtype: Any = None,
        out: Any = None,
        keepdims: Any = False,
        **kwargs: Any,
    ) -> Any:
        arguments: dict[str, Any] = {"out": out, "keepdims": keepdims, **kwargs}
        if dtype is not None:
            arguments["dtype"] = dtype
        return reduction_binding(name)(graph, array, axis, **arguments)

    return apply


def _ufunc_accumulate(name: str) -> Callable[..., Any]:
    def apply(graph: Graph, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
        return bind_scan(name)(graph, array, axis, dtype, out)

    return apply


def ufunc_method_binding(ufunc: np.ufunc, method: str) -> Binding | None:
    """The binding of `ufunc.<method>` (outer; reduce and accumulate of the common ufuncs;
    `at` of the binary ones)."""
    name = ufunc.__name__
    if method == "outer" and name in UFUNC_NAMES:
        return Binding(f"numpy.{name}.outer", _ufunc_outer(ufunc))
    if method == "reduce" and name in _UFUNC_REDUCTIONS:
        return Binding(f"numpy.{name}.reduce", _ufunc_reduce(_UFUNC_REDUCTIONS[name]))
    if method == "accumulate" and name in _UFUNC_SCANS:
        return Binding(f"numpy.{name}.accumulate", _ufunc_accumulate(_UFUNC_SCANS[name]))
    if method == "at" and name in AT_UFUNCS:
        return Binding(f"numpy.{name}.at", bind_ufunc_at(name))
    return None


# --- layout conversions and views ----------------------------------------------------------


def _as_layout(order: str) -> Callable[..., Node]:
    contiguous = is_c_contiguous if order == "C" else is_f_contiguous

    def apply(graph: Graph, a: Any, dtype: Any = None, *, like: Any = None) -> Node:
        unsupported_if(like is not None, "like=")
        x = array_input(graph, a)
        if array_meta(x).ndim == 0:
            x = emit_reshape(graph, x, (1,))
        target = dtype_param(dtype)
        if target is not None and target != array_meta(x).dtype:
            x = emit_astype(graph, x, target, "unsafe", True)
        if not contiguous(array_meta(x)):
            x = emit(graph, "copy", x, order=order)
        return x

    return apply


bind_ascontiguousarray = _as_layout("C")
bind_asfortranarray = _as_layout("F")


def bind_method_view(graph: Graph, x: Node, dtype: Any = NO_VALUE, type: Any = NO_VALUE) -> Node:
    if dtype is np.ndarray and type is NO_VALUE:
        dtype = NO_VALUE
    unsupported_if(type not in (NO_VALUE, np.ndarray), "ndarray.view with type=")
    if dtype is not NO_VALUE and np.dtype(static(dtype, "dtype")) != array_meta(x).dtype:
        raise UnsupportedCall("ndarray.view as another dtype is not supported yet")
    return emit(graph, "alias", x)
