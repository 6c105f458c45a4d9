"""Pointwise ops: every NumPy ufunc on numbers (one op per ufunc), and round, clip, where, astype.

Result dtypes come from NumPy itself: a meta rule calls the ufunc on empty
arrays of the input dtypes with weak Python scalars passed as they are (NEP
50), so promotion, casting errors and out-of-bounds Python ints behave
exactly as in NumPy. Shapes broadcast as NumPy broadcasts. Results are fresh
arrays laid out as NumPy lays them out (order='K', `elementwise_strides`: a Fortran-order
input gives a Fortran-order result; `strides=None` where that is C order).

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("add").meta(ArrayMeta((2, 3), "int8"), 1.5))
    'float64[2, 3]'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta
from ..op import Op, OpKind, RaisesWhen, get_op, register_op
from ._probes import (
    dtype_operand,
    is_static_shape,
    probe,
    result_dtype,
    shaped_probe,
    ufunc_result_dtype,
)
from ._shapes import (
    broadcast_shapes,
    canonical_strides,
    elementwise_strides,
    fortran_strides,
    is_c_contiguous,
    is_f_contiguous,
    k_order_strides,
    strides_of,
)

__all__ = ["UFUNC_NAMES", "broadcast_shapes", "dtype_operand", "ufunc_errors", "ufunc_op"]

# NOTE: the numeric ufuncs with one output, as data; ops are registered in this order.
UFUNC_NAMES: tuple[str, ...] = (
    # arithmetic
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod",
    "power", "float_power", "negative", "positive", "absolute", "fabs", "sign",
    "reciprocal", "square", "sqrt", "cbrt", "gcd", "lcm", "heaviside",
    # comparison and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "maximum", "minimum", "fmax", "fmin",
    # bits
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
    "bitwise_count",
    # exponents and logarithms
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    "ldexp",
    # trigonometry and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot",
    "deg2rad", "rad2deg", "degrees", "radians",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    # rounding and floating point
    "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit",
    "copysign", "nextafter", "spacing",
    # complex
    "conjugate",
)  # fmt: skip


# The one ufunc whose error depends on the data: NumPy checks each integer exponent.
INTEGER_POWER_ERROR = "ValueError (an integer to a negative integer power)"


def ufunc_errors(ufunc: np.ufunc) -> dict[str, Any]:
    """The `run_time_error` fields of the op (or in-place op) of `ufunc`."""
    if ufunc is np.power:
        return {"run_time_error": INTEGER_POWER_ERROR, "raises_when": RaisesWhen.INTEGER_RESULT}
    return {}


def _check_integer_power(ufunc: np.ufunc, inputs: tuple[Any, ...], dtype: np.dtype[Any]) -> None:
    # NumPy checks this per element; a constant exponent lets the meta rule see it early.
    if ufunc is not np.power or dtype.kind not in "iu" or len(inputs) != 2:
        return
    exponent = inputs[1]
    if isinstance(exponent, int | np.integer) and not isinstance(exponent, bool) and exponent < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")


def _broadcast_inputs(function: Callable[..., Any], inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    # The broadcast shape of the array inputs; on a clash with static shapes NumPy itself is
    # called on zero-strided probes, so the error message is the one `function` gives.
    shapes = [value.shape for value in inputs if isinstance(value, ArrayMeta)]
    try:
        return broadcast_shapes(*shapes)
    except ValueError:
        if is_static_shape(*inputs):
            with np.errstate(all="ignore"):
                function(*(shaped_probe(v) if isinstance(v, ArrayMeta) else v for v in inputs))
        raise


def _ufunc_meta(ufunc: np.ufunc) -> Callable[..., ArrayMeta]:
    def meta(*inputs: Any) -> ArrayMeta:
        if len(inputs) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__}() takes {ufunc.nin} inputs, got {len(inputs)}")
        dtype = ufunc_result_dtype(ufunc, inputs)
        _check_integer_power(ufunc, inputs, dtype)
        shape = _broadcast_inputs(ufunc, inputs)
        return ArrayMeta(shape, dtype, elementwise_strides(shape, *inputs))

    return meta


def ufunc_op(ufunc: np.ufunc) -> Op:
    """The pointwise op of a NumPy ufunc (registered under the ufunc's name).

    >>> ufunc_op(np.sin).name
    'sin'
    """
    return get_op(ufunc.__name__)


for _name in UFUNC_NAMES:
    _ufunc = getattr(np, _name)
    register_op(
        Op(
            _ufunc.__name__,
            OpKind.POINTWISE,
            _ufunc_meta(_ufunc),
            _ufunc,
            **ufunc_errors(_ufunc),
        )
    )


def _round_meta(x: Any, *, decimals: int = 0) -> ArrayMeta:
    dtype = result_dtype(np.round, probe(x), decimals)
    shape = x.shape if isinstance(x, ArrayMeta) else ()
    return ArrayMeta(shape, dtype, elementwise_strides(shape, x))


def _round_impl(x: Any, *, decimals: int = 0) -> Any:
    return np.round(x, decimals)


round_ = register_op(Op("round", OpKind.POINTWISE, _round_meta, _round_impl))


def _clip_meta(x: Any, low: Any, high: Any) -> ArrayMeta:
    dtype = result_dtype(np.clip, probe(x), probe(low), probe(high))
    shape = _broadcast_inputs(np.clip, (x, low, high))
    return ArrayMeta(shape, dtype, elementwise_strides(shape, x, low, high))


clip = register_op(Op("clip", OpKind.POINTWISE, _clip_meta, np.clip))


def _where_meta(condition: Any, x: Any, y: Any) -> ArrayMeta:
    dtype = result_dtype(np.where, probe(condition), probe(x), probe(y))
    shape = _broadcast_inputs(np.where, (condition, x, y))
    return ArrayMeta(shape, dtype, elementwise_strides(shape, condition, x, y))


where = register_op(Op("where", OpKind.POINTWISE, _where_meta, np.where))


def _astype_meta(x: ArrayMeta, *, dtype: np.dtype[Any], casting: str = "unsafe") -> ArrayMeta:
    result_dtype(lambda a: a.astype(dtype, casting=casting), probe(x))
    strides = None if is_c_contiguous(x) else k_order_strides(x.shape, strides_of(x))
    return ArrayMeta(x.shape, dtype, strides)


def _astype_impl(x: Any, *, dtype: np.dtype[Any], casting: str = "unsafe") -> Any:
    return x.astype(dtype, casting=casting)


astype = register_op(Op("astype", OpKind.POINTWISE, _astype_meta, _astype_impl, method="astype"))


def _copy_meta(x: ArrayMeta, *, order: str = "K") -> ArrayMeta:
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"copy order {order!r} is not supported")
    if order == "A":
        order = "F" if is_f_contiguous(x) and not is_c_contiguous(x) else "C"
    if order == "K" and not is_c_contiguous(x):
        return ArrayMeta(x.shape, x.dtype, k_order_strides(x.shape, strides_of(x)))
    if order == "F" and x.ndim > 1:
        return ArrayMeta(x.shape, x.dtype, canonical_strides(x.shape, fortran_strides(x.shape)))
    return ArrayMeta(x.shape, x.dtype)


def _copy_impl(x: Any, *, order: Any = "K") -> Any:
    return np.copy(x, order=order)  # np.copy dispatches to CuPy for CuPy arrays; np.array not


copy = register_op(Op("copy", OpKind.POINTWISE, _copy_meta, _copy_impl))


def _angle_meta(z: Any, *, deg: bool = False) -> ArrayMeta:
    dtype = result_dtype(np.angle, probe(z), deg)
    return ArrayMeta(z.shape if isinstance(z, ArrayMeta) else (), dtype)


def _angle_impl(z: Any, *, deg: bool = False) -> Any:
    return np.angle(z, deg)


angle = register_op(Op("angle", OpKind.POINTWISE, _angle_meta, _angle_impl))
