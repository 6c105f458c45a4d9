"""The NumPy-to-op mapping: how the tracer turns a NumPy call on traced arrays into graph nodes.

A `Binding` takes the graph and the call's arguments as the user wrote them,
except that traced arrays are `Node`s, normalizes NumPy's signature
(positional or keyword, defaults), emits one or more nodes and returns what
NumPy would return (a Node, a tuple of Nodes, or a plain value). Python
scalars stay weak constants; NumPy scalars (np.float32(2.0)) stay constants
that the meta rules treat as strong. Argument combinations numpile does not
capture yet raise `UnsupportedCall`; invalid programs raise NumPy's own
exceptions, at capture time.

    >>> g = Graph()
    >>> x = g.placeholder("x", ArrayMeta((2, 3), "float32"))
    >>> s = lookup_function(np.sum).apply(g, x, axis=-1)
    >>> print(s.format())
    v0 = sum(x, axis=(1,))  # float32[2]

Four tables: `lookup_function` (by identity of the NumPy callable),
`lookup_method` (ndarray methods, the array is the first argument),
`lookup_attribute` (T, mT, real, imag) and `lookup_operator` (Python
operators by dunder name without underscores: "add", "iadd", "getitem").
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .graph import Graph, Node
from .meta import ArrayMeta, ScalarMeta
from .op import get_op
from .ops._shapes import (
    normalize_axes,
    normalize_axis,
    reshape_strides,
    strides_of,
)
from .ops.creation import normalize_shape
from .ops.indexing import IndexArray
from .ops.linalg import normalize_tensordot_axes
from .ops.pointwise import UFUNC_NAMES
from .ops.reduction import REDUCTIONS
from .ops.view import (
    infer_reshape,
    is_element_index,
    normalize_index,
    normalize_transpose_axes,
)

logger = logging.getLogger("numpile.capture.bindings")

__all__ = [
    "Binding",
    "UnsupportedCall",
    "lookup_attribute",
    "lookup_function",
    "lookup_method",
    "lookup_operator",
]


class UnsupportedCall(Exception):  # noqa: N818 - it names the event, like Unsupported
    """A NumPy call with arguments numpile cannot capture yet; the tracer makes it a graph break.

    >>> str(UnsupportedCall("np.sum with out= is not supported yet"))
    'np.sum with out= is not supported yet'
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@attrs.frozen
class Binding:
    """How one NumPy callable, method, attribute or operator becomes graph nodes.

    `apply(graph, *args, **kwargs)` receives the user's arguments with arrays
    as `Node`s and returns the result as NumPy would shape it.

        >>> lookup_operator("add").name
        'operator.add'
    """

    name: str
    apply: Callable[..., Any] = attrs.field(repr=False)


class _NoValue:
    # Stands for "argument not given", as NumPy's own _NoValue does.
    def __repr__(self) -> str:
        return "<no value>"


_NO = _NoValue()

# --- argument helpers ----------------------------------------------------------------------


def _meta(node: Node) -> ArrayMeta:
    if not isinstance(node.meta, ArrayMeta):
        raise UnsupportedCall(f"{node.name} is a traced Python scalar where an array is needed")
    return node.meta


def _unsupported_if(condition: bool, what: str) -> None:
    if condition:
        raise UnsupportedCall(f"{what} is not supported yet")


def _contains_node(value: Any) -> bool:
    if isinstance(value, Node):
        return True
    if isinstance(value, list | tuple):
        return any(_contains_node(item) for item in value)
    return False


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value


def _constant_array(graph: Graph, value: Any, dtype: Any = None) -> Node:
    if isinstance(value, np.ndarray):
        raise UnsupportedCall("a constant ndarray inside a compiled region is not supported yet")
    if _contains_node(value):
        raise UnsupportedCall("a list mixing traced arrays and constants is not supported yet")
    return graph.call(get_op("array"), value=_freeze(value), dtype=dtype)


def _operand(graph: Graph, value: Any) -> Any:
    """An op input: nodes and scalars as they are, lists as constant array nodes."""
    if isinstance(value, list | tuple | np.ndarray):
        return _constant_array(graph, value)
    return value


def _array(graph: Graph, value: Any) -> Node:
    """An input that must be an array node: scalars and lists become constant arrays."""
    if isinstance(value, Node):
        _meta(value)
        return value
    if isinstance(value, bool | int | float | complex | np.generic | list | tuple):
        return _constant_array(graph, value)
    raise UnsupportedCall(f"an argument of type {type(value).__name__} is not supported yet")


def _static(value: Any, what: str) -> Any:
    if _contains_node(value):
        raise UnsupportedCall(f"{what} computed from a traced array is not supported yet")
    return value


def _dtype(dtype: Any) -> np.dtype[Any] | None:
    return None if dtype is None else np.dtype(_static(dtype, "dtype"))


def _axes_param(axis: Any, ndim: int) -> tuple[int, ...] | None:
    axis = _static(axis, "axis")
    return None if axis is None else normalize_axes(axis, ndim)


def _call(graph: Graph, name: str, *inputs: Any, **params: Any) -> Node:
    return graph.call(get_op(name), *inputs, **params)


