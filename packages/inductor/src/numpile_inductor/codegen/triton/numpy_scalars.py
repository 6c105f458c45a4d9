"""NumPy's scalar constructors (`np.int64(i)`, `np.float32(k)`) as Triton expressions.

A `numpy_scalar` node converts a run-time Python scalar, which a Triton program holds as an
int64 (a Python int), a float64 (a Python float) or an int1 (a Python bool), to a NumPy
scalar type. NumPy's constructor is exact where it gives a value and raises otherwise:

- an int out of the target's range raises `OverflowError` (`np.uint8(300)`, `np.int8(-200)`;
  NumPy 2 never wraps a Python int);
- a float to an int truncates toward zero, then raises as an int would (`np.uint8(-3.7)`),
  NaN raises `ValueError` and an infinity `OverflowError`;
- a float to float32 rounds to nearest even and warns (`RuntimeWarning: overflow
  encountered in cast`, or raises under `np.errstate(over="raise")`) where a finite value
  rounds to an infinity;
- an int to float32 rounds twice, through the float64 Python gives (`float(i)`).

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


_FLOAT32 = np.dtype("float32")
_FLOAT64 = np.dtype("float64")
_INT64 = np.dtype("int64")


def numpy_scalar_conversion(
    value: str, python: type, target: np.dtype[Any], *, flag: str
) -> ScalarConversion | None:
    """How a program converts the Python `python` scalar held in `value` (int64, float64
    or bool) to `target` as NumPy's constructor does, `flag` being the name the caller binds
    `fails` to; None where it does not: bool, float16, complex and other targets Triton has
    no type for.

    >>> numpy_scalar_conversion("x", float, np.dtype("int64"), flag="f").value
    'tl.where(f, 0.0, x).to(tl.int64)'
    """
    out = tl_type(target)
    if out is None or target.kind not in "iuf" or (target.kind == "f" and target.itemsize < 4):
        return None
    if python is bool:
        return ScalarConversion(f"{value}.to({out})", None)
    if python is int:
        return _from_int(value, target, out, flag)
    if python is float:
        return _from_float(value, target, out, flag)
    return None


def _from_int(value: str, target: np.dtype[Any], out: str, flag: str) -> ScalarConversion:
    if target == _FLOAT32:
        return ScalarConversion(f"{value}.to(tl.float64).to(tl.float32)", None)
    if target.kind == "f" or target == _INT64:
        return ScalarConversion(f"{value}.to({out})", None)
    info = np.iinfo(target)
    # The program's ints are int64s: only the bounds inside int64's range can fail.
    bounds = [f"({value} < {info.min})"]
    if info.max < np.iinfo(_INT64).max:
        bounds.append(f"({value} > {info.max})")
    return ScalarConversion(f"tl.where({flag}, 0, {value}).to({out})", " | ".join(bounds))


def _from_float(value: str, target: np.dtype[Any], out: str, flag: str) -> ScalarConversion:
    if target == _FLOAT64:
        return ScalarConversion(value, None)
    if target == _FLOAT32:
        # A finite value that rounds to an infinity: NumPy warns (`over` of np.errstate).
        rounded = f"{value}.to(tl.float32)"
        fails = f"(({rounded} - {rounded}) != 0) & (({value} - {value}) == 0)"
        return ScalarConversion(rounded, fails)
    info = np.iinfo(target)
    # Truncation keeps the value in range exactly when min - 1 < v < max + 1. Each bound is
    # a float64 exactly but int64's min - 1 (no float64 lies between it and min), and NaN
    # fails both comparisons. The bounds are float64 constants (a Python float in a Triton
    # expression is a float32).
    low = int(info.min) - 1
    above = f"({value} > {_float64(low)})"
    if float(low) != low:
        above = f"({value} >= {_float64(int(info.min))})"
    below = f"({value} < {_float64(int(info.max) + 1)})"
    fails = f"({above} & {below}) == 0"
    return ScalarConversion(f"tl.where({flag}, 0.0, {value}).to({out})", fails)


def _float64(number: int) -> str:
    return triton_literal(float(number), _FLOAT64, "[]")
