"""Bindings of the extern-op table: one generic binding per row (`ops/extern.py`).

The call is matched against the library function's own signature; the row's array
parameters become node inputs (traced arrays as they are, lists as constant arrays,
scalars and None as constants) and every other argument a static param. A tuple result is
one node holding the tuple and one `result_item` node per item. A data-dependent row gets
its size symbol's name (`nnz`); a generator method gets its generator as input 0. A symbolic
size (`RunTimeSize`) in one of the row's `sizes` params stays symbolic: a `ScalarSlot` over
a trailing input that computes it at run time; anywhere else it is pinned to its int.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..meta import ScalarMeta
from ..op import get_op
from ..ops.extern import ExternRow, ExternState, extern_row, extern_rows
from ..ops.special import SPECIAL_FUNCTIONS
from ._arguments import (
    Binding,
    UnsupportedCall,
    constant_array,
    freeze,
    pinned_sizes,
    slotted_sizes,
    static,
)


def _input(graph: Graph, value: Any) -> Any:
    if isinstance(value, Node):
        return value
    if isinstance(value, list | tuple) and value:
        return constant_array(graph, value)
    if isinstance(value, np.ndarray):
        return constant_array(graph, value)
    return value


def bind_extern(
    row: ExternRow, graph: Graph, args: tuple[Any, ...], kwargs: dict[str, Any], generator: Any
) -> Any:
    """Emit `row`'s node for a call with `args` and `kwargs` (see the module docstring)."""
    signature = row.signature
    bound = signature.bind(*args, **kwargs)  # TypeError as Python raises it
    arguments = dict(bound.arguments)
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(arguments.pop(name, {}))
    inputs: list[Any] = []
    for name in row.arrays:
        default = signature.parameters[name].default
        value = pinned_sizes(
            arguments.pop(name, None if default is inspect.Parameter.empty else default)
        )
        if name == row.variadic:
            if not isinstance(value, list | tuple):
                raise UnsupportedCall(f"numpy.{row.name} with {name} that is not a sequence")
            inputs += [_input(graph, item) for item in value]
        else:
            inputs.append(_input(graph, value))
    if arguments.pop("out", None) is not None:
        raise UnsupportedCall(f"numpy.{row.name} with out= is not supported yet")
    sizes: list[Any] = []
    params = {
        name: freeze(
            static(slotted_sizes(value, sizes) if name in row.sizes else pinned_sizes(value), name)
        )
        for name, value in arguments.items()
    }
    if row.refuse is not None:
        reason = row.refuse(**params)
        if reason:
            raise UnsupportedCall(reason)
    if row.data_dependent:
        params["nnz"] = f"u{len(graph.nodes)}"
    if row.state is ExternState.GENERATOR:
        inputs.insert(0, generator)
    inputs += sizes
    node = graph.call(row.op, *inputs, **params)
    if not (isinstance(node.meta, ScalarMeta) and node.meta.type is tuple):
        return node
    input_metas = [value.meta if isinstance(value, Node) else value for value in inputs]
    metas = row.meta_of_node(*input_metas, **params)
    assert isinstance(metas, tuple)
    item = get_op("result_item")
    return tuple(graph.add_node(item, (node,), {"index": k}, meta) for k, meta in enumerate(metas))


def extern_binding(row: ExternRow) -> Binding:
    """The binding of a library function's row (not a generator method's)."""

    def apply(graph: Graph, *args: Any, **kwargs: Any) -> Any:
        return bind_extern(row, graph, args, kwargs, None)

    return Binding(f"numpy.{row.name}", apply, run_time_sizes=bool(row.sizes))


def generator_binding(generator: Any, name: str) -> Binding | None:
    """The binding of `generator.name(...)`, the generator bound in, or None for a method the
    table has no row for.

    >>> generator_binding(np.random.default_rng(0), "normal").name
    'numpy.random.Generator.normal'
    """
    try:
        row = extern_row(f"random.{name}")
    except KeyError:
        return None

    def apply(graph: Graph, *args: Any, **kwargs: Any) -> Any:
        return bind_extern(row, graph, args, kwargs, generator)

    return Binding(f"numpy.random.Generator.{name}", apply, run_time_sizes=bool(row.sizes))


def extern_functions() -> list[tuple[object, Binding]]:
    """(callable, binding) for every library-function row of the table."""
    return [
        (row.function, extern_binding(row))
        for row in extern_rows()
        if row.state is ExternState.PURE
    ]


def special_binding(fn: object) -> Binding | None:
    """The binding of `scipy.special.erf`, `erfc`, `gamma` or `gammaln` (by identity), once
    the user has imported `scipy.special`; None for anything else.

    >>> special_binding(np.sin) is None
    True
    """
    special = sys.modules.get("scipy.special")
    if special is None:
        return None
    for op_name, (scipy_name, _) in SPECIAL_FUNCTIONS.items():
        if getattr(special, scipy_name, None) is fn:
            return Binding(f"scipy.special.{scipy_name}", _special_apply(op_name))
    return None


def _special_apply(op_name: str) -> Any:
    def apply(graph: Graph, x: Any, /, out: Any = None, **kwargs: Any) -> Node:
        if out is not None or kwargs:
            raise UnsupportedCall(f"scipy.special ufunc {op_name} with out=/where=/dtype=")
        value = x if isinstance(x, Node) else constant_array(graph, x)
        return graph.call(get_op(op_name), value)

    return apply