# --- ufuncs --------------------------------------------------------------------------------


def _ufunc_binding(ufunc: np.ufunc) -> Binding:
    name = ufunc.__name__

    def apply(
        graph: Graph,
        *args: Any,
        out: Any = None,
        where: Any = True,
        casting: str = "same_kind",
        order: str = "K",
        dtype: Any = None,
        subok: bool = True,
        signature: Any = None,
    ) -> Any:
        if len(args) < ufunc.nin:
            raise TypeError(
                f"{name}() takes from {ufunc.nin} to {ufunc.nin + ufunc.nout} positional "
                f"arguments but {len(args)} were given"
            )
        _unsupported_if(len(args) > ufunc.nin or out is not None, f"np.{name} with out=")
        _unsupported_if(where is not True, f"np.{name} with where=")
        _unsupported_if(dtype is not None or signature is not None, f"np.{name} with dtype=")
        _unsupported_if(casting != "same_kind" or order != "K", f"np.{name} with casting/order")
        inputs = [_operand(graph, arg) for arg in args]
        if ufunc is np.divmod:
            return (_call(graph, "floor_divide", *inputs), _call(graph, "remainder", *inputs))
        if ufunc is np.matmul:
            return _call(graph, "matmul", *(_array(graph, a) for a in inputs))
        return _call(graph, name, *inputs)

    return Binding(f"numpy.{name}", apply)


# --- reductions and scans ------------------------------------------------------------------


def _reduce(
    graph: Graph, name: str, a: Any, axis: Any, keepdims: Any, dtype: Any = None, ddof: Any = 0
) -> Node:
    x = _array(graph, a)
    params: dict[str, Any] = {}
    if REDUCTIONS[name].single_axis:
        if axis is not None:
            params["axis"] = normalize_axis(_static(axis, "axis"), _meta(x).ndim)
    elif axis is not None:
        params["axis"] = _axes_param(axis, _meta(x).ndim)
    if keepdims is not _NO and keepdims:
        params["keepdims"] = True
    if dtype is not None:
        params["dtype"] = _dtype(dtype)
    if ddof != 0:
        params["ddof"] = _static(ddof, "ddof")
    return _call(graph, name, x, **params)


def _check_reduction_args(name: str, out: Any, initial: Any = _NO, where: Any = _NO) -> None:
    _unsupported_if(out is not None, f"np.{name} with out=")
    _unsupported_if(initial is not _NO, f"np.{name} with initial=")
    _unsupported_if(where is not _NO and where is not True, f"np.{name} with where=")


def _sum_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: Any = _NO,
        initial: Any = _NO,
        where: Any = _NO,
    ) -> Node:
        _check_reduction_args(name, out, initial, where)
        return _reduce(graph, name, a, axis, keepdims, dtype)

    return apply


def _max_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        out: Any = None,
        keepdims: Any = _NO,
        initial: Any = _NO,
        where: Any = _NO,
    ) -> Node:
        _check_reduction_args(name, out, initial, where)
        return _reduce(graph, name, a, axis, keepdims)

    return apply


def _arg_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph, a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = _NO
    ) -> Node:
        _check_reduction_args(name, out)
        return _reduce(graph, name, a, axis, keepdims)

    return apply


def _mean_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: Any = _NO,
        *,
        where: Any = _NO,
    ) -> Node:
        _check_reduction_args(name, out, where=where)
        return _reduce(graph, name, a, axis, keepdims, dtype)

    return apply


def _var_like(name: str) -> Callable[..., Any]:
    def apply(
        graph: Graph,
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: Any = 0,
        keepdims: Any = _NO,
        *,
        where: Any = _NO,
        mean: Any = _NO,
        correction: Any = _NO,
    ) -> Node:
        _check_reduction_args(name, out, where=where)
        _unsupported_if(mean is not _NO, f"np.{name} with mean=")
        if correction is not _NO:
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        return _reduce(graph, name, a, axis, keepdims, dtype, ddof)

    return apply


# NOTE: which signature each reduction has; ndarray methods share them.
_REDUCTION_SIGNATURES: dict[str, Callable[[str], Callable[..., Any]]] = {
    "sum": _sum_like,
    "prod": _sum_like,
    "max": _max_like,
    "min": _max_like,
    "argmax": _arg_like,
    "argmin": _arg_like,
    "any": _mean_like,
    "all": _mean_like,
    "mean": _mean_like,
    "var": _var_like,
    "std": _var_like,
    "nansum": _sum_like,
    "nanprod": _sum_like,
    "nanmax": _max_like,
    "nanmin": _max_like,
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
        keepdims: Any = _NO,
        *,
        where: Any = _NO,
    ) -> Node:
        _check_reduction_args(name, out, where=where)
        return _reduce(graph, name, a, axis, keepdims)

    return apply


_REDUCTION_SIGNATURES["any"] = _any_all
_REDUCTION_SIGNATURES["all"] = _any_all


