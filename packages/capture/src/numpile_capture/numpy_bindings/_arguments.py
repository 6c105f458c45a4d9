"""What every binding shares: the exception, the Binding record, and argument normalization.

Traced arrays arrive as `Node`s; Python scalars stay weak constants; Python lists
become constant `array` nodes; anything else a binding cannot capture raises
`UnsupportedCall`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..graph import Graph, Node
from ..meta import ArrayMeta
from ..op import get_op
from ..ops._shapes import normalize_axes
from ..ops.extern import RunTimeSize
from ..ops.loop_values import ScalarSlot


class UnsupportedCall(Exception):  # noqa: N818 - it names the event, like Unsupported
    """A NumPy call with arguments numpile cannot capture yet; the tracer makes it a graph break.

    >>> str(UnsupportedCall("np.sum with out= is not supported yet"))
    'np.sum with out= is not supported yet'
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _reporting_unsupported(apply: Callable[..., Any]) -> Callable[..., Any]:
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return apply(*args, **kwargs)
        except NotImplementedError as exc:
            raise UnsupportedCall(f"not supported yet for these shapes: {exc}") from exc

    # Only the link to `apply`: functools.wraps costs each process's first capture about
    # 0.4 ms over the table's 320 bindings.
    checked.__wrapped__ = apply  # type: ignore[attr-defined]
    return checked


@attrs.frozen
class Binding:
    """How one NumPy callable, method, attribute or operator becomes graph nodes.

    `apply(graph, *args, **kwargs)` receives the user's arguments with arrays
    as `Node`s and returns the result as NumPy would shape it. Shape logic not
    yet written for symbolic sizes (NotImplementedError) surfaces as
    `UnsupportedCall`, so the tracer breaks the graph instead of failing.
    `scalar_operands`: the binding takes Python int and float inputs next to
    arrays as weak scalar graph inputs (`Node`s with a `ScalarMeta`), as
    ufuncs and operators do. `run_time_sizes`: the binding receives symbolic sizes
    unspecialized, as `RunTimeSize`s (it pins, and so guards, those it cannot keep).

        >>> Binding("operator.add", lambda graph, lhs, rhs: None).name
        'operator.add'
    """

    name: str
    apply: Callable[..., Any] = attrs.field(repr=False, converter=_reporting_unsupported)
    scalar_operands: bool = False
    run_time_sizes: bool = False


class NoValue:
    # Stands for "argument not given", as NumPy's own NoValue does.
    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE = NoValue()

# --- argument helpers ----------------------------------------------------------------------


def array_meta(node: Node) -> ArrayMeta:
    if not isinstance(node.meta, ArrayMeta):
        raise UnsupportedCall(f"{node.name} is a traced Python scalar where an array is needed")
    return node.meta


def unsupported_if(condition: bool, what: str) -> None:
    if condition:
        raise UnsupportedCall(f"{what} is not supported yet")


def contains_node(value: Any) -> bool:
    if isinstance(value, Node):
        return True
    if isinstance(value, list | tuple):
        return any(contains_node(item) for item in value)
    return False


def freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def constant_array(graph: Graph, value: Any, dtype: Any = None) -> Node:
    if isinstance(value, np.ndarray):
        raise UnsupportedCall("a constant ndarray inside a compiled region is not supported yet")
    if contains_node(value):
        raise UnsupportedCall("a list mixing traced arrays and constants is not supported yet")
    return graph.call(get_op("array"), value=freeze(value), dtype=dtype)


def operand(graph: Graph, value: Any) -> Any:
    """An op input: nodes and scalars as they are, lists as constant array nodes."""
    if isinstance(value, list | tuple | np.ndarray):
        return constant_array(graph, value)
    return value


def array_input(graph: Graph, value: Any) -> Node:
    """An input that must be an array node: scalars and lists become constant arrays."""
    if isinstance(value, Node):
        array_meta(value)
        return value
    if isinstance(value, bool | int | float | complex | np.generic | list | tuple):
        return constant_array(graph, value)
    raise UnsupportedCall(f"an argument of type {type(value).__name__} is not supported yet")


def pinned_sizes(value: Any) -> Any:
    """Every `RunTimeSize` inside `value` as its int (which guards it)."""
    if isinstance(value, RunTimeSize):
        return int(value.value)
    if isinstance(value, list | tuple):
        return type(value)(pinned_sizes(item) for item in value)
    return value


def slotted_sizes(value: Any, sizes: list[Any]) -> Any:
    """`value` with each `RunTimeSize` as a `ScalarSlot` over the graph value that computes
    it (appended to `sizes`), or as its int where capture cannot compute it at run time."""
    if isinstance(value, list | tuple):
        return type(value)(slotted_sizes(item, sizes) for item in value)
    if not isinstance(value, RunTimeSize):
        return value
    computed = value.node()
    if computed is None:
        return int(value.value)
    if not isinstance(computed, Node):
        return computed
    sizes.append(computed)
    return ScalarSlot(len(sizes) - 1, expr=value.value.expr)


def static(value: Any, what: str) -> Any:
    if contains_node(value):
        raise UnsupportedCall(f"{what} computed from a traced array is not supported yet")
    return value


def dtype_param(dtype: Any) -> np.dtype[Any] | None:
    return None if dtype is None else np.dtype(static(dtype, "dtype"))


def axes_param(axis: Any, ndim: int) -> tuple[int, ...] | None:
    axis = static(axis, "axis")
    return None if axis is None else normalize_axes(axis, ndim)


def emit(graph: Graph, name: str, *inputs: Any, **params: Any) -> Node:
    """Add a node applying the registered op `name` (its meta rule may raise NumPy's errors).

    >>> g = Graph()
    >>> x = g.placeholder("x", ArrayMeta((3,), "int8"))
    >>> emit(g, "negative", x).format()
    'v0 = negative(x)  # int8[3]'
    """
    return graph.call(get_op(name), *inputs, **params)
