"""`math` module functions of 0-d values inside a compiled function: `math_call` nodes.

`math.sqrt(abs(x[i]))` in a loop body takes a value known only at run time (a NumPy
scalar, a Python int or float the loop computes); capture keeps the call as one
`math_call` node whose result is the Python scalar `math` gives (a float; an int for
`floor`/`ceil`; a bool for `isnan` & co.). Its implementation calls `math` itself, so an
op-by-op run gives CPython's value and raises CPython's errors ("math domain error").
`MATH_FUNCTIONS` is the table of the functions kept so, with their result types and
whether they can raise.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("math_call").meta(ArrayMeta((), "float32"), function="sqrt"))
    'float'
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, register_op

__all__ = ["MATH_FUNCTIONS", "MathFunction", "math_call"]


@attrs.frozen
class MathFunction:
    """One function of the `math` module kept as a graph node: its arity, the Python type
    it returns, and whether some argument makes it raise (`sqrt(-1.0)`, `floor(nan)`).

    >>> MATH_FUNCTIONS["floor"].result
    <class 'int'>
    """

    name: str
    arity: int
    result: type
    raises: bool = True


# NOTE: functions CPython computes as libm's function of the arguments converted to C
# doubles (`math_1`/`math_2` in Modules/mathmodule.c), plus floor/ceil (`floor()` then an
# int) and the classifiers. atan2 and hypot have CPython's own code (m_atan2's special
# cases, vector_norm) and are not kept.
MATH_FUNCTIONS: dict[str, MathFunction] = {
    function.name: function
    for function in (
        MathFunction("sqrt", 1, float),
        MathFunction("exp", 1, float),
        MathFunction("log", 1, float),
        MathFunction("sin", 1, float),
        MathFunction("cos", 1, float),
        MathFunction("tan", 1, float),
        MathFunction("fabs", 1, float, raises=False),
        MathFunction("copysign", 2, float, raises=False),
        MathFunction("floor", 1, int),
        MathFunction("ceil", 1, int),
        MathFunction("isnan", 1, bool, raises=False),
        MathFunction("isinf", 1, bool, raises=False),
        MathFunction("isfinite", 1, bool, raises=False),
    )
}

_PYTHON_SCALARS = (bool, int, float)


def _real_0d(value: Any) -> bool:
    # A 0-d bool, int or float graph value, or such a Python scalar.
    if isinstance(value, ArrayMeta):
        return value.shape == () and value.dtype.kind in "biuf"
    if isinstance(value, ScalarMeta):
        return value.type in _PYTHON_SCALARS
    return type(value) in _PYTHON_SCALARS or (
        isinstance(value, np.generic) and value.dtype.kind in "biuf"
    )


def _math_call_meta(*args: Any, function: str) -> ScalarMeta:
    found = MATH_FUNCTIONS.get(function)
    if found is None:
        raise ValueError(f"math_call has no function {function!r}")
    if len(args) != found.arity or not all(_real_0d(arg) for arg in args):
        raise ValueError(f"math.{function} takes {found.arity} real 0-d values, got {args}")
    return ScalarMeta(found.result)


def _math_call_impl(*args: Any, function: str) -> Any:
    return getattr(math, function)(*args)


def _math_call_may_raise(inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return MATH_FUNCTIONS[kwargs["function"]].raises


math_call = register_op(
    Op(
        "math_call",
        OpKind.EXTERN,
        _math_call_meta,
        _math_call_impl,
        doc="math.<function>(v, ...) of 0-d run-time values (`math.sqrt(x[i])`): a Python scalar",
        run_time_error="ValueError or OverflowError",
        may_raise=_math_call_may_raise,
    )
)