def _scan(name: str) -> Callable[..., Any]:
    def apply(graph: Graph, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Node:
        _unsupported_if(out is not None, f"np.{name} with out=")
        x = _array(graph, a)
        params: dict[str, Any] = {}
        if axis is not None:
            params["axis"] = normalize_axis(_static(axis, "axis"), _meta(x).ndim)
        if dtype is not None:
            params["dtype"] = _dtype(dtype)
        return _call(graph, name, x, **params)

    return apply


# --- views ---------------------------------------------------------------------------------


def _emit_reshape(graph: Graph, a: Any, shape: Any, copy: Any = None) -> Node:
    x = _array(graph, a)
    meta = _meta(x)
    resolved = infer_reshape(meta.shape, normalize_shape_arg(shape))
    viewable = reshape_strides(meta.shape, strides_of(meta), resolved) is not None
    if copy is False and not viewable:
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    if copy or not viewable:
        x = _call(graph, "copy", x, order="C")
    return _call(graph, "reshape", x, shape=resolved)


def normalize_shape_arg(shape: Any) -> tuple[Any, ...]:
    """A reshape target (an int or a sequence of ints, -1 allowed) as a tuple.

    >>> normalize_shape_arg(6)
    (6,)
    """
    shape = _static(shape, "a shape")
    items = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    return tuple(operator.index(d) if isinstance(d, int | np.integer) else d for d in items)


def _reshape(
    graph: Graph,
    a: Any,
    shape: Any = None,
    order: str = "C",
    *,
    newshape: Any = None,
    copy: Any = None,
) -> Node:
    _unsupported_if(order != "C", "reshape with order other than 'C'")
    target = shape if newshape is None else newshape
    if target is None:
        raise TypeError("reshape() missing required argument 'shape' (pos 2)")
    return _emit_reshape(graph, a, target, copy)


def _method_reshape(graph: Graph, x: Node, *shape: Any, order: str = "C", copy: Any = None) -> Node:
    _unsupported_if(order != "C", "reshape with order other than 'C'")
    target = shape[0] if len(shape) == 1 else shape
    return _emit_reshape(graph, x, target, copy)


def _ravel(graph: Graph, a: Any, order: str = "C") -> Node:
    _unsupported_if(order != "C", "ravel with order other than 'C'")
    return _emit_reshape(graph, a, (-1,))


def _flatten(graph: Graph, x: Node, order: str = "C") -> Node:
    _unsupported_if(order != "C", "flatten with order other than 'C'")
    return _emit_reshape(graph, x, (-1,), copy=True)


def _transpose(graph: Graph, a: Any, axes: Any = None) -> Node:
    x = _array(graph, a)
    perm = normalize_transpose_axes(_static(axes, "axes"), _meta(x).ndim)
    return _call(graph, "transpose", x, axes=perm)


def _method_transpose(graph: Graph, x: Node, *axes: Any) -> Node:
    if len(axes) == 0 or (len(axes) == 1 and axes[0] is None):
        return _transpose(graph, x)
    return _transpose(graph, x, axes[0] if len(axes) == 1 else axes)


def _swapaxes(graph: Graph, a: Any, axis1: Any, axis2: Any) -> Node:
    x = _array(graph, a)
    ndim = _meta(x).ndim
    first = normalize_axis(_static(axis1, "axis1"), ndim)
    second = normalize_axis(_static(axis2, "axis2"), ndim)
    perm = list(range(ndim))
    perm[first], perm[second] = perm[second], perm[first]
    return _call(graph, "transpose", x, axes=tuple(perm))


def _moveaxis(graph: Graph, a: Any, source: Any, destination: Any) -> Node:
    x = _array(graph, a)
    ndim = _meta(x).ndim
    src = normalize_axes(_static(source, "source"), ndim, what="repeated axis in `source` argument")
    dst = normalize_axes(
        _static(destination, "destination"), ndim, what="repeated axis in `destination` argument"
    )
    if len(src) != len(dst):
        raise ValueError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    order = [n for n in range(ndim) if n not in src]
    for dest, s in sorted(zip(dst, src, strict=True)):
        order.insert(dest, s)
    return _call(graph, "transpose", x, axes=tuple(order))


def _matrix_transpose(graph: Graph, x: Node) -> Node:
    ndim = _meta(x).ndim
    if ndim < 2:
        raise ValueError("matrix transpose with ndim < 2 is undefined")
    return _swapaxes(graph, x, -1, -2)


def _expand_dims(graph: Graph, a: Any, axis: Any) -> Node:
    x = _array(graph, a)
    axis = _static(axis, "axis")
    axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    out_ndim = _meta(x).ndim + len(axes)
    return _call(graph, "expand_dims", x, axis=normalize_axes(axes, out_ndim, what="repeated axis"))


def _squeeze(graph: Graph, a: Any, axis: Any = None) -> Node:
    x = _array(graph, a)
    params = {} if axis is None else {"axis": _axes_param(axis, _meta(x).ndim)}
    return _call(graph, "squeeze", x, **params)


def _broadcast_to(graph: Graph, array: Any, shape: Any, subok: bool = False) -> Node:
    target = normalize_shape_arg(shape)
    return _call(graph, "broadcast_to", _array(graph, array), shape=target)


def _broadcast_arrays(graph: Graph, *args: Any, subok: bool = False) -> tuple[Node, ...]:
    from .ops._shapes import broadcast_shapes

    nodes = [_array(graph, a) for a in args]
    shape = broadcast_shapes(*(_meta(n).shape for n in nodes))
    return tuple(_call(graph, "broadcast_to", n, shape=shape) for n in nodes)


def _flip(graph: Graph, m: Any, axis: Any = None) -> Node:
    x = _array(graph, m)
    ndim = _meta(x).ndim
    axes = tuple(range(ndim)) if axis is None else normalize_axes(_static(axis, "axis"), ndim)
    index = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(ndim))
    return _call(graph, "getitem", x, index=index)


