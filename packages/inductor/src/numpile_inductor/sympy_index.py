"""The sympy half of index expressions: `FloorDiv`, `ModularIndexing` and their C printers.

Imported only where an index needs sympy (`index` reaches it on first use): a graph whose
sizes and indices are ints and affine `AffineSize` values lowers without it (see
`light_lowering`). `index` re-exports `FloorDiv` and `ModularIndexing`.

    >>> from numpile_inductor.index import loop_var
    >>> print_index(ModularIndexing(loop_var(0) * 12 + 5, 4, 3))
    '(((12*x0 + 5) / 4) % 3)'
"""

from __future__ import annotations

from typing import Any

import sympy
from sympy.printing.c import C99CodePrinter

__all__ = ["FloorDiv", "ModularIndexing", "print_index", "print_size"]


class FloorDiv(sympy.Function):  # type: ignore[misc]
    """`base // divisor` for a nonnegative base and a positive divisor.

    >>> x0, x1 = sympy.symbols("x0 x1", integer=True, nonnegative=True)
    >>> FloorDiv(x0 * 4 + x1, 4)  # doctest: +SKIP
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

    >>> ModularIndexing(sympy.Symbol("x0", integer=True, nonnegative=True), 1, 1)
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


def print_index(expr: Any) -> str:
    """The C spelling of a sympy index expression (int64 arithmetic).

    >>> print_index(sympy.Symbol("x0", integer=True) * 3 + 1)
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


def print_size(expr: Any) -> str:
    """The C spelling of a sympy size expression over size symbols, in exact int64 arithmetic.

    >>> print_size(sympy.floor(sympy.Symbol("s0", integer=True) / 3 + sympy.Rational(1, 3)))
    'np_floordiv_i64(s0 + 1, 3)'
    """
    text: str = _SIZE_PRINTER.doprint(sympy.sympify(expr))
    return text
