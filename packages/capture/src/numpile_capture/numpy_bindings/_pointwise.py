"""Bindings of pointwise calls: ufuncs, round/clip/where/astype/copy, and the Python
operators on arrays.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..graph import Graph, Node, gives_scalar
from ..meta import ArrayMeta, ScalarMeta
from ._arguments import (
    NO_VALUE,
    Binding,
    UnsupportedCall,
    array_input,
    array_meta,
    emit,
    operand,
    static,
    unsupported_if,
)
from ._outputs import out_target, write_ufunc_out

# --- ufuncs --------------------------------------------------------------------------------


def ufunc_binding(ufunc: np.ufunc) -> Binding:
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
        if len(args) > ufunc.nin:
            if out is not None:
                raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            out = args[ufunc.nin :]
            args = args[: ufunc.nin]
        unsupported_if(ufunc.nout != 1 and out is not None, f"np.{name} with out=")
        unsupported_if(where is not True, f"np.{name} with where=")
        unsupported_if(dtype is not None or signature is not None, f"np.{name} with dtype=")
        unsupported_if(casting != "same_kind" or order != "K", f"np.{name} with casting/order")
        inputs = [operand(graph, arg) for arg in args]
        if ufunc is np.divmod:
            return (emit(graph, "floor_divide", *inputs), emit(graph, "remainder", *inputs))
        if ufunc is np.matmul:
            unsupported_if(out is not None, "np.matmul with out=")
            return emit(graph, "matmul", *(array_input(graph, a) for a in inputs))
        target = out_target(out)
        result = emit(graph, name, *inputs)
        if target is None:
            return result
        return write_ufunc_out(graph, ufunc, inputs, result, target, casting)

    return Binding(f"numpy.{name}", apply, scalar_operands=ufunc is not np.matmul)


# --- pointwise non-ufuncs ------------------------------------------------------------------


def bind_round(graph: Graph, a: Any, decimals: Any = 0, out: Any = None) -> Node:
    unsupported_if(out is not None, "np.round with out=")
    params = {} if decimals == 0 else {"decimals": operator.index(static(decimals, "decimals"))}
    return emit(graph, "round", array_input(graph, a), **params)


def bind_clip(
    graph: Graph,
    a: Any,
    a_min: Any = NO_VALUE,
    a_max: Any = NO_VALUE,
    out: Any = None,
    *,
    min: Any = NO_VALUE,
    max: Any = NO_VALUE,
    **kwargs: Any,
) -> Node:
    unsupported_if(out is not None or bool(kwargs), "np.clip with out= or ufunc keywords")
    if a_min is not NO_VALUE and a_max is NO_VALUE and max is NO_VALUE:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    if a_min is not NO_VALUE and min is not NO_VALUE:
        raise TypeError("Passed more than one argument for min: a_min and min")
    if a_max is not NO_VALUE and max is not NO_VALUE:
        raise TypeError("Passed more than one argument for max: a_max and max")
    low = a_min if a_min is not NO_VALUE else (None if min is NO_VALUE else min)
    high = a_max if a_max is not NO_VALUE else (None if max is NO_VALUE else max)
    x = array_input(graph, a)
    low, high = _clip_bounds(array_meta(x).dtype, low, high)
    return emit(graph, "clip", x, operand(graph, low), operand(graph, high))


def _clip_bounds(dtype: np.dtype[Any], low: Any, high: Any) -> tuple[Any, Any]:
    # np.clip ignores a Python int bound past an integer dtype's range on its own side (a
    # lower bound under the minimum, an upper bound over the maximum, of any size): the op
    # gets None there, so no backend converts the out-of-range int.
    if dtype.kind not in "iu":
        return low, high
    info = np.iinfo(dtype)
    if type(low) is int and low < info.min:
        low = None
    if type(high) is int and high > info.max:
        high = None
    return low, high


def bind_method_clip(
    graph: Graph, x: Node, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any
) -> Node:
    return bind_clip(graph, x, min, max, out, **kwargs)


def bind_where(graph: Graph, condition: Any, x: Any = NO_VALUE, y: Any = NO_VALUE) -> Node:
    if x is NO_VALUE and y is NO_VALUE:
        raise UnsupportedCall("np.where with one argument (a data-dependent shape)")
    if x is NO_VALUE or y is NO_VALUE:
        raise ValueError("either both or neither of x and y should be given")
    inputs = (operand(graph, condition), operand(graph, x), operand(graph, y))
    return emit(graph, "where", *inputs)


def emit_astype(graph: Graph, x: Node, dtype: Any, casting: str, copy: Any) -> Node:
    target = np.dtype(static(dtype, "dtype"))
    if not copy and array_meta(x).dtype == target:
        return x
    params: dict[str, Any] = {"dtype": target}
    if casting != "unsafe":
        params["casting"] = casting
    return emit(graph, "astype", x, **params)


def bind_astype(
    graph: Graph, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None
) -> Node:
    return emit_astype(graph, array_input(graph, x), dtype, "unsafe", copy)


def bind_method_astype(
    graph: Graph,
    x: Node,
    dtype: Any,
    order: str = "K",
    casting: str = "unsafe",
    subok: bool = True,
    copy: bool = True,
) -> Node:
    unsupported_if(order != "K", "astype with order other than 'K'")
    return emit_astype(graph, x, dtype, casting, copy)


def bind_copy(graph: Graph, a: Any, order: str = "K", subok: bool = False) -> Node:
    unsupported_if(order not in ("C", "K"), f"copy with order={order!r}")
    return emit(graph, "copy", array_input(graph, a), order=order)


def bind_method_copy(graph: Graph, x: Node, order: str = "C") -> Node:
    return bind_copy(graph, x, order)


def bind_angle(graph: Graph, z: Any, deg: bool = False) -> Node:
    params = {"deg": True} if deg else {}
    return emit(graph, "angle", array_input(graph, z), **params)


def bind_fill(graph: Graph, x: Node, value: Any) -> None:
    emit(graph, "fill", x, operand(graph, value))


def bind_copyto(
    graph: Graph, dst: Any, src: Any, casting: str = "same_kind", where: Any = True
) -> None:
    unsupported_if(where is not True, "np.copyto with where=")
    if not isinstance(dst, Node):
        raise UnsupportedCall("np.copyto into a value that is not a traced array")
    emit(graph, "copyto", dst, operand(graph, src), casting=casting)


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
        fast = _fast_power(lhs, rhs) if ufunc_name == "power" else None
        if fast is not None:
            return emit(graph, fast, lhs)
        return emit(graph, ufunc_name, operand(graph, lhs), operand(graph, rhs))

    return apply


def _fast_power(base: Any, exponent: Any) -> str | None:
    # NumPy's `array ** k` computes a Python int k of 2 with square (a bool array gives int8)
    # and, on float and complex arrays, -1 with reciprocal and a Python float 0.5 with sqrt:
    # the same values as power, but their dtypes and warnings. A bool, float or complex
    # NumPy scalar (`x[i] ** 2`) is NumPy's scalar math instead: libm's `pow` (`pow(x, 2.0)`
    # is not always `x * x`), an int64 for a bool; integer scalars square alike.
    if not isinstance(base, Node) or not isinstance(base.meta, ArrayMeta):
        return None
    kind = base.meta.dtype.kind
    if base.meta.shape == () and gives_scalar(base) and kind in "bfc":
        return None
    if type(exponent) is int and exponent == 2 and kind in "biufc":
        return "square"
    if kind in "fc" and type(exponent) is int and exponent == -1:
        return "reciprocal"
    if kind in "fc" and type(exponent) is float and exponent == 0.5:
        return "sqrt"
    return None


def _unary_operator(ufunc_name: str) -> Callable[..., Any]:
    def apply(graph: Graph, operand: Any) -> Node:
        return emit(graph, ufunc_name, array_input(graph, operand))

    return apply


def _matmul_operator(graph: Graph, lhs: Any, rhs: Any) -> Node:
    return emit(graph, "matmul", array_input(graph, lhs), array_input(graph, rhs))


def _inplace_operator(ufunc_name: str) -> Callable[..., Any]:
    def apply(graph: Graph, target: Any, value: Any) -> Node:
        if (
            not isinstance(target, Node)
            or isinstance(target.meta, ScalarMeta)
            or (target.meta.shape == () and gives_scalar(target))
        ):
            # Python falls back to the binary operator when the target is not an array
            # (a NumPy scalar is immutable: `s += v` makes a new one, of NumPy's result dtype).
            return emit(graph, ufunc_name, operand(graph, target), operand(graph, value))
        if ufunc_name == "matmul":
            return emit(graph, "matmul_", target, array_input(graph, value))
        return emit(graph, f"{ufunc_name}_", target, operand(graph, value))

    return apply


def build_operators() -> dict[str, Binding]:
    table: dict[str, Binding] = {}
    for name, ufunc_name in _BINARY_OPERATORS.items():
        table[name] = Binding(
            f"operator.{name}", _binary_operator(ufunc_name), scalar_operands=True
        )
    for name, ufunc_name in _UNARY_OPERATORS.items():
        table[name] = Binding(f"operator.{name}", _unary_operator(ufunc_name))
    table["matmul"] = Binding("operator.matmul", _matmul_operator)
    for name, ufunc_name in [*_BINARY_OPERATORS.items(), ("matmul", "matmul")]:
        if ufunc_name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            continue
        table[f"i{name}"] = Binding(
            f"operator.i{name}",
            _inplace_operator(ufunc_name),
            scalar_operands=ufunc_name != "matmul",
        )
    return table