def _fliplr(graph: Graph, m: Any) -> Node:
    if _meta(_array(graph, m)).ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return _flip(graph, m, 1)


def _flipud(graph: Graph, m: Any) -> Node:
    if _meta(_array(graph, m)).ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return _flip(graph, m, 0)


def _real(graph: Graph, val: Any) -> Node:
    return _call(graph, "real", _array(graph, val))


def _imag(graph: Graph, val: Any) -> Node:
    x = _array(graph, val)
    if _meta(x).dtype.kind != "c":
        return _call(graph, "zeros_like", x)
    return _call(graph, "imag", x)


def _atleast(graph: Graph, ndim: int, *arys: Any) -> Any:
    results = []
    for ary in arys:
        x = _array(graph, ary)
        shape = _meta(x).shape
        if len(shape) < ndim:
            padded = (1,) * (ndim - len(shape)) + shape if ndim == 2 or not shape else shape
            x = _call(graph, "reshape", x, shape=padded if shape else (1,) * ndim)
        results.append(x)
    return results[0] if len(results) == 1 else tuple(results)


def _atleast_1d(graph: Graph, *arys: Any) -> Any:
    return _atleast(graph, 1, *arys)


def _atleast_2d(graph: Graph, *arys: Any) -> Any:
    return _atleast(graph, 2, *arys)


# --- indexing ------------------------------------------------------------------------------


def _index_items(graph: Graph, key: Any) -> tuple[tuple[Any, ...], list[Node]]:
    # The key as a template of ints, slices, None, Ellipsis and IndexArray slots.
    items = key if isinstance(key, tuple) else (key,)
    template: list[Any] = []
    arrays: list[Node] = []
    for item in items:
        if isinstance(item, Node):
            if isinstance(item.meta, ScalarMeta):
                raise UnsupportedCall("indexing with a traced Python scalar is not supported yet")
            if item.meta.dtype.kind == "b" and item.meta.ndim == 0:
                raise UnsupportedCall("indexing with a 0-d boolean array is not supported yet")
            template.append(IndexArray(len(arrays)))
            arrays.append(item)
        elif isinstance(item, list | np.ndarray):
            dtype = np.dtype(np.intp) if len(item) == 0 else None
            template.append(IndexArray(len(arrays)))
            arrays.append(_constant_array(graph, item, dtype))
        elif isinstance(item, bool | np.bool_):
            raise UnsupportedCall("indexing with a Python bool is not supported yet")
        elif isinstance(item, slice):
            bounds = tuple(
                None if p is None else operator.index(_static(p, "a slice bound"))
                for p in (item.start, item.stop, item.step)
            )
            template.append(slice(*bounds))
        elif item is None or item is Ellipsis:
            template.append(item)
        else:
            template.append(operator.index(item))
    return tuple(template), arrays


