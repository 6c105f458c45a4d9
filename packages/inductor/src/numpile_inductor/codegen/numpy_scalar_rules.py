"""NumPy 2's scalar constructors on a Python scalar (`np.int8(i)`, `np.float32(x)`), as data.

A `numpy_scalar` node converts a run-time Python scalar (a bool, an int, a float) to a NumPy
scalar type. NumPy's constructor is exact where it gives a value and raises otherwise:

- an int out of the target's range raises `OverflowError` (`np.uint8(300)`, `np.int8(-200)`;
  NumPy 2 never wraps a Python int);
- a float to an int truncates toward zero, then raises as an int would (`np.uint8(-3.7)`),
  NaN raises `ValueError` and an infinity `OverflowError`;
- a float to float32 rounds to nearest even and warns (`RuntimeWarning: overflow
  encountered in cast`, or raises under `np.errstate(over="raise")`) where a finite value
  rounds to an infinity;
- an int to float32 rounds twice, through the float64 Python gives (`float(i)`).

`SCALAR_RULES` holds these rules once, per Python type and target dtype: what NumPy checks
(`Check`) and the dtype the value goes through on its way (`ScalarRule.through`). Each
backend prints them in its language: the C loop bodies (`codegen/c/loop_body.py`) jump to
`bail` where a check fails, the Triton programs (`codegen/triton/numpy_scalars.py`) raise
their error flag; either way the loop runs again with NumPy, which raises or warns from the
user's line. A pair the table lacks (a float to bool, anything to float16 or complex64),
a target a backend has no type for, or a check it has no spelling of stays with NumPy.

    >>> scalar_rule(int, np.dtype("uint8"))
    ScalarRule(check=<Check.INT_RANGE: 'int_range'>, through=None)
    >>> scalar_rule(int, np.dtype("float32")).through
    dtype('float64')
"""

from __future__ import annotations

import enum
from typing import Any

import attrs
import numpy as np

__all__ = [
    "SCALAR_RULES",
    "Check",
    "ScalarRule",
    "TruncationBounds",
    "int_range_bounds",
    "scalar_rule",
    "truncation_bounds",
]


class Check(enum.Enum):
    """What NumPy checks before its constructor gives a value (see the module docstring)."""

    INT_RANGE = "int_range"  # an int outside the target's range: OverflowError
    TRUNCATED_RANGE = "truncated_range"  # a float truncated outside it, NaN, an infinity
    FLOAT32_OVERFLOW = "float32_overflow"  # a finite float that rounds to an infinity


@attrs.frozen
class ScalarRule:
    """How `np.<target>(v)` converts a Python scalar: `check`, what NumPy checks first (None:
    nothing can fail), and `through`, a dtype the value is converted to on the way (None:
    straight to the target).

    >>> scalar_rule(float, np.dtype("float64"))
    ScalarRule(check=None, through=None)
    """

    check: Check | None = None
    through: np.dtype[Any] | None = None


_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_EXACT = ScalarRule()

#: The rules of NumPy's scalar constructors, keyed by (Python type, target dtype name).
SCALAR_RULES: dict[tuple[type, str], ScalarRule] = {
    **{(bool, name): _EXACT for name in ("bool", *_INTS, "float32", "float64", "complex128")},
    (int, "bool"): _EXACT,
    **{(int, name): ScalarRule(Check.INT_RANGE) for name in _INTS},
    (int, "float32"): ScalarRule(through=np.dtype("float64")),
    (int, "float64"): _EXACT,
    (int, "complex128"): _EXACT,
    **{(float, name): ScalarRule(Check.TRUNCATED_RANGE) for name in _INTS},
    (float, "float32"): ScalarRule(Check.FLOAT32_OVERFLOW),
    (float, "float64"): _EXACT,
    (float, "complex128"): _EXACT,
}


def scalar_rule(python: type, target: np.dtype[Any]) -> ScalarRule | None:
    """The rule of `np.<target>(v)` for a Python `python` scalar `v`; None where NumPy's
    constructor is left to NumPy (a pair `SCALAR_RULES` lacks).

    >>> scalar_rule(float, np.dtype("bool")) is None
    True
    """
    return SCALAR_RULES.get((python, target.name))


def int_range_bounds(target: np.dtype[Any], low: int, high: int) -> tuple[int | None, int | None]:
    """The bounds of integer `target` that an int known to lie in [`low`, `high`] may pass:
    its least value where `low` is below it, its greatest where `high` is above it (None
    for a bound it cannot pass, which needs no check).

    >>> int_range_bounds(np.dtype("uint8"), -(2**62), 2**62)
    (0, 255)
    >>> int_range_bounds(np.dtype("int64"), -(2**63), 2**63 - 1)
    (None, None)
    """
    info = np.iinfo(target)
    least, greatest = int(info.min), int(info.max)
    return (least if low < least else None), (greatest if high > greatest else None)


@attrs.frozen
class TruncationBounds:
    """The float64 values `v` whose truncation fits an integer target: `above < v` (or
    `above <= v` where `inclusive`) and `v < below`; NaN fails both comparisons.

    >>> truncation_bounds(np.dtype("uint8"))
    TruncationBounds(above=-1.0, inclusive=False, below=256.0)
    """

    above: float
    inclusive: bool
    below: float


def truncation_bounds(target: np.dtype[Any]) -> TruncationBounds:
    """Where a float's truncation toward zero lies in integer `target`'s range: min - 1 < v <
    max + 1. Each bound is a float64 exactly but int64's min - 1 (no float64 lies between it
    and min: the lower test is then `min <= v`).

    >>> truncation_bounds(np.dtype("int64")).inclusive
    True
    """
    info = np.iinfo(target)
    low = int(info.min) - 1
    below = float(int(info.max) + 1)
    if float(low) != low:
        return TruncationBounds(float(int(info.min)), True, below)
    return TruncationBounds(float(low), False, below)
