"""The C op table: how each scalar operation of the loop IR is spelled in C.

Every entry follows NumPy 2 exactly for the loop dtypes it accepts (integer
wrap-around comes from `-fwrapv`; floor division and remainder follow Python's
sign rules; `maximum`/`minimum` propagate NaN). An operation or dtype that is
not in the table makes the lowering fall back to an extern NumPy call.

    >>> c_expr("add", ["a", "b"], [np.dtype("float64")] * 2, np.dtype("float64"))
    '(a + b)'
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..common import OpTable, category, kernel_dtype, register_op_table
from .numpy_trig import NP_SINCOS_F32, sincos_f32_call

_C_TYPES: dict[str, str] = {
    "bool": "npy_bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float32": "float",
    "float64": "double",
    "complex64": "float _Complex",
    "complex128": "double _Complex",
}


def c_type(dtype: np.dtype[Any]) -> str | None:
    """The C type of `dtype`, or None when kernels do not handle it.

    >>> c_type(np.dtype("float32"))
    'float'
    """
    if not kernel_dtype(dtype):
        return None
    return _C_TYPES.get(dtype.name)


Spell = Callable[[list[str], str, str], str]  # (args, suffix of the loop type, C type)

_F = "f"  # float32 math functions end in f


def _binop(symbol: str) -> Spell:
    return lambda a, suffix, ct: f"({a[0]} {symbol} {a[1]})"


def _call(name: str) -> Spell:
    return lambda a, suffix, ct: f"{name}{suffix}({', '.join(a)})"


def _sincos(name: str) -> Spell:
    # float32 as NumPy's SIMD loop computes it (codegen/c/numpy_trig.py), not libm's sinf.
    return lambda a, suffix, ct: sincos_f32_call(name, a[0]) if suffix == _F else f"{name}({a[0]})"


def _complex_call(name: str) -> Spell:
    # libm's complex functions end in f for float _Complex (the loop dtype's suffix is "").
    return lambda a, suffix, ct: f"{name}{'f' if ct.startswith('float') else ''}({a[0]})"


def _helper(name: str) -> Spell:
    return lambda a, suffix, ct: f"_np_{name}_{ct.replace(' ', '_')}({', '.join(a)})"


_ARITH = {
    "add": _binop("+"),
    "subtract": _binop("-"),
    "multiply": _binop("*"),
}
_COMPARE = {
    "equal": _binop("=="),
    "not_equal": _binop("!="),
    "less": _binop("<"),
    "less_equal": _binop("<="),
    "greater": _binop(">"),
    "greater_equal": _binop(">="),
}
_LOGICAL = {
    "logical_and": lambda a, s, t: f"({a[0]} && {a[1]})",
    "logical_or": lambda a, s, t: f"({a[0]} || {a[1]})",
    "logical_xor": lambda a, s, t: f"((!{a[0]}) != (!{a[1]}))",
    "logical_not": lambda a, s, t: f"(!{a[0]})",
}
_FLOAT: dict[str, Spell] = {
    **_ARITH,
    **_COMPARE,
    **_LOGICAL,
    "divide": _binop("/"),
    "true_divide": _binop("/"),
    "negative": lambda a, s, t: f"(-{a[0]})",
    "positive": lambda a, s, t: f"(+{a[0]})",
    "square": lambda a, s, t: f"({a[0]} * {a[0]})",
    "reciprocal": lambda a, s, t: f"(({t})1 / {a[0]})",
    "absolute": _call("fabs"),
    "fabs": _call("fabs"),
    "sqrt": _call("sqrt"),
    "cbrt": _call("cbrt"),
    # SciPy computes its float32 loops in double: so do these, for the same roundings.
    "erf": lambda a, s, t: f"(({t})erf((double){a[0]}))",
    "erfc": lambda a, s, t: f"(({t})erfc((double){a[0]}))",
    "gamma": lambda a, s, t: f"(({t})tgamma((double){a[0]}))",
    # scipy.special.gammaln(-inf) is -inf where libm's lgamma gives +inf.
    "lgamma": lambda a, s, t: (
        f"(({t})(isinf({a[0]}) && {a[0]} < 0 ? -INFINITY : lgamma((double){a[0]})))"
    ),
    "exp": _call("exp"),
    "exp2": _call("exp2"),
    "expm1": _call("expm1"),
    "log": _call("log"),
    "log2": _call("log2"),
    "log10": _call("log10"),
    "log1p": _call("log1p"),
    "sin": _sincos("sin"),
    "cos": _sincos("cos"),
    "tan": _call("tan"),
    "arcsin": _call("asin"),
    "arccos": _call("acos"),
    "arctan": _call("atan"),
    "sinh": _call("sinh"),
    "cosh": _call("cosh"),
    "tanh": _call("tanh"),
    "arcsinh": _call("asinh"),
    "arccosh": _call("acosh"),
    "arctanh": _call("atanh"),
    "arctan2": _call("atan2"),
    "hypot": _call("hypot"),
    "power": _call("pow"),
    "scalar_power": _helper("scalar_power"),
    "floor": _call("floor"),
    "ceil": _call("ceil"),
    "trunc": _call("trunc"),
    "rint": _call("rint"),
    "fmod": _call("fmod"),
    "copysign": _call("copysign"),
    "fmax": _call("fmax"),
    "fmin": _call("fmin"),
    "less": _helper("less"),
    "less_equal": _helper("less_equal"),
    "greater": _helper("greater"),
    "greater_equal": _helper("greater_equal"),
    "maximum": _helper("maximum"),
    "minimum": _helper("minimum"),
    "floor_divide": _helper("floor_divide"),
    "remainder": _helper("remainder"),
    "mod": _helper("remainder"),
    "sign": _helper("sign"),
    "isnan": lambda a, s, t: f"({a[0]} != {a[0]})",
    "isinf": lambda a, s, t: f"(isinf({a[0]}) != 0)",
    "isfinite": lambda a, s, t: f"(isfinite({a[0]}) != 0)",
    "signbit": lambda a, s, t: f"(signbit({a[0]}) != 0)",
}
_INT: dict[str, Spell] = {
    **_ARITH,
    **_COMPARE,
    **_LOGICAL,
    "negative": lambda a, s, t: f"(({t})-{a[0]})",
    "positive": lambda a, s, t: f"({a[0]})",
    "square": lambda a, s, t: f"(({t})({a[0]} * {a[0]}))",
    "absolute": lambda a, s, t: f"(({t})({a[0]} < 0 ? -{a[0]} : {a[0]}))",
    "maximum": lambda a, s, t: f"({a[0]} >= {a[1]} ? {a[0]} : {a[1]})",
    "minimum": lambda a, s, t: f"({a[0]} <= {a[1]} ? {a[0]} : {a[1]})",
    "fmax": lambda a, s, t: f"({a[0]} >= {a[1]} ? {a[0]} : {a[1]})",
    "fmin": lambda a, s, t: f"({a[0]} <= {a[1]} ? {a[0]} : {a[1]})",
    "bitwise_and": _binop("&"),
    "bitwise_or": _binop("|"),
    "bitwise_xor": _binop("^"),
    "invert": lambda a, s, t: f"(({t})~{a[0]})",
    "bitwise_not": lambda a, s, t: f"(({t})~{a[0]})",
    "left_shift": lambda a, s, t: (
        f"(((uint64_t)({a[1]}) < sizeof({t}) * 8) ? ({t})({a[0]} << {a[1]}) : ({t})0)"
    ),
    "right_shift": lambda a, s, t: (
        f"(((uint64_t)({a[1]}) < sizeof({t}) * 8) ? ({t})({a[0]} >> {a[1]}) "
        f": ({a[0]} < 0 ? ({t})-1 : ({t})0))"
    ),
    "floor_divide": _helper("floor_divide"),
    "remainder": _helper("remainder"),
    "mod": _helper("remainder"),
    "sign": lambda a, s, t: f"(({t})(({a[0]} > 0) - ({a[0]} < 0)))",
    "scalar_add": _helper("scalar_add"),
    "scalar_subtract": _helper("scalar_subtract"),
    "scalar_multiply": _helper("scalar_multiply"),
    "scalar_negative": _helper("scalar_negative"),
    "scalar_absolute": _helper("scalar_absolute"),
}
_BOOL: dict[str, Spell] = {
    **_COMPARE,
    **_LOGICAL,
    "add": _LOGICAL["logical_or"],
    "multiply": _LOGICAL["logical_and"],
    "maximum": _LOGICAL["logical_or"],
    "minimum": _LOGICAL["logical_and"],
    "fmax": _LOGICAL["logical_or"],
    "fmin": _LOGICAL["logical_and"],
    "bitwise_and": _LOGICAL["logical_and"],
    "bitwise_or": _LOGICAL["logical_or"],
    "bitwise_xor": _LOGICAL["logical_xor"],
    "invert": _LOGICAL["logical_not"],
    "bitwise_not": _LOGICAL["logical_not"],
}
_COMPLEX: dict[str, Spell] = {
    "add": _binop("+"),
    "subtract": _binop("-"),
    "multiply": _helper("cmul"),
    "scalar_multiply": _helper("scalar_cmul"),
    "divide": _helper("cdiv"),
    "true_divide": _helper("cdiv"),
    "negative": lambda a, s, t: f"(-{a[0]})",
    "positive": lambda a, s, t: f"({a[0]})",
    "conjugate": _call("conj"),
    "conj": _call("conj"),
    "equal": _binop("=="),
    "not_equal": _binop("!="),
    "scalar_absolute": _helper("scalar_cabs"),
    "exp": _complex_call("cexp"),
    "log": _complex_call("clog"),
    "sqrt": _complex_call("csqrt"),
}
_TABLES: dict[str, dict[str, Spell]] = {
    "f": _FLOAT,
    "i": _INT,
    "u": _INT,
    "b": _BOOL,
    "c": _COMPLEX,
}
# Unsigned absolute value and sign are the identity / (x != 0).
_UNSIGNED_OVERRIDES: dict[str, Spell] = {
    "absolute": lambda a, s, t: f"({a[0]})",
    "scalar_absolute": lambda a, s, t: f"({a[0]})",
    "sign": lambda a, s, t: f"(({t})({a[0]} != 0))",
}


def c_expr(
    fn: str, args: Sequence[str], arg_dtypes: Sequence[np.dtype[Any]], out_dtype: np.dtype[Any]
) -> str:
    """The C expression applying `fn` to `args` (C expressions of `arg_dtypes`).

    >>> c_expr("cast", ["x"], [np.dtype("float64")], np.dtype("bool"))
    '((npy_bool)((x) != 0))'
    """
    out_ct = c_type(out_dtype)
    assert out_ct is not None
    if fn == "cast":
        if out_dtype.kind == "b":
            return f"(({out_ct})(({args[0]}) != 0))"
        return f"(({out_ct})({args[0]}))"
    if fn == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    loop = arg_dtypes[0]
    loop_ct = c_type(loop)
    assert loop_ct is not None
    suffix = _F if loop.name == "float32" else ""
    table = _TABLES[category(loop)]
    spell = table[fn]
    if loop.kind == "u" and fn in _UNSIGNED_OVERRIDES:
        spell = _UNSIGNED_OVERRIDES[fn]
    return spell(list(args), suffix, loop_ct)


def c_literal(value: Any, dtype: np.dtype[Any]) -> str:
    """A C literal for Python number `value` as a `dtype` value.

    >>> c_literal(0.5, np.dtype("float32"))
    '((float)0.5)'
    """
    ct = c_type(dtype)
    if dtype.kind == "c":
        z = complex(value)
        return f"(({ct})CMPLX({_float_text(z.real)}, {_float_text(z.imag)}))"
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            narrowed = float(dtype.type(value))
        if math.isinf(narrowed) and math.isfinite(float(value)):
            # NumPy's cast of this value overflows and warns on each call: so does the kernel.
            return f"(NP_FP_RAISE(NP_FE_OVERFLOW), ({ct}){_float_text(narrowed)})"
        return f"(({ct}){_float_text(narrowed)})"
    if dtype.kind == "b":
        return "1" if value else "0"
    if dtype.kind == "u":
        return f"(({ct}){int(value) % (1 << (8 * dtype.itemsize))}ULL)"
    as_int = int(np.array(value).astype(dtype))
    if as_int == -(2**63):
        return "((int64_t)(-9223372036854775807LL - 1))"
    return f"(({ct}){as_int}LL)"


def _float_text(value: float) -> str:
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return repr(value)


_BASIC_VECTOR_MATH = ("sin", "cos", "exp", "log")
_EXTENDED_VECTOR_MATH = (
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cosh", "exp10", "exp2",
    "expm1", "log10", "log1p", "log2", "sinh", "tan", "tanh",
)  # fmt: skip


def _glibc_version() -> tuple[int, int]:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return (0, 0)
    parts = text.split()
    if len(parts) != 2 or parts[0] != "glibc":
        return (0, 0)
    major, _, minor = parts[1].partition(".")
    return (int(major), int(minor.split(".")[0] or 0))


def vector_math_declarations() -> str:
    """Declarations that let GCC call glibc's libmvec without -ffast-math.

    Only functions this machine's libmvec exports are declared `simd`.

        >>> "sin(double)" in vector_math_declarations() or _glibc_version() < (2, 22)
        True
    """
    version = _glibc_version()
    names: list[str] = []
    if version >= (2, 22):
        names += _BASIC_VECTOR_MATH
    if version >= (2, 35):
        names += _EXTENDED_VECTOR_MATH
    simd = '__attribute__((__simd__("notinbranch")))'
    lines = []
    for name in names:
        lines.append(f"{simd} extern double {name}(double);")
        lines.append(f"{simd} extern float {name}f(float);")
    if version >= (2, 22):
        lines.append(f"{simd} extern double pow(double, double);")
        lines.append(f"{simd} extern float powf(float, float);")
    return "\n".join(lines)


# NumPy's power of float scalars is libm's `pow` (codegen.common.FLOAT_SCALAR_MATH), called
# apart so that GCC never vectorizes it into libmvec's `pow` (declared `simd` above: other
# bits), its exponent opaque (NP_ROUNDED) so that no constant `2.0` folds `pow(x, 2.0)` into
# `x * x`, which differs from glibc's pow in the last bit for some x. Ordering comparisons
# of floats are quiet, as NumPy's are: C's `<` raises the invalid flag on a NaN operand
# (and so would make NumPy's warnings replay). They compare the bits as integers instead,
# ordered as the floats are (negative floats' magnitude bits flipped); `==` and `!=`,
# quiet already, settle NaNs and signed zeros. `maximum` / `minimum` test the NaNs first, then
# the keys, in nested selects: GCC vectorizes a chain of them (the row pass of a column
# reduction, `codegen/c/reduction.py`), which it does not for the ORed npy_bool form.
_HELPERS_TEMPLATE = """
static inline I _np_key_N(T a) {
    I i;
    __builtin_memcpy(&i, &a, sizeof i);
    return i ^ ((i >> SHIFT) & MAGNITUDE);
}
static inline npy_bool _np_greater_N(T a, T b) {
    return (a == a) & (b == b) & (a != b) & (_np_key_N(a) > _np_key_N(b));
}
static inline npy_bool _np_less_N(T a, T b) { return _np_greater_N(b, a); }
static inline npy_bool _np_greater_equal_N(T a, T b) { return (a == b) | _np_greater_N(a, b); }
static inline npy_bool _np_less_equal_N(T a, T b) { return (a == b) | _np_greater_N(b, a); }
static inline T _np_maximum_N(T a, T b) {
    return (a != a) ? a : (b != b) ? b : ((a != b) & (_np_key_N(a) > _np_key_N(b))) ? a : b;
}
static inline T _np_minimum_N(T a, T b) {
    return (a != a) ? a : (b != b) ? b : ((a != b) & (_np_key_N(b) > _np_key_N(a))) ? a : b;
}
static inline T _np_sign_N(T a) {
    return _np_greater_N(a, 0) ? (T)1 : (_np_greater_N(0, a) ? (T)-1 : (a == 0 ? (T)0 : a));
}
static inline T _np_remainder_N(T a, T b) {
    T mod;
    if (!b) { return FMOD(a, b); }
    mod = FMOD(a, b);
    if (mod) { if ((b < 0) != (mod < 0)) { mod += b; } }
    else { mod = COPYSIGN((T)0, b); }
    return mod;
}
static __attribute__((noinline, unused)) T _np_scalar_power_N(T a, T b) {
    NP_ROUNDED(b);
    return POW(a, b);
}
static inline T _np_floor_divide_N(T a, T b) {
    T mod, div, floordiv;
    if (!b) { return a / b; }
    mod = FMOD(a, b);
    div = (a - mod) / b;
    if (mod) { if ((b < 0) != (mod < 0)) { div -= (T)1; } }
    if (div) {
        floordiv = FLOOR(div);
        if (div - floordiv > (T)0.5) { floordiv += (T)1; }
    } else {
        floordiv = COPYSIGN((T)0, a / b);
    }
    return floordiv;
}
"""

# Integer division by zero gives 0 and raises the divide flag, and MIN // -1 raises the
# overflow flag, as NumPy's loops do (its warnings come from the flags).
_INT_HELPERS_TEMPLATE = """
static inline T _np_floor_divide_N(T a, T b) {
    if (b == 0) { NP_FP_RAISE(NP_FE_DIVBYZERO); return 0; }
    if (SIGNED && b == (T)-1) {
        if (a == MIN) { NP_FP_RAISE(NP_FE_OVERFLOW); }
        return (T)(0 - (UT)a);
    }
    T q = a / b;
    if (SIGNED && (a % b != 0) && ((a < 0) != (b < 0))) { q -= 1; }
    return q;
}
static inline T _np_remainder_N(T a, T b) {
    if (b == 0) { NP_FP_RAISE(NP_FE_DIVBYZERO); return 0; }
    if (SIGNED && b == (T)-1) { return 0; }
    T r = a % b;
    if (SIGNED && r != 0 && ((r < 0) != (b < 0))) { r += b; }
    return r;
}
"""

# NumPy's scalar math on integer scalars (codegen.common.SCALAR_MATH): the wrapped result,
# and the overflow flag where the exact one does not fit T, as NumPy's scalarmath checks
# (an unsigned difference below zero and the negative of a nonzero unsigned overflow too).
_SCALAR_MATH_TEMPLATE = """
static inline T _np_scalar_add_N(T a, T b) {
    T r;
    if (__builtin_expect(__builtin_add_overflow(a, b, &r), 0)) { NP_FP_RAISE(NP_FE_OVERFLOW); }
    return r;
}
static inline T _np_scalar_subtract_N(T a, T b) {
    T r;
    if (__builtin_expect(__builtin_sub_overflow(a, b, &r), 0)) { NP_FP_RAISE(NP_FE_OVERFLOW); }
    return r;
}
static inline T _np_scalar_multiply_N(T a, T b) {
    T r;
    if (__builtin_expect(__builtin_mul_overflow(a, b, &r), 0)) { NP_FP_RAISE(NP_FE_OVERFLOW); }
    return r;
}
static inline T _np_scalar_negative_N(T a) {
    if (__builtin_expect(SIGNED ? a == MIN : a != 0, 0)) { NP_FP_RAISE(NP_FE_OVERFLOW); }
    return (T)(0 - (UT)a);
}
static inline T _np_scalar_absolute_N(T a) {
    if (__builtin_expect(SIGNED && a == MIN, 0)) { NP_FP_RAISE(NP_FE_OVERFLOW); }
    return (SIGNED && a < 0) ? (T)(0 - (UT)a) : a;
}
"""

# NumPy's complex products and its quotient by Smith's method (`CDOUBLE_divide`, the same
# for scalars): the same operations in the same order, so the same bits. The absolute value
# of a complex NumPy scalar is `npy_cabs`, libm's `hypot` (the array loop's SIMD one differs
# in the last bit); NumPy's `exp`, `log` and `sqrt` of complex values (`nc_exp`...) call
# libm's `cexp`, `clog` and `csqrt` (`npy_cexp`... where libm has them, as glibc does).
# NOTE: NumPy's array loop multiplies with `fmaddsub` on AVX-512 (one rounding), and GCC's
# SLP pass makes `_np_cmul` the same instruction despite -ffp-contract=off; NumPy's scalar
# math rounds each product: `_np_scalar_cmul` and the quotient put each product through
# NP_ROUNDED, an empty asm that makes it a rounded value (`z[i] * w[i]` in a loop lost bits
# on main).
_ROUNDED = """
#if defined(__x86_64__) || defined(__i386__)
#define NP_ROUNDED(v) __asm__("" : "+x"(v))
#elif defined(__aarch64__)
#define NP_ROUNDED(v) __asm__("" : "+w"(v))
#else
#define NP_ROUNDED(v) ((void)0)
#endif
"""
_COMPLEX_HELPERS_TEMPLATE = """
static inline T _np_cmul_N(T a, T b) {
    R ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;
    T z;
    __real__ z = ar * br - ai * bi;
    __imag__ z = ar * bi + ai * br;
    return z;
}
static inline T _np_scalar_cmul_N(T a, T b) {
    R ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;
    R rr = ar * br, ii = ai * bi, ri = ar * bi, ir = ai * br;
    NP_ROUNDED(rr); NP_ROUNDED(ii); NP_ROUNDED(ri); NP_ROUNDED(ir);
    T z;
    __real__ z = rr - ii;
    __imag__ z = ri + ir;
    return z;
}
static inline R _np_scalar_cabs_N(T a) {
    return HYPOT(__real__ a, __imag__ a);
}
static inline T _np_cdiv_N(T a, T b) {
    R ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;
    R br_abs = FABS(br), bi_abs = FABS(bi);
    T z;
    if (br_abs >= bi_abs) {
        if (br_abs == 0 && bi_abs == 0) {
            __real__ z = ar / br_abs;
            __imag__ z = ai / br_abs;
        } else {
            R rat = bi / br;
            R den = bi * rat, re = ai * rat, im = ar * rat;
            NP_ROUNDED(den); NP_ROUNDED(re); NP_ROUNDED(im);
            R scl = (R)1 / (br + den);
            __real__ z = (ar + re) * scl;
            __imag__ z = (ai - im) * scl;
        }
    } else {
        R rat = br / bi;
        R den = br * rat, re = ar * rat, im = ai * rat;
        NP_ROUNDED(den); NP_ROUNDED(re); NP_ROUNDED(im);
        R scl = (R)1 / (bi + den);
        __real__ z = (re + ai) * scl;
        __imag__ z = (im - ar) * scl;
    }
    return z;
}
"""


def helper_definitions() -> str:
    """C definitions of the `_np_*` helpers the table refers to (static inline).

    >>> "_np_floor_divide_double" in helper_definitions()
    True
    """
    parts = [_ROUNDED, NP_SINCOS_F32]
    for ct, suffix, bits in (("float", "f", 32), ("double", "", 64)):
        text = _HELPERS_TEMPLATE.replace("_N(", f"_{ct}(").replace("I ", f"int{bits}_t ")
        text = text.replace("SHIFT", str(bits - 1)).replace("MAGNITUDE", f"INT{bits}_MAX")
        text = text.replace("FMOD", f"fmod{suffix}").replace("FLOOR", f"floor{suffix}")
        text = text.replace("POW", f"pow{suffix}")
        parts.append(text.replace("COPYSIGN", f"copysign{suffix}").replace("T ", f"{ct} "))
        parts[-1] = parts[-1].replace("(T)", f"({ct})")
    for bits in (8, 16, 32, 64):
        for signed in (True, False):
            ct = f"{'' if signed else 'u'}int{bits}_t"
            text = (_INT_HELPERS_TEMPLATE + _SCALAR_MATH_TEMPLATE).replace("_N(", f"_{ct}(")
            text = text.replace("UT", f"uint{bits}_t").replace("SIGNED", "1" if signed else "0")
            text = text.replace("MIN", f"INT{bits}_MIN" if signed else "0")
            parts.append(text.replace("(T)", f"({ct})").replace("T ", f"{ct} "))
    for ct, real in (("float _Complex", "float"), ("double _Complex", "double")):
        text = _COMPLEX_HELPERS_TEMPLATE.replace("_N(", f"_{ct.replace(' ', '_')}(")
        text = text.replace("FABS", "fabsf" if real == "float" else "fabs")
        text = text.replace("HYPOT", "hypotf" if real == "float" else "hypot")
        text = text.replace("(R)", f"({real})").replace("R ", f"{real} ")
        parts.append(text.replace("T ", f"{ct} "))
    return "\n".join(parts)


OP_TABLE = register_op_table(OpTable("c", frozenset(_C_TYPES), _TABLES))
