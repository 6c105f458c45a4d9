"""Bindings of indexing: basic, integer and boolean `x[key]`, `x[key] = value` and `ufunc.at`."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ArrayMeta, ScalarMeta
from ..ops.indexing import IndexArray
from ..ops.view import is_element_index, normalize_index
from ._arguments import (
    UnsupportedCall,
    array_input,
    array_meta,
    constant_array,
    emit,
    operand,
    static,
)

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
            arrays.append(constant_array(graph, item, dtype))
        elif isinstance(item, bool | np.bool_):
            raise UnsupportedCall("indexing with a Python bool is not supported yet")
        elif isinstance(item, slice):
            bounds = tuple(
                None if p is None else operator.index(static(p, "a slice bound"))
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
            meta = array_meta(arrays[item.position])
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
    if any(array_meta(a).dtype.kind == "b" for a in arrays):
        return f"u{len(graph.nodes)}"
    return None


def bind_getitem(graph: Graph, x: Any, key: Any) -> Node:
    node = array_input(graph, x)
    meta = array_meta(node)
    template, arrays = _index_items(graph, key)
    if not arrays:
        index = normalize_index(template, meta.shape)
        name = "element" if is_element_index(index, meta.ndim) else "getitem"
        return emit(graph, name, node, index=index)
    template = _expand_ellipsis(template, arrays, meta.ndim)
    nnz = _nnz_name(graph, arrays)
    params: dict[str, Any] = {"index": template}
    if nnz is not None:
        params["nnz"] = nnz
    return emit(graph, "index", node, *arrays, **params)


def bind_setitem(graph: Graph, x: Any, key: Any, value: Any) -> Node:
    if not isinstance(x, Node):
        raise UnsupportedCall("assigning into a value that is not a traced array")
    meta = array_meta(x)
    template, arrays = _index_items(graph, key)
    assigned = operand(graph, value)
    if not arrays:
        index = normalize_index(template, meta.shape)
        return emit(graph, "setitem", x, assigned, index=index)
    template = _expand_ellipsis(template, arrays, meta.ndim)
    nnz = _nnz_name(graph, arrays)
    params: dict[str, Any] = {"index": template}
    if nnz is not None:
        params["nnz"] = nnz
    return emit(graph, "index_put", x, assigned, *arrays, **params)


def bind_ufunc_at(ufunc_name: str) -> Any:
    """The binding of `np.<ufunc>.at(a, indices, b)`: one `ufunc_at` mutation node."""

    def apply(graph: Graph, a: Any, indices: Any, b: Any = None, /) -> None:
        if not isinstance(a, Node) or not isinstance(a.meta, ArrayMeta):
            raise UnsupportedCall(f"np.{ufunc_name}.at into a value that is not a traced array")
        if b is None:
            raise UnsupportedCall(f"np.{ufunc_name}.at without a second operand")
        template, arrays = _index_items(graph, indices)
        template = _expand_ellipsis(template, arrays, a.meta.ndim)
        params: dict[str, Any] = {"ufunc": ufunc_name, "index": template}
        nnz = _nnz_name(graph, arrays)
        if nnz is not None:
            params["nnz"] = nnz
        emit(graph, "ufunc_at", a, operand(graph, b), *arrays, **params)

    return apply