def _expand_ellipsis(template: tuple[Any, ...], arrays: list[Node], ndim: int) -> tuple[Any, ...]:
    consumed = 0
    for item in template:
        if isinstance(item, IndexArray):
            meta = _meta(arrays[item.position])
            consumed += meta.ndim if meta.dtype.kind == "b" else 1
        elif item is not None and item is not Ellipsis:
            consumed += 1
    if sum(1 for item in template if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    result: list[Any] = []
    for item in template:
        if item is Ellipsis:
            result.extend(slice(None) for _ in range(max(ndim - consumed, 0)))
        else:
            result.append(item)
    return tuple(result)


def _nnz_name(graph: Graph, arrays: list[Node]) -> str | None:
    if any(_meta(a).dtype.kind == "b" for a in arrays):
        return f"u{len(graph.nodes)}"
    return None


def _getitem(graph: Graph, x: Any, key: Any) -> Node:
    node = _array(graph, x)
    meta = _meta(node)
    template, arrays = _index_items(graph, key)
    if not arrays:
        index = normalize_index(template, meta.shape)
        name = "element" if is_element_index(index, meta.ndim) else "getitem"
        return _call(graph, name, node, index=index)
    template = _expand_ellipsis(template, arrays, meta.ndim)
    nnz = _nnz_name(graph, arrays)
    params: dict[str, Any] = {"index": template}
    if nnz is not None:
        params["nnz"] = nnz
    return _call(graph, "index", node, *arrays, **params)


def _setitem(graph: Graph, x: Any, key: Any, value: Any) -> Node:
    if not isinstance(x, Node):
        raise UnsupportedCall("assigning into a value that is not a traced array")
    meta = _meta(x)
    template, arrays = _index_items(graph, key)
    operand = _operand(graph, value)
    if not arrays:
        index = normalize_index(template, meta.shape)
        return _call(graph, "setitem", x, operand, index=index)
    template = _expand_ellipsis(template, arrays, meta.ndim)
    nnz = _nnz_name(graph, arrays)
    params: dict[str, Any] = {"index": template}
    if nnz is not None:
        params["nnz"] = nnz
    return _call(graph, "index_put", x, operand, *arrays, **params)


# --- pointwise non-ufuncs ------------------------------------------------------------------


def _round(graph: Graph, a: Any, decimals: Any = 0, out: Any = None) -> Node:
    _unsupported_if(out is not None, "np.round with out=")
    params = {} if decimals == 0 else {"decimals": operator.index(_static(decimals, "decimals"))}
    return _call(graph, "round", _array(graph, a), **params)


def _clip(
    graph: Graph,
    a: Any,
    a_min: Any = _NO,
    a_max: Any = _NO,
    out: Any = None,
    *,
    min: Any = _NO,
    max: Any = _NO,
    **kwargs: Any,
) -> Node:
    _unsupported_if(out is not None or bool(kwargs), "np.clip with out= or ufunc keywords")
    if a_min is not _NO and a_max is _NO and max is _NO:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    if a_min is not _NO and min is not _NO:
        raise TypeError("Passed more than one argument for min: a_min and min")
    if a_max is not _NO and max is not _NO:
        raise TypeError("Passed more than one argument for max: a_max and max")
    low = a_min if a_min is not _NO else (None if min is _NO else min)
    high = a_max if a_max is not _NO else (None if max is _NO else max)
    return _call(graph, "clip", _array(graph, a), _operand(graph, low), _operand(graph, high))


def _method_clip(
    graph: Graph, x: Node, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any
) -> Node:
    return _clip(graph, x, min, max, out, **kwargs)


def _where(graph: Graph, condition: Any, x: Any = _NO, y: Any = _NO) -> Node:
    if x is _NO and y is _NO:
        raise UnsupportedCall("np.where with one argument (a data-dependent shape)")
    if x is _NO or y is _NO:
        raise ValueError("either both or neither of x and y should be given")
    inputs = (_operand(graph, condition), _operand(graph, x), _operand(graph, y))
    return _call(graph, "where", *inputs)


def _emit_astype(graph: Graph, x: Node, dtype: Any, casting: str, copy: Any) -> Node:
    target = np.dtype(_static(dtype, "dtype"))
    if not copy and _meta(x).dtype == target:
        return x
    params: dict[str, Any] = {"dtype": target}
    if casting != "unsafe":
        params["casting"] = casting
    return _call(graph, "astype", x, **params)


def _astype(graph: Graph, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Node:
    return _emit_astype(graph, _array(graph, x), dtype, "unsafe", copy)


def _method_astype(
    graph: Graph,
    x: Node,
    dtype: Any,
    order: str = "K",
    casting: str = "unsafe",
    subok: bool = True,
    copy: bool = True,
) -> Node:
    _unsupported_if(order != "K", "astype with order other than 'K'")
    return _emit_astype(graph, x, dtype, casting, copy)


def _copy(graph: Graph, a: Any, order: str = "K", subok: bool = False) -> Node:
    _unsupported_if(order not in ("C", "K"), f"copy with order={order!r}")
    return _call(graph, "copy", _array(graph, a), order=order)


def _method_copy(graph: Graph, x: Node, order: str = "C") -> Node:
    return _copy(graph, x, order)


def _angle(graph: Graph, z: Any, deg: bool = False) -> Node:
    params = {"deg": True} if deg else {}
    return _call(graph, "angle", _array(graph, z), **params)


def _fill(graph: Graph, x: Node, value: Any) -> None:
    _call(graph, "fill", x, _operand(graph, value))


def _copyto(
    graph: Graph, dst: Any, src: Any, casting: str = "same_kind", where: Any = True
) -> None:
    _unsupported_if(where is not True, "np.copyto with where=")
    if not isinstance(dst, Node):
        raise UnsupportedCall("np.copyto into a value that is not a traced array")
    _call(graph, "copyto", dst, _operand(graph, src), casting=casting)


# --- creation ------------------------------------------------------------------------------


def _check_creation(name: str, order: Any, like: Any = None, device: Any = None) -> None:
    _unsupported_if(order not in ("C", "K", None), f"np.{name} with order={order!r}")
    _unsupported_if(like is not None, f"np.{name} with like=")
    _unsupported_if(device not in (None, "cpu"), f"np.{name} with device=")


def _shape_param(shape: Any) -> tuple[Any, ...]:
    return normalize_shape(_static(shape, "a shape"))


def _filled(name: str) -> Callable[..., Any]:
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
        return _call(
            graph, name, shape=_shape_param(shape), dtype=np.dtype(_static(dtype, "dtype"))
        )

    return apply


def _full(
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
    params = {"shape": _shape_param(shape), "dtype": _dtype(dtype)}
    return _call(graph, "full", _operand(graph, fill_value), **params)


def _arange(
    graph: Graph,
    start_or_stop: Any = _NO,
    /,
    stop: Any = None,
    step: Any = 1,
    *,
    start: Any = _NO,
    dtype: Any = None,
    device: Any = None,
    like: Any = None,
) -> Node:
    _check_creation("arange", "C", like, device)
    if start is not _NO:
        begin, end = start, (start_or_stop if stop is None else stop)
    elif start_or_stop is _NO:
        raise TypeError("arange() requires stop to be specified.")
    elif stop is None:
        begin, end = 0, start_or_stop
    else:
        begin, end = start_or_stop, stop
    if end is _NO or end is None:
        raise TypeError("arange() requires stop to be specified.")
    values = tuple(_static(v, "an arange bound") for v in (begin, end, step))
    return _call(
        graph, "arange", start=values[0], stop=values[1], step=values[2], dtype=_dtype(dtype)
    )


def _linspace(
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
    _unsupported_if(retstep or axis != 0, "np.linspace with retstep= or axis=")
    _check_creation("linspace", "C", None, device)
    for value in (start, stop):
        _unsupported_if(
            not isinstance(_static(value, "a linspace bound"), int | float | complex | np.generic),
            "np.linspace with array bounds",
        )
    return _call(
        graph,
        "linspace",
        start=start,
        stop=stop,
        num=operator.index(_static(num, "num")),
        endpoint=bool(endpoint),
        dtype=_dtype(dtype),
    )


def _eye(
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
    n = operator.index(_static(N, "N"))
    m = None if M is None else operator.index(_static(M, "M"))
    return _call(graph, "eye", n=n, m=m, k=operator.index(_static(k, "k")), dtype=np.dtype(dtype))


def _identity(graph: Graph, n: Any, dtype: Any = None, *, like: Any = None) -> Node:
    return _eye(graph, n, dtype=float if dtype is None else dtype, like=like)


def _like(name: str) -> Callable[..., Any]:
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
            params["dtype"] = _dtype(dtype)
        if shape is not None:
            params["shape"] = _shape_param(shape)
        return _call(graph, name, _array(graph, a), **params)

    return apply


def _full_like(
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
        params["dtype"] = _dtype(dtype)
    if shape is not None:
        params["shape"] = _shape_param(shape)
    return _call(graph, "full_like", _array(graph, a), _operand(graph, fill_value), **params)


def _np_array(
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
    _unsupported_if(ndmin != 0 or ndmax != 0, "np.array with ndmin=/ndmax=")
    if not isinstance(object, Node):
        return _constant_array(graph, object, _dtype(dtype))
    if dtype is not None and _meta(object).dtype != np.dtype(dtype):
        return _emit_astype(graph, object, dtype, "unsafe", True)
    if copy is False:
        return object
    if copy is None:
        return object
    return _call(graph, "copy", object, order="K")


def _asarray(
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
    return _np_array(graph, a, dtype, copy=False if copy is None else copy)


# --- joining -------------------------------------------------------------------------------


def _concatenate(
    graph: Graph,
    arrays: Any,
    /,
    axis: Any = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Node:
    _unsupported_if(out is not None, "np.concatenate with out=")
    _unsupported_if(isinstance(arrays, Node), "np.concatenate of one traced array")
    nodes = [_array(graph, a) for a in arrays]
    params: dict[str, Any] = {"axis": _static(axis, "axis")}
    if dtype is not None:
        params["dtype"] = _dtype(dtype)
    if casting != "same_kind":
        params["casting"] = casting
    return _call(graph, "concatenate", *nodes, **params)


def _stack(
    graph: Graph,
    arrays: Any,
    axis: Any = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Node:
    _unsupported_if(isinstance(arrays, Node), "np.stack of one traced array")
    nodes = [_array(graph, a) for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to stack")
    shapes = {_meta(n).shape for n in nodes}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    result_axis = normalize_axis(_static(axis, "axis"), _meta(nodes[0]).ndim + 1)
    expanded = [_call(graph, "expand_dims", n, axis=(result_axis,)) for n in nodes]
    return _concatenate(graph, expanded, result_axis, out, dtype=dtype, casting=casting)


def _hstack(graph: Graph, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Node:
    _unsupported_if(isinstance(tup, Node), "np.hstack of one traced array")
    nodes = [_atleast_1d(graph, a) for a in tup]
    axis = 0 if nodes and _meta(nodes[0]).ndim == 1 else 1
    return _concatenate(graph, nodes, axis, dtype=dtype, casting=casting)


def _vstack(graph: Graph, tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Node:
    _unsupported_if(isinstance(tup, Node), "np.vstack of one traced array")
    nodes = [_atleast_2d(graph, a) for a in tup]
    return _concatenate(graph, nodes, 0, dtype=dtype, casting=casting)


# --- linear algebra ------------------------------------------------------------------------


def _is_scalar_operand(value: Any) -> bool:
    if isinstance(value, Node):
        return isinstance(value.meta, ScalarMeta) or value.meta.ndim == 0
    return not isinstance(value, list | tuple | np.ndarray)


def _dot(graph: Graph, a: Any, b: Any, out: Any = None) -> Node:
    _unsupported_if(out is not None, "np.dot with out=")
    if _is_scalar_operand(a) or _is_scalar_operand(b):
        return _call(graph, "multiply", _operand(graph, a), _operand(graph, b))
    return _call(graph, "dot", _array(graph, a), _array(graph, b))


def _outer(graph: Graph, a: Any, b: Any, out: Any = None) -> Node:
    _unsupported_if(out is not None, "np.outer with out=")
    column = _emit_reshape(graph, a, (-1, 1))
    row = _emit_reshape(graph, b, (1, -1))
    return _call(graph, "multiply", column, row)


def _einsum(
    graph: Graph, *operands: Any, out: Any = None, optimize: Any = False, **kwargs: Any
) -> Node:
    _unsupported_if(out is not None or bool(kwargs), "np.einsum with out=/dtype=/casting=")
    if not operands or not isinstance(operands[0], str):
        raise UnsupportedCall("np.einsum with sublist operands is not supported yet")
    subscripts = operands[0]
    nodes = [_array(graph, x) for x in operands[1:]]
    return _call(graph, "einsum", *nodes, subscripts=subscripts)


def _tensordot(graph: Graph, a: Any, b: Any, axes: Any = 2) -> Node:
    x, y = _array(graph, a), _array(graph, b)
    normalized = normalize_tensordot_axes(_static(axes, "axes"), _meta(x).ndim, _meta(y).ndim)
    return _call(graph, "tensordot", x, y, axes=normalized)


def _triangle(name: str) -> Callable[..., Any]:
    def apply(graph: Graph, m: Any, k: Any = 0) -> Node:
        params = {} if k == 0 else {"k": operator.index(_static(k, "k"))}
        return _call(graph, name, _array(graph, m), **params)

    return apply


# --- operators -----------------------------------------------------------------------------

# NOTE: Python operator names (dunder without underscores) and the ufunc each one applies.
_BINARY_OPERATORS: dict[str, str] = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "power",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "left_shift",
    "rshift": "right_shift",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}
_UNARY_OPERATORS: dict[str, str] = {
    "neg": "negative",
    "pos": "positive",
    "invert": "invert",
    "abs": "absolute",
}


def _binary_operator(ufunc_name: str) -> Callable[..., Any]:
    def apply(graph: Graph, lhs: Any, rhs: Any) -> Node:
        if lhs is None or rhs is None:
            raise UnsupportedCall(f"comparing an array with None ({ufunc_name})")
        return _call(graph, ufunc_name, _operand(graph, lhs), _operand(graph, rhs))

    return apply


def _unary_operator(ufunc_name: str) -> Callable[..., Any]:
    def apply(graph: Graph, operand: Any) -> Node:
        return _call(graph, ufunc_name, _array(graph, operand))

    return apply


def _matmul_operator(graph: Graph, lhs: Any, rhs: Any) -> Node:
    return _call(graph, "matmul", _array(graph, lhs), _array(graph, rhs))


def _inplace_operator(ufunc_name: str) -> Callable[..., Any]:
    def apply(graph: Graph, target: Any, value: Any) -> Node:
        if not isinstance(target, Node) or isinstance(target.meta, ScalarMeta):
            # Python falls back to the binary operator when the target is not an array.
            return _call(graph, ufunc_name, _operand(graph, target), _operand(graph, value))
        if ufunc_name == "matmul":
            return _call(graph, "matmul_", target, _array(graph, value))
        return _call(graph, f"{ufunc_name}_", target, _operand(graph, value))

    return apply


def _build_operators() -> dict[str, Binding]:
    table: dict[str, Binding] = {}
    for name, ufunc_name in _BINARY_OPERATORS.items():
        table[name] = Binding(f"operator.{name}", _binary_operator(ufunc_name))
    for name, ufunc_name in _UNARY_OPERATORS.items():
        table[name] = Binding(f"operator.{name}", _unary_operator(ufunc_name))
    table["matmul"] = Binding("operator.matmul", _matmul_operator)
    for name, ufunc_name in [*_BINARY_OPERATORS.items(), ("matmul", "matmul")]:
        if ufunc_name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            continue
        table[f"i{name}"] = Binding(f"operator.i{name}", _inplace_operator(ufunc_name))
    table["getitem"] = Binding("operator.getitem", _getitem)
    table["setitem"] = Binding("operator.setitem", _setitem)
    return table


# --- tables --------------------------------------------------------------------------------


def _build_functions() -> dict[int, tuple[object, Binding]]:
    entries: list[tuple[object, Binding]] = []
    for name in (*UFUNC_NAMES, "divmod", "matmul"):
        ufunc = getattr(np, name)
        entries.append((ufunc, _ufunc_binding(ufunc)))
    for name, signature in _REDUCTION_SIGNATURES.items():
        entries.append((getattr(np, name), Binding(f"numpy.{name}", signature(name))))
    entries += [(np.amax, Binding("numpy.amax", _max_like("max")))]
    entries += [(np.amin, Binding("numpy.amin", _max_like("min")))]
    for name in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", _scan(name))))
    for name in ("zeros", "ones", "empty"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", _filled(name))))
    for name in ("zeros_like", "ones_like", "empty_like"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", _like(name))))
    for name in ("tril", "triu"):
        entries.append((getattr(np, name), Binding(f"numpy.{name}", _triangle(name))))
    functions: list[tuple[object, str, Callable[..., Any]]] = [
        (np.round, "round", _round),
        (np.around, "around", _round),
        (np.clip, "clip", _clip),
        (np.where, "where", _where),
        (np.astype, "astype", _astype),
        (np.copy, "copy", _copy),
        (np.angle, "angle", _angle),
        (np.real, "real", _real),
        (np.imag, "imag", _imag),
        (np.reshape, "reshape", _reshape),
        (np.ravel, "ravel", _ravel),
        (np.transpose, "transpose", _transpose),
        (np.swapaxes, "swapaxes", _swapaxes),
        (np.moveaxis, "moveaxis", _moveaxis),
        (np.matrix_transpose, "matrix_transpose", _matrix_transpose),
        (np.expand_dims, "expand_dims", _expand_dims),
        (np.squeeze, "squeeze", _squeeze),
        (np.broadcast_to, "broadcast_to", _broadcast_to),
        (np.broadcast_arrays, "broadcast_arrays", _broadcast_arrays),
        (np.flip, "flip", _flip),
        (np.fliplr, "fliplr", _fliplr),
        (np.flipud, "flipud", _flipud),
        (np.atleast_1d, "atleast_1d", _atleast_1d),
        (np.atleast_2d, "atleast_2d", _atleast_2d),
        (np.full, "full", _full),
        (np.arange, "arange", _arange),
        (np.linspace, "linspace", _linspace),
        (np.eye, "eye", _eye),
        (np.identity, "identity", _identity),
        (np.full_like, "full_like", _full_like),
        (np.array, "array", _np_array),
        (np.asarray, "asarray", _asarray),
        (np.concatenate, "concatenate", _concatenate),
        (np.stack, "stack", _stack),
        (np.hstack, "hstack", _hstack),
        (np.vstack, "vstack", _vstack),
        (np.dot, "dot", _dot),
        (np.outer, "outer", _outer),
        (np.einsum, "einsum", _einsum),
        (np.tensordot, "tensordot", _tensordot),
        (np.copyto, "copyto", _copyto),
    ]
    entries += [(fn, Binding(f"numpy.{name}", apply)) for fn, name, apply in functions]
    return {id(fn): (fn, binding) for fn, binding in entries}


def _method(name: str, apply: Callable[..., Any]) -> Binding:
    return Binding(f"ndarray.{name}", apply)


def _build_methods() -> dict[str, Binding]:
    table: dict[str, Binding] = {}
    for name in (
        "sum",
        "prod",
        "max",
        "min",
        "argmax",
        "argmin",
        "any",
        "all",
        "mean",
        "var",
        "std",
    ):
        table[name] = _method(name, _REDUCTION_SIGNATURES[name](name))
    for name in ("cumsum", "cumprod"):
        table[name] = _method(name, _scan(name))
    table.update(
        {
            "reshape": _method("reshape", _method_reshape),
            "transpose": _method("transpose", _method_transpose),
            "swapaxes": _method("swapaxes", _swapaxes),
            "squeeze": _method("squeeze", _squeeze),
            "ravel": _method("ravel", _ravel),
            "flatten": _method("flatten", _flatten),
            "astype": _method("astype", _method_astype),
            "copy": _method("copy", _method_copy),
            "clip": _method("clip", _method_clip),
            "round": _method("round", _round),
            "dot": _method("dot", _dot),
            "conj": _method("conj", _ufunc_binding(np.conjugate).apply),
            "conjugate": _method("conjugate", _ufunc_binding(np.conjugate).apply),
            "fill": _method("fill", _fill),
        }
    )
    return table


_ATTRIBUTES: dict[str, Binding] = {
    "T": Binding("ndarray.T", _transpose),
    "mT": Binding("ndarray.mT", _matrix_transpose),
    "real": Binding("ndarray.real", _real),
    "imag": Binding("ndarray.imag", _imag),
}

# NOTE: module-level registries, built once at import; keyed by id() so lookups are by identity.
_FUNCTIONS = _build_functions()
_METHODS = _build_methods()
_OPERATORS = _build_operators()


def lookup_function(fn: object) -> Binding | None:
    """The binding of a NumPy callable (by identity), or None when numpile does not capture it.

    >>> lookup_function(np.sin).name
    'numpy.sin'
    >>> lookup_function(np.float32) is None
    True
    """
    entry = _FUNCTIONS.get(id(fn))
    if entry is None or entry[0] is not fn:
        return None
    return entry[1]


def lookup_method(name: str) -> Binding | None:
    """The binding of an ndarray method called on a traced array (the array comes first).

    >>> lookup_method("sum").name
    'ndarray.sum'
    """
    return _METHODS.get(name)


def lookup_attribute(name: str) -> Binding | None:
    """The binding of an array attribute that produces an array: T, mT, real, imag.

    >>> lookup_attribute("T").name
    'ndarray.T'
    """
    return _ATTRIBUTES.get(name)


def lookup_operator(name: str) -> Binding:
    """The binding of a Python operator on arrays, by dunder name without underscores.

    >>> lookup_operator("iadd").name
    'operator.iadd'
    """
    try:
        return _OPERATORS[name]
    except KeyError:
        raise KeyError(f"no binding for operator {name!r}") from None
