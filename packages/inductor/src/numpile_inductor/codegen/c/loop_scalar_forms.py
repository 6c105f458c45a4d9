"""Scalar forms: cheaper C for a NumPy op where a loop body computes one element at a time.

The kernels' C op table (`ops.py`) is written for loops GCC vectorizes. A scalar loop
body (`loop_body.py`: one statement per node, carried values as C locals) computes one
element at a time, on a chain of dependent values, and there two of the table's forms
are slower than a C form with the same results:

- float ordering comparisons (`less`, `less_equal`, ...) compare the bits as integers so
  that they stay quiet (NaN raises no invalid flag) and vectorize; in scalar code C99's
  quiet comparison macros (`__builtin_isless` & co.) are one `ucomisd` and a flag test,
  and they raise no flag on a quiet NaN either. (GCC vectorizes them with signaling
  compares, so the 1-d forms of `loop_vectors` keep the table's.) Their results are
  NumPy's: false where either operand is NaN.
- an integer `multiply` whose operand is 0 or 1 (`(crc & 1) * poly`, `(a > b) * c`) is a
  select, `b ? a : 0`: a conditional move, off the multiplier's latency on a carried
  chain. Exact for every integer: `1 * a` wraps as NumPy's cast to the result type does.

A value is known to be 0 or 1 (`ZERO_ONE`) when it is a bool, a constant 0 or 1, the
result of a comparison or a logical op, or of a `bitwise_and` with one such operand (a
cast, `bitwise_or`, `bitwise_xor` or `multiply` when every operand is one).

    >>> quiet_compare("less_equal", ["x", "y"], [np.dtype("float64")] * 2)
    '__builtin_islessequal(x, y)'
    >>> zero_one_result("bitwise_and", [False, True])
    True
    >>> select_multiply(["t1", "c"], [True, False], np.dtype("uint32"))
    '((t1) ? (uint32_t)(c) : (uint32_t)0)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .ops import c_type

__all__ = ["QUIET_COMPARES", "quiet_compare", "select_multiply", "zero_one_result"]

#: NumPy's float orderings as C99's quiet comparison macros (false on NaN, no flag).
QUIET_COMPARES: dict[str, str] = {
    "less": "__builtin_isless",
    "less_equal": "__builtin_islessequal",
    "greater": "__builtin_isgreater",
    "greater_equal": "__builtin_isgreaterequal",
}

# Ops whose result is 0 or 1 whatever their operands, and ops whose result is 0 or 1 when
# one (`ANY`) or every (`ALL`) operand is.
_ALWAYS = frozenset(
    {"equal", "not_equal", *QUIET_COMPARES, "logical_and", "logical_or", "logical_xor",
     "logical_not", "isnan", "isinf", "isfinite", "signbit"}
)  # fmt: skip
_WHEN_ANY = frozenset({"bitwise_and"})
_WHEN_ALL = frozenset({"bitwise_or", "bitwise_xor", "multiply", "cast"})


def zero_one_result(fn: str, operands: Sequence[bool]) -> bool:
    """Whether `fn`'s result is 0 or 1, given which of its operands are (`operands`).

    >>> zero_one_result("less", [False, False]), zero_one_result("add", [True, True])
    (True, False)
    """
    if fn in _ALWAYS:
        return True
    if fn in _WHEN_ANY:
        return any(operands)
    return fn in _WHEN_ALL and bool(operands) and all(operands)


def quiet_compare(fn: str, args: Sequence[str], dtypes: Sequence[np.dtype[Any]]) -> str | None:
    """The quiet C99 comparison of two float32 / float64 operands, else None.

    >>> quiet_compare("less", ["a", "b"], [np.dtype("int64")] * 2) is None
    True
    """
    macro = QUIET_COMPARES.get(fn)
    if macro is None or len(args) != 2:
        return None
    if any(dtype.name not in ("float32", "float64") for dtype in dtypes):
        return None
    return f"{macro}({args[0]}, {args[1]})"


def select_multiply(
    args: Sequence[str], zero_one: Sequence[bool], out: np.dtype[Any]
) -> str | None:
    """`a * b` as `b ? a : 0` when the result is an integer and an operand is 0 or 1.

    >>> select_multiply(["a", "b"], [False, False], np.dtype("int64")) is None
    True
    """
    if len(args) != 2 or out.kind not in "iu" or not any(zero_one):
        return None
    ct = c_type(out)
    assert ct is not None
    flag, other = (args[0], args[1]) if zero_one[0] else (args[1], args[0])
    return f"(({flag}) ? ({ct})({other}) : ({ct})0)"
