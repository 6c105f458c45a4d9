"""The Python operators of ufunc ops, as NumPy scalars take them.

`np.int64(2**62) * np.int64(4)` is NumPy's scalar math, not the `multiply` ufunc: the same
value and dtype, about 30x faster, and its own warnings: an integer overflow warns
("overflow encountered in scalar multiply", category "over" of `np.errstate`) where the
ufunc wraps silently, and a float's warnings name the scalar op ("scalar multiply").
A graph records the ufunc op either way, so the NumPy runs of a graph (`run_graph`, a
loop body's iterations) apply the operator wherever an operand is a NumPy scalar: eager's
warnings for operators (and for `a.__mul__(b)`, traced as the operator). An explicit ufunc
call on NumPy scalars (`np.multiply(a, b)`) is recorded on a 0-d array copy of its first
NumPy-scalar operand (`operators.ufunc_call_operands`), so every run applies the ufunc,
which wraps integers silently as eager's call does.

    >>> scalar_operator("multiply", (np.int64(3), 2)) is operator.mul
    True
    >>> scalar_operator("multiply", (np.ones(2), np.int64(3))) is None
    True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["SCALAR_OPERATORS", "scalar_operator"]

# NOTE: ufuncs whose Python operator gives the same value and dtype on NumPy scalars.
SCALAR_OPERATORS: dict[str, Callable[..., Any]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "true_divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "left_shift": operator.lshift,
    "right_shift": operator.rshift,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "negative": operator.neg,
    "absolute": abs,
    # float64 scalars' `**` is libm's `pow`, the ufunc's loop SVML's on AVX-512: other bits
    "power": operator.pow,
}
"""The ufunc ops a NumPy scalar's Python operator stands for, by op name."""


def scalar_operator(name: str, args: Sequence[Any]) -> Callable[..., Any] | None:
    """The operator for op `name` on run-time `args` when one is a NumPy scalar and the
    others Python scalars, else None (an array operand makes the operator call the ufunc).

    >>> scalar_operator("negative", (np.int8(-128),)) is operator.neg
    True
    """
    fn = SCALAR_OPERATORS.get(name)
    if fn is None:
        return None
    numpy_scalar = False
    for value in args:
        if isinstance(value, np.generic):
            numpy_scalar = True
        elif not isinstance(value, int | float | complex):
            return None
    return fn if numpy_scalar else None
