"""`math_call` nodes of a loop body as C: glibc's function of the arguments as doubles.

CPython's `math.sqrt(v)` converts `v` to a C double and calls libm's `sqrt` (`math_1` in
Modules/mathmodule.c); the C loop calls the same glibc function on the same double, so
the bits are the same (the build never uses -ffast-math). Where CPython raises it sees
the result: NaN from a non-NaN argument is "math domain error" (`sqrt(-1.0)`, `sin(inf)`,
`log(-1.0)`), an infinity from a finite one a domain or range error (`log(0.0)`,
`exp(1000.0)`). The C loop tests the same and bails there: the loop runs again with
NumPy, whose `math_call` calls `math` itself and raises CPython's error from the user's
line, the arrays restored to their state before the loop. `floor`/`ceil` of a double
whose result leaves int64 (NaN, infinities, huge values: an error or a Python big int)
bail the same way; of a Python int they are the int itself, as CPython gives. Arguments
and results are opaque to GCC (`NP_ROUNDED`), so it folds none of these calls.

    >>> _NODE_HANDLERS["math_call"] is _math_call
    True
"""

from __future__ import annotations

import numpy as np

from numpile_capture import Node
from numpile_capture.ops.math_calls import MATH_FUNCTIONS

from .loop_body import _NODE_HANDLERS, CValue, Env, LoopWriter, NotScalarLoop
from .ops import c_literal

_DOUBLE = np.dtype("float64")
_INT64 = np.dtype("int64")
_BOOL = np.dtype("bool")

# NOTE: the C spelling of a classifier's result (a Python bool).
_CLASSIFIERS = {"isnan": "isnan({})", "isinf": "isinf({})", "isfinite": "isfinite({})"}


def _as_double(writer: LoopWriter, value: CValue) -> str:
    # The C double CPython converts the argument to (PyFloat_AsDouble): exact for float32,
    # rounded to nearest-even for ints past 2**53, as C's conversion rounds them.
    if value.dtype.kind not in "biuf" or (value.dtype.kind == "f" and value.dtype.itemsize < 4):
        raise NotScalarLoop(f"math of a {value.dtype} value")
    if value.dtype.kind == "f" and value.dtype.itemsize > 8:
        raise NotScalarLoop(f"math of a {value.dtype} value")
    return _opaque(writer, f"(double)({value.text})")


def _opaque(writer: LoopWriter, text: str) -> str:
    # A double local GCC knows nothing of (NP_ROUNDED): no libm call of a constant folded
    # with MPFR's rounding, no `copysign(a, -1.0) + b` folded into `b - fabs(a)` (which
    # gives a NaN's other sign).
    name = writer.fresh("m")
    writer.buf.writeline(f"double {name} = {text};")
    writer.buf.writeline(f"NP_ROUNDED({name});")
    return name


def _math_call(writer: LoopWriter, node: Node, env: Env) -> None:
    name = dict(node.params)["function"]
    function = MATH_FUNCTIONS[name]
    values = [writer.operand(env, value) for value in node.inputs]
    if name in ("floor", "ceil") and values[0].python in (bool, int):
        # CPython's floor of an int is the int itself (no double on the way).
        value = values[0]
        text = f"(int64_t)({value.text})"
        env[node] = CValue(writer.define(_INT64, text), _INT64, int, value.bits)
        return
    args = [_as_double(writer, value) for value in values]
    if name in _CLASSIFIERS:
        text = f"(npy_bool)({_CLASSIFIERS[name].format(args[0])} != 0)"
        env[node] = CValue(writer.define(_BOOL, text), _BOOL, bool, 1)
        return
    result = _opaque(writer, f"{name}({', '.join(args)})")
    if function.result is int:
        limit = c_literal(2.0**63, _DOUBLE)
        writer.buf.writeline(f"if (!(fabs({result}) < {limit})) {{ goto bail; }}")
        writer.bails = True
        text = f"(int64_t)({result})"
        env[node] = CValue(writer.define(_INT64, text), _INT64, int, 63)
        return
    if function.raises:
        # CPython's math_1: NaN from a non-NaN argument, or an infinity from a finite one.
        (arg,) = args
        wrong = f"(isnan({result}) && !isnan({arg})) || (isinf({result}) && isfinite({arg}))"
        writer.buf.writeline(f"if ({wrong}) {{ goto bail; }}")
        writer.bails = True
    env[node] = CValue(result, _DOUBLE, float)


_NODE_HANDLERS["math_call"] = _math_call
