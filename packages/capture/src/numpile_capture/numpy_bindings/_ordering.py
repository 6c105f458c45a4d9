"""Bindings of sorting: sort and argsort."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..graph import Graph, Node
from ..ops._shapes import normalize_axis
from ._arguments import (
    array_input,
    array_meta,
    emit,
    static,
    unsupported_if,
)

# --- sorting -------------------------------------------------------------------------------


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
