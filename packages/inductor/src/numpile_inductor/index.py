"""Index expressions: sympy integers over loop variables, and their C spelling.

Loop variables are `x0, x1, ...` (output dims) and `r0, r1, ...` (reduced
dims), all nonnegative integers. Reshapes of a non-contiguous value need
floor division and modulo of a flat index; `FloorDiv` and `ModularIndexing`
do only the cheap, sound rewrites (never `simplify()`: it costs tens of
milliseconds an expression and misses the identities that matter).

    >>> x = loop_var(0)
    >>> c_index(ModularIndexing(x * 12 + 5, 4, 3))
    '(((12*x0 + 5) / 4) % 3)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy
from sympy.printing.c import C99CodePrinter

# NOTE: memoized so every kernel shares the same symbol objects.
_LOOP_VARS: dict[str, sympy.Symbol] = {}


def loop_var(dim: int, prefix: str = "x") -> sympy.Symbol:
    """The loop variable of dimension `dim` (`x<dim>`, or `r<dim>` for reductions).

    >>> loop_var(2, "r")
    r2
    """
    name = f"{prefix}{dim}"
    if name not in _LOOP_VARS:
        _LOOP_VARS[name] = sympy.Symbol(name, integer=True, nonnegative=True)
    return _LOOP_VARS[name]


class FloorDiv(sympy.Function):  # type: ignore[misc]
    """`base // divisor` for a nonnegative base and a positive divisor.

    >>> FloorDiv(loop_var(0) * 4 + loop_var(1), 4)  # doctest: +SKIP
    x0 + FloorDiv(x1, 4)
    """

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, base: Any, divisor: Any) -> Any:
        if divisor == 1:
            return base
        if base.is_Integer and divisor.is_Integer:
            return base // divisor
        if base == 0:
            return sympy.Integer(0)
        return None


class ModularIndexing(sympy.Function):  # type: ignore[misc]
    """`(base // divisor) % modulus` for a nonnegative base.

    >>> ModularIndexing(loop_var(0), 1, 1)
    0
    """

    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, base: Any, divisor: Any, modulus: Any) -> Any:
        if modulus == 1 or base == 0:
            return sympy.Integer(0)
        if base.is_Integer and divisor.is_Integer and modulus.is_Integer:
            return (base // divisor) % modulus
        return None


class _IndexPrinter(C99CodePrinter):  # type: ignore[misc]
    def _print_FloorDiv(self, expr: Any) -> str:  # noqa: N802 - sympy's printer naming
        base, divisor = expr.args
        return f"(({self._print(base)}) / {self._print(divisor)})"

    def _print_ModularIndexing(self, expr: Any) -> str:  # noqa: N802
        base, divisor, modulus = expr.args
        inner = self._print(base)
        if divisor != 1:
            inner = f"({inner}) / {self._print(divisor)}"
        return f"(({inner}) % {self._print(modulus)})"

    def _print_Integer(self, expr: Any) -> str:  # noqa: N802
        value = int(expr)
        if abs(value) >= 2**31:
            return f"{value}LL"
        return str(value)


_PRINTER = _IndexPrinter()


def c_index(expr: Any) -> str:
    """The C spelling of an index expression (int64 arithmetic).

    >>> c_index(loop_var(0) * 3 + 1)
    '3*x0 + 1'
    """
    text: str = _PRINTER.doprint(sympy.sympify(expr))
    return text


class _SizePrinter(_IndexPrinter):
    # Sizes over symbols in exact int64 arithmetic: sympy writes x[1::3]'s length as
    # floor(s0/3 + 1/3), which C99 would evaluate in double (2.9999... for s0 = 8). The
    # np_*_i64 helpers it calls are defined in every module's prelude (codegen/c/prelude.py).
    def _quotient(self, arg: Any) -> tuple[str, str]:
        num, den = sympy.fraction(sympy.together(arg))
        return self._print(sympy.expand(num)), self._print(den)

    def _print_floor(self, expr: Any) -> str:
        num, den = self._quotient(expr.args[0])
        return f"np_floordiv_i64({num}, {den})"

    def _print_ceiling(self, expr: Any) -> str:
        num, den = self._quotient(expr.args[0])
        return f"(-np_floordiv_i64(-({num}), {den}))"

    def _print_Max(self, expr: Any) -> str:  # noqa: N802 - sympy's printer naming
        return self._fold("np_max_i64", expr.args)

    def _print_Min(self, expr: Any) -> str:  # noqa: N802
        return self._fold("np_min_i64", expr.args)

    def _print_Mod(self, expr: Any) -> str:  # noqa: N802
        base, modulus = expr.args
        return f"np_mod_i64({self._print(base)}, {self._print(modulus)})"

    def _print_Rational(self, expr: Any) -> str:  # noqa: N802
        if expr.q != 1:
            raise ValueError(f"a size cannot be the fraction {expr}")
        return str(self._print_Integer(expr))

    def _fold(self, fn: str, args: tuple[Any, ...]) -> str:
        text = str(self._print(args[0]))
        for arg in args[1:]:
            text = f"{fn}({text}, {self._print(arg)})"
        return text


_SIZE_PRINTER = _SizePrinter()


def c_size(expr: Any) -> str:
    """The C spelling of a size expression over size symbols, in exact int64 arithmetic.

    >>> c_size(sympy.floor(sympy.Symbol("s0", integer=True) / 3 + sympy.Rational(1, 3)))
    'np_floordiv_i64(s0 + 1, 3)'
    """
    text: str = _SIZE_PRINTER.doprint(sympy.sympify(expr))
    return text


def strided_offset(index: Sequence[Any], strides: Sequence[Any]) -> Any:
    """The expanded element offset `sum(index[d] * strides[d])`: the expression
    `sympy.expand` gives, built term by term where it can be (see `_affine_terms`).

    >>> s0 = sympy.Symbol("s0", integer=True)
    >>> strided_offset((loop_var(0) + 1, 2 * loop_var(1)), (s0, 1))
    s0*x0 + s0 + 2*x1
    """
    terms = _affine_terms(index, strides)
    if terms is not None:
        return sympy.Add(*terms)
    flat: Any = sympy.Integer(0)
    for idx, stride in zip(index, strides, strict=True):
        flat = flat + sympy.sympify(idx) * stride
    return sympy.expand(flat)


def _affine_terms(index: Sequence[Any], strides: Sequence[Any]) -> list[Any] | None:
    # The common case: each index an integer combination of symbols plus an integer, each
    # stride a symbol or an integer. Then every product is a sum of monomials, and sympy's
    # Add and Mul put them in the canonical form that `expand` reaches by walking the
    # whole expression with every hint (a third of a light graph's code generation).
    # None where an index or stride is anything else (FloorDiv, a product of sizes, ...).
    terms: list[Any] = []
    for idx, stride in zip(index, strides, strict=True):
        factor = sympy.sympify(stride)
        if not (factor.is_Symbol or factor.is_Integer):
            return None
        for term, coefficient in sympy.sympify(idx).as_coefficients_dict().items():
            if not coefficient.is_Integer or not (term.is_Symbol or term == 1):
                return None
            terms.append(sympy.Mul(coefficient, term, factor))
    return terms


def flatten_index(index: tuple[Any, ...], shape: tuple[int, ...]) -> Any:
    """The C-order flat position of `index` in an array of `shape`.

    >>> flatten_index((loop_var(0), loop_var(1)), (2, 3))
    3*x0 + x1
    """
    flat: Any = sympy.Integer(0)
    for idx, size in zip(index, shape, strict=True):
        flat = flat * size + idx
    return flat


def unflatten_index(flat: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The C-order index in an array of `shape` of flat position `flat`.

    >>> unflatten_index(loop_var(0), (2, 3))
    (FloorDiv(x0, 3), ModularIndexing(x0, 1, 3))
    """
    result: list[Any] = []
    step = 1
    for size in reversed(shape):
        if size == 1:
            result.append(sympy.Integer(0))
        elif step == 1 and len(result) == len(shape) - 1:
            result.append(flat)
        else:
            result.append(_split(flat, step, size, is_outer=len(result) == len(shape) - 1))
        step *= size
    return tuple(reversed(result))


def _split(flat: Any, step: int, size: int, *, is_outer: bool) -> Any:
    if is_outer:
        return FloorDiv(flat, step)
    return ModularIndexing(flat, step, size)
