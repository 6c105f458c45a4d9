"""Bindings of indexing: basic, integer and boolean `x[key]`, `x[key] = value` and `ufunc.at`."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ArrayMeta, ScalarMeta
from ..op import OpKind
from ..ops.indexing import IndexArray
from ..ops.view import is_element_index, normalize_index
from ._arguments import (
    UnsupportedCall,
    array_input,
    array_meta,
    constant_array,
    contains_node,
    emit,
    operand,
    static,
)

# --- indexing ------------------------------------------------------------------------------


def _run_time_index_array(graph: Graph, items: list[Any] | tuple[Any, ...]) -> Node:
    # `[k, p]` holding ints known only at run time (a loop index, `int(...)` of a traced
    # value): the 1-d intp array NumPy makes of it, one `full` of length 1 per item joined
    # by `concatenate`, so every backend that indexes by an int array runs it unchanged.
    elements: list[Node] = []
    for item in items:
        if isinstance(item, Node):
            if not (isinstance(item.meta, ScalarMeta) and item.meta.type is int):
                raise UnsupportedCall(
                    f"an index list holding a traced {item.meta} value is not supported yet"
                )
        elif isinstance(item, bool | np.bool_) or not isinstance(item, int | np.integer):
            raise UnsupportedCall(
                f"an index list holding a {type(item).__name__} next to run-time ints"
                " is not supported yet"
            )
        elements.append(emit(graph, "full", item, shape=(1,), dtype=np.dtype(np.intp)))
    return emit(graph, "concatenate", *elements, axis=0)


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
        elif isinstance(item, list | tuple) and contains_node(item):
            template.append(IndexArray(len(arrays)))
            arrays.append(_run_time_index_array(graph, item))
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
    masks = [a for a in arrays if array_meta(a).dtype.kind == "b"]
    if not masks:
        return None
    if len(masks) == 1:
        shared = _mask_count(graph, masks[0])
        if shared is not None:
            return shared
    return f"u{len(graph.nodes)}"


def _mask_count(graph: Graph, mask: Node) -> str | None:
    # The size symbol an earlier `x[mask]` (the mask alone) got: the count of its True values
    # is one size, so `z[m] = v[m]`, `x[m] *= 2` or `x[m] * y[m]` broadcast with no check.
    # A mutation since then that may have changed the mask (or what it reads): a fresh one.
    positions = {node: position for position, node in enumerate(graph.nodes)}
    for node in reversed(graph.nodes):
        if node.op is None or node.op.name != "index" or node.kwargs.get("nnz") is None:
            continue
        masks = [v for v in node.inputs[1:] if isinstance(v, Node) and _is_bool(v)]
        recomputed: list[Node] = []
        if len(masks) != 1 or not _same_value(masks[0], mask, recomputed):
            continue
        read = _ancestors([mask, masks[0]])
        # from the earlier index on, or from the earlier copy's first step it recomputes
        start = min([positions[node], *(positions[step] for step in recomputed)])
        if not any(_may_change(later, read) for later in graph.nodes[start:]):
            name: str = node.kwargs["nnz"]
            return name
        return None
    return None


def _ancestors(nodes: list[Node]) -> set[Node]:
    seen: set[Node] = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(value for value in node.inputs if isinstance(value, Node))
    return seen


def _may_change(node: Node, read: set[Node]) -> bool:
    # Whether `node` is a mutation that may write what `read` holds. One into the fresh copy
    # an integer or boolean index made (`x[m] *= 2`), read by neither mask, cannot.
    if node.op is None or not (node.op.kind is OpKind.MUTATION or node.op.mutates):
        return False
    target = node.inputs[0] if node.inputs else None
    while isinstance(target, Node) and target not in read:
        op = target.op
        if op is not None and op.name == "index":
            return False
        if op is None or not (op.kind is OpKind.MUTATION or op.mutates) or not target.inputs:
            return True
        target = target.inputs[0]
    return True


def _is_bool(node: Node) -> bool:
    return isinstance(node.meta, ArrayMeta) and node.meta.dtype.kind == "b"


def _same_value(a: Any, b: Any, recomputed: list[Node]) -> bool:
    # Whether two graph values are the same array: one node, or one pointwise op with the
    # same params on the same values (`row > 0` written twice); `recomputed` collects the
    # earlier copy's nodes that `b` recomputes.
    if a is b:
        return True
    if not (isinstance(a, Node) and isinstance(b, Node)):
        return type(a) is type(b) and isinstance(a, bool | int | float) and a == b
    if a.op is None or a.op is not b.op or a.op.kind is not OpKind.POINTWISE:
        return False
    if a.kwargs != b.kwargs or len(a.inputs) != len(b.inputs):
        return False
    recomputed.append(a)
    return all(_same_value(x, y, recomputed) for x, y in zip(a.inputs, b.inputs, strict=True))


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
