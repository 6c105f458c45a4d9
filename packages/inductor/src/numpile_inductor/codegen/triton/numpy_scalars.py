"""NumPy's scalar constructors (`np.int64(i)`, `np.float32(k)`) as Triton expressions.

A `numpy_scalar` node converts a run-time Python scalar, which a Triton program holds as an
int64 (a Python int), a float64 (a Python float) or an int1 (a Python bool), to a NumPy
scalar type. What NumPy checks and how it converts are `codegen/numpy_scalar_rules.py`'s
table, which the C loop bodies print too; this module spells each rule in Triton.

`numpy_scalar_conversion` spells the value for the in-range cases and the condition under
which NumPy raises or warns: the program raises its error flag there, and the loop runs
again with NumPy (`loop_program.py`), which raises or warns from the user's line. The
converted value never reads an out-of-range input (a zero stands in for it, read through
the name the caller binds the condition to): the device gives no undefined value to the
rest of the iteration.

    >>> numpy_scalar_conversion("i", int, np.dtype("uint8"), flag="f")
    ScalarConversion(value='tl.where(f, 0, i).to(tl.uint8)', fails='(i < 0) | (i > 255)')
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..numpy_scalar_rules import Check, int_range_bounds, scalar_rule, truncation_bounds
from .ops import tl_type, triton_literal

__all__ = ["ScalarConversion", "numpy_scalar_conversion"]


@attrs.frozen
class ScalarConversion:
    """`np.<target>(v)` in a Triton program: `value` its expression (it may read the flag
    name the caller bound `fails` to), and `fails` the condition under which NumPy raises
    or warns instead (None where it never does).

    >>> numpy_scalar_conversion("i", int, np.dtype("float64"), flag="f").fails is None
    True
    """

    value: str
    fails: str | None


_FLOAT64 = np.dtype("float64")
_INT64 = np.iinfo(np.int64)


def numpy_scalar_conversion(
    value: str, python: type, target: np.dtype[Any], *, flag: str
) -> ScalarConversion | None:
    """How a program converts the Python `python` scalar held in `value` (int64, float64
    or bool) to `target` as NumPy's constructor does, `flag` being the name the caller binds
    `fails` to; None where it does not: a conversion the rules leave to NumPy, a bool
    target, and targets Triton has no type for.

    >>> numpy_scalar_conversion("x", float, np.dtype("int64"), flag="f").value
    'tl.where(f, 0.0, x).to(tl.int64)'
    """
    rule = scalar_rule(python, target)
    out = tl_type(target)
    # NOTE: a bool result stays NumPy's (the programs compute no bool NumPy scalars).
    if rule is None or out is None or target.kind == "b":
        return None
    if rule.through is not None:
        value = f"{value}.to({tl_type(rule.through)})"
    if rule.check is Check.INT_RANGE:
        return _int_range(value, target, out, flag)
    if rule.check is Check.TRUNCATED_RANGE:
        return _truncated_range(value, target, out, flag)
    if rule.check is Check.FLOAT32_OVERFLOW:
        # A finite value that rounds to an infinity: NumPy warns (`over` of np.errstate).
        rounded = f"{value}.to({out})"
        fails = f"(({rounded} - {rounded}) != 0) & (({value} - {value}) == 0)"
        return ScalarConversion(rounded, fails)
    return ScalarConversion(f"{value}.to({out})", None)


def _int_range(value: str, target: np.dtype[Any], out: str, flag: str) -> ScalarConversion:
    # The program's ints are int64s: only the bounds inside int64's range can fail.
    least, greatest = int_range_bounds(target, int(_INT64.min), int(_INT64.max))
    bounds = [f"({value} < {least})"] if least is not None else []
    bounds += [f"({value} > {greatest})"] if greatest is not None else []
    if not bounds:
        return ScalarConversion(f"{value}.to({out})", None)
    return ScalarConversion(f"tl.where({flag}, 0, {value}).to({out})", " | ".join(bounds))


def _truncated_range(value: str, target: np.dtype[Any], out: str, flag: str) -> ScalarConversion:
    # The bounds are float64 constants (a Python float in a Triton expression is a float32).
    bounds = truncation_bounds(target)
    above = f"({value} {'>=' if bounds.inclusive else '>'} {_float64(bounds.above)})"
    below = f"({value} < {_float64(bounds.below)})"
    fails = f"({above} & {below}) == 0"
    return ScalarConversion(f"tl.where({flag}, 0.0, {value}).to({out})", fails)


def _float64(number: float) -> str:
    return triton_literal(number, _FLOAT64, "[]")
