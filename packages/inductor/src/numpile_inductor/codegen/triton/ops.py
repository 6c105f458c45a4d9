"""The Triton op table: how each scalar operation of the loop IR is spelled in Triton.

The twin of `codegen/c/ops.py` for the same loop IR. Every entry keeps NumPy 2's
semantics for the loop dtypes it accepts: IEEE division (`tl.div_rn`, not
the approximate `/` of float32 on GPUs), NaN-propagating `maximum`/`minimum`,
Python's sign rules for floor division and remainder (helpers in
`TRITON_HELPERS`), integer wrap-around. Transcendental functions call
CUDA's libdevice, correctly rounded or within a few ulp like glibc; under
Triton's CPU interpreter the generated module binds `libdevice` to NumPy
(`codegen/triton/interpret.py`). Complex numbers and float16 have no entry: a kernel
that needs one makes the graph fall back (see `backend.py`).

    >>> triton_expr("add", ["a", "b"], [np.dtype("float32")] * 2, np.dtype("float32"))
    '(a + b)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..common import FLOAT_SCALAR_MATH, SCALAR_MATH, OpTable, kernel_dtype, register_op_table

_TL_TYPES: dict[str, str] = {
    "bool": "tl.int1",
    "int8": "tl.int8",
    "int16": "tl.int16",
    "int32": "tl.int32",
    "int64": "tl.int64",
    "uint8": "tl.uint8",
    "uint16": "tl.uint16",
    "uint32": "tl.uint32",
    "uint64": "tl.uint64",
    "float32": "tl.float32",
    "float64": "tl.float64",
}

# Integer dtypes of the same width: a float's bits read as an integer (signbit).
_BITS_AS_INT = {"float32": "tl.int32", "float64": "tl.int64"}


def tl_type(dtype: np.dtype[Any]) -> str | None:
    """The Triton type of `dtype`, or None when Triton kernels do not handle it.

    >>> tl_type(np.dtype("float64")), tl_type(np.dtype("complex64"))
    ('tl.float64', None)
    """
    if not kernel_dtype(dtype):
        return None
    return _TL_TYPES.get(dtype.name)


Spell = Callable[[list[str], np.dtype[Any]], str]  # (args, loop dtype) -> expression


def _binop(symbol: str) -> Spell:
    return lambda a, t: f"({a[0]} {symbol} {a[1]})"


def _lib(name: str) -> Spell:
    return lambda a, t: f"libdevice.{name}({', '.join(a)})"


def _helper(name: str) -> Spell:
    return lambda a, t: f"_np_{name}({', '.join(a)})"


def _div(x: str, y: str, dtype: np.dtype[Any]) -> str:
    # float32 `/` is approximate on GPUs (div.full.f32); div_rn is IEEE and float32 only.
    return f"tl.div_rn({x}, {y})" if dtype.name == "float32" else f"({x} / {y})"


def _truth(x: str, dtype: np.dtype[Any]) -> str:
    return x if dtype.kind == "b" else f"({x} != 0)"


_COMPARE: dict[str, Spell] = {
    "equal": _binop("=="),
    "not_equal": _binop("!="),
    "less": _binop("<"),
    "less_equal": _binop("<="),
    "greater": _binop(">"),
    "greater_equal": _binop(">="),
}
_LOGICAL: dict[str, Spell] = {
    "logical_and": lambda a, t: f"({_truth(a[0], t)} & {_truth(a[1], t)})",
    "logical_or": lambda a, t: f"({_truth(a[0], t)} | {_truth(a[1], t)})",
    "logical_xor": lambda a, t: f"({_truth(a[0], t)} ^ {_truth(a[1], t)})",
    "logical_not": lambda a, t: f"({a[0]} == 0)",
}
_ARITH: dict[str, Spell] = {
    "add": _binop("+"),
    "subtract": _binop("-"),
    "multiply": _binop("*"),
}
_FLOAT: dict[str, Spell] = {
    **_ARITH,
    **_COMPARE,
    **_LOGICAL,
    "divide": lambda a, t: _div(a[0], a[1], t),
    "true_divide": lambda a, t: _div(a[0], a[1], t),
    # Triton spells -x as 0 - x, which loses the sign of zero: multiply instead.
    "negative": lambda a, t: f"({a[0]} * -1.0)",
    "positive": lambda a, t: f"({a[0]})",
    "square": lambda a, t: f"({a[0]} * {a[0]})",
    "reciprocal": lambda a, t: _div(f"tl.full({a[0]}.shape, 1, {a[0]}.dtype)", a[0], t),
    "absolute": lambda a, t: f"tl.abs({a[0]})",
    "fabs": lambda a, t: f"tl.abs({a[0]})",
    "sqrt": _lib("sqrt"),
    "cbrt": _lib("cbrt"),
    "exp": _lib("exp"),
    "exp2": _lib("exp2"),
    "expm1": _lib("expm1"),
    "log": _lib("log"),
    "log2": _lib("log2"),
    "log10": _lib("log10"),
    "log1p": _lib("log1p"),
    "sin": _lib("sin"),
    "cos": _lib("cos"),
    "tan": _lib("tan"),
    "arcsin": _lib("asin"),
    "arccos": _lib("acos"),
    "arctan": _lib("atan"),
    "sinh": _lib("sinh"),
    "cosh": _lib("cosh"),
    "tanh": _lib("tanh"),
    "erf": _lib("erf"),
    "erfc": _lib("erfc"),
    "gamma": _lib("tgamma"),
    # scipy.special.gammaln(-inf) is -inf where libdevice's lgamma gives +inf.
    "lgamma": lambda a, t: f"tl.where({a[0]} == -float('inf'), {a[0]}, libdevice.lgamma({a[0]}))",
    "arcsinh": _lib("asinh"),
    "arccosh": _lib("acosh"),
    "arctanh": _lib("atanh"),
    "arctan2": _lib("atan2"),
    "hypot": _lib("hypot"),
    "power": _lib("pow"),
    "floor": _lib("floor"),
    "ceil": _lib("ceil"),
    "trunc": _lib("trunc"),
    "rint": _lib("rint"),
    "fmod": _lib("fmod"),
    "copysign": _lib("copysign"),
    "fmax": lambda a, t: f"tl.where(({a[0]} >= {a[1]}) | ({a[1]} != {a[1]}), {a[0]}, {a[1]})",
    "fmin": lambda a, t: f"tl.where(({a[0]} <= {a[1]}) | ({a[1]} != {a[1]}), {a[0]}, {a[1]})",
    "maximum": lambda a, t: f"tl.where(({a[0]} > {a[1]}) | ({a[0]} != {a[0]}), {a[0]}, {a[1]})",
    "minimum": lambda a, t: f"tl.where(({a[0]} < {a[1]}) | ({a[0]} != {a[0]}), {a[0]}, {a[1]})",
    "floor_divide": _helper("floor_divide_float"),
    "remainder": _helper("remainder_float"),
    "mod": _helper("remainder_float"),
    "sign": _helper("sign_float"),
    "isnan": lambda a, t: f"({a[0]} != {a[0]})",
    "isinf": lambda a, t: f"(tl.abs({a[0]}) == float('inf'))",
    "isfinite": lambda a, t: f"(tl.abs({a[0]}) < float('inf'))",
    "signbit": lambda a, t: f"({a[0]}.to({_BITS_AS_INT[t.name]}, bitcast=True) < 0)",
}
_INT: dict[str, Spell] = {
    **_ARITH,
    **_COMPARE,
    **_LOGICAL,
    "negative": lambda a, t: f"(0 - {a[0]})",
    "positive": lambda a, t: f"({a[0]})",
    "square": lambda a, t: f"({a[0]} * {a[0]})",
    "absolute": lambda a, t: f"tl.where({a[0]} < 0, 0 - {a[0]}, {a[0]})",
    "maximum": lambda a, t: f"tl.maximum({a[0]}, {a[1]})",
    "minimum": lambda a, t: f"tl.minimum({a[0]}, {a[1]})",
    "fmax": lambda a, t: f"tl.maximum({a[0]}, {a[1]})",
    "fmin": lambda a, t: f"tl.minimum({a[0]}, {a[1]})",
    "bitwise_and": _binop("&"),
    "bitwise_or": _binop("|"),
    "bitwise_xor": _binop("^"),
    "invert": lambda a, t: f"(~{a[0]})",
    "bitwise_not": lambda a, t: f"(~{a[0]})",
    "left_shift": lambda a, t: (
        f"tl.where(({a[1]} >= 0) & ({a[1]} < {t.itemsize * 8}), {a[0]} << {a[1]}, 0)"
    ),
    "right_shift": lambda a, t: (
        f"tl.where(({a[1]} >= 0) & ({a[1]} < {t.itemsize * 8}), {a[0]} >> {a[1]}, "
        f"tl.where({a[0]} < 0, -1, 0))"
    ),
    "floor_divide": _helper("floor_divide_int"),
    "remainder": _helper("remainder_int"),
    "mod": _helper("remainder_int"),
    "sign": lambda a, t: (
        f"(({a[0]} > 0).to({_TL_TYPES[t.name]}) - ({a[0]} < 0).to({_TL_TYPES[t.name]}))"
    ),
}
_UNSIGNED_OVERRIDES: dict[str, Spell] = {
    "absolute": lambda a, t: f"({a[0]})",
    "negative": lambda a, t: f"(tl.zeros_like({a[0]}) - {a[0]})",
    "sign": lambda a, t: f"({a[0]} != 0).to({_TL_TYPES[t.name]})",
    "floor_divide": _helper("floor_divide_uint"),
    "remainder": _helper("remainder_uint"),
    "mod": _helper("remainder_uint"),
}
_BOOL: dict[str, Spell] = {
    **_COMPARE,
    "logical_and": _binop("&"),
    "logical_or": _binop("|"),
    "logical_xor": _binop("^"),
    "logical_not": lambda a, t: f"({a[0]} == 0)",
    "add": _binop("|"),
    "multiply": _binop("&"),
    "maximum": _binop("|"),
    "minimum": _binop("&"),
    "fmax": _binop("|"),
    "fmin": _binop("&"),
    "bitwise_and": _binop("&"),
    "bitwise_or": _binop("|"),
    "bitwise_xor": _binop("^"),
    "invert": lambda a, t: f"({a[0]} == 0)",
    "bitwise_not": lambda a, t: f"({a[0]} == 0)",
}
# NumPy's scalar math (codegen.common.SCALAR_MATH) as the ufuncs: Triton kernels report no
# floating-point flags (CuPy gives no warnings to replay), so an overflow wraps silently.
_INT.update({name: _INT[name.removeprefix("scalar_")] for name in SCALAR_MATH})
_FLOAT.update({name: _FLOAT[name.removeprefix("scalar_")] for name in FLOAT_SCALAR_MATH})
_UNSIGNED_OVERRIDES.update(
    {
        name: _UNSIGNED_OVERRIDES[name.removeprefix("scalar_")]
        for name in SCALAR_MATH
        if name.removeprefix("scalar_") in _UNSIGNED_OVERRIDES
    }
)
_TABLES: dict[str, dict[str, Spell]] = {"f": _FLOAT, "i": _INT, "u": _INT, "b": _BOOL}


def triton_expr(
    fn: str, args: Sequence[str], arg_dtypes: Sequence[np.dtype[Any]], out_dtype: np.dtype[Any]
) -> str:
    """The Triton expression applying `fn` to `args` (expressions of `arg_dtypes`).

    >>> triton_expr("cast", ["x"], [np.dtype("float64")], np.dtype("bool"))
    '(x != 0)'
    """
    if fn == "cast":
        if out_dtype.kind == "b":
            return _truth(args[0], arg_dtypes[0])
        return f"{args[0]}.to({_TL_TYPES[out_dtype.name]})"
    if fn == "where":
        return f"tl.where({_truth(args[0], arg_dtypes[0])}, {args[1]}, {args[2]})"
    loop = arg_dtypes[0]
    spell = _TABLES[loop.kind][fn]
    if loop.kind == "u" and fn in _UNSIGNED_OVERRIDES:
        spell = _UNSIGNED_OVERRIDES[fn]
    return spell(list(args), loop)


def triton_literal(value: Any, dtype: np.dtype[Any], shape: str) -> str:
    """A Triton tensor of `shape` (source text) filled with Python number `value` as `dtype`.

    >>> triton_literal(0.5, np.dtype("float32"), "[XBLOCK]")
    'tl.full([XBLOCK], 0.5, tl.float32)'
    """
    ty = _TL_TYPES[dtype.name]
    if dtype.kind == "f":
        number = float(dtype.type(value))
        text = repr(number) if number == number and abs(number) != float("inf") else None
        if text is None:
            text = f"float('{number}')"
    elif dtype.kind == "b":
        text = "1" if value else "0"
    else:
        text = str(int(np.array(value).astype(dtype)))
    return f"tl.full({shape}, {text}, {ty})"


def reduction_identity(reduction_type: str, dtype: np.dtype[Any]) -> Any:
    """The Python value a masked-off element contributes to a reduction.

    >>> reduction_identity("max", np.dtype("float32"))
    -inf
    """
    if reduction_type == "sum" and dtype.kind == "f":
        return -0.0  # -0.0 + x is x for every x, -0.0 too (NumPy's sum of -0.0s is -0.0)
    if reduction_type in ("sum", "any"):
        return 0
    if reduction_type in ("prod", "all"):
        return 1
    high = reduction_type == "min"
    if dtype.kind == "f":
        return float("inf") if high else float("-inf")
    if dtype.kind == "b":
        return 1 if high else 0
    info = np.iinfo(dtype)
    return int(info.max if high else info.min)


# NOTE: jitted helpers every generated module starts with; NumPy's rules for floor
# division, remainder and sign, written with tl.where so masked lanes never trap.
TRITON_HELPERS = """
@triton.jit
def _np_div(a, b):
    if a.dtype == tl.float32:
        return tl.div_rn(a, b)
    else:
        return a / b


@triton.jit
def _np_floor_divide_float(a, b):
    mod = libdevice.fmod(a, b)
    div = _np_div(a - mod, b)
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floordiv = libdevice.floor(div)
    floordiv = tl.where(div - floordiv > 0.5, floordiv + 1, floordiv)
    zero = libdevice.copysign(tl.zeros_like(div), _np_div(a, b))
    result = tl.where(div != 0, floordiv, zero)
    return tl.where(b == 0, _np_div(a, b), result)


@triton.jit
def _np_remainder_float(a, b):
    mod = libdevice.fmod(a, b)
    fixed = tl.where((b < 0) != (mod < 0), mod + b, mod)
    result = tl.where(mod != 0, fixed, libdevice.copysign(tl.zeros_like(mod), b))
    return tl.where(b == 0, mod, result)


@triton.jit
def _np_sign_float(a):
    one = tl.full(a.shape, 1, a.dtype)
    zero = tl.zeros_like(a)
    return tl.where(a > 0, one, tl.where(a < 0, zero - one, tl.where(a == 0, zero, a)))


@triton.jit
def _np_floor_divide_int(a, b):
    trivial = (b == 0) | (b == -1)
    safe = tl.where(trivial, tl.full(b.shape, 1, b.dtype), b)
    q = a // safe
    r = a % safe
    q = tl.where((r != 0) & ((r < 0) != (safe < 0)), q - 1, q)
    q = tl.where(b == -1, tl.zeros_like(a) - a, q)
    return tl.where(b == 0, tl.zeros_like(q), q)


@triton.jit
def _np_remainder_int(a, b):
    trivial = (b == 0) | (b == -1)
    safe = tl.where(trivial, tl.full(b.shape, 1, b.dtype), b)
    r = a % safe
    r = tl.where((r != 0) & ((r < 0) != (safe < 0)), r + safe, r)
    return tl.where(trivial, tl.zeros_like(r), r)


@triton.jit
def _np_floor_divide_uint(a, b):
    safe = tl.where(b == 0, tl.full(b.shape, 1, b.dtype), b)
    return tl.where(b == 0, tl.zeros_like(a), a // safe)


@triton.jit
def _np_remainder_uint(a, b):
    safe = tl.where(b == 0, tl.full(b.shape, 1, b.dtype), b)
    return tl.where(b == 0, tl.zeros_like(a), a % safe)


@triton.jit
def _np_max_combine(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _np_min_combine(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _np_prod_combine(a, b):
    return a * b
"""


OP_TABLE = register_op_table(OpTable("triton", frozenset(_TL_TYPES), _TABLES))
