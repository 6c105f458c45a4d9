"""Affine integer forms of size expressions, and their range over bounded symbols.

While a loop body is traced, nearly every question the shape environment is asked is
whether `lhs - rhs` keeps a sign over the loop indices' bounds and the sizes' ranges
(`0 <= i1 <= i0 - 1 <= s0 - 2`: is `i1 < s0`?), and nearly every such difference is
affine: a constant plus integer multiples of symbols. Answered with sympy's `expand`,
`diff` and `xreplace` each question costs about a millisecond; as an `AffineForm` (a
constant and a dict of coefficients) it is dict arithmetic. A light capture's sizes
(`affine_size.AffineSize`) have their form without sympy. Anything else (`floor`,
`Max`, `Mod`, a product of symbols) has no form here and is left to sympy.

The symbols are whatever objects the expressions hold (sympy symbols in a shape
environment); only sympy's class flags are read, so building a form imports nothing.

    >>> import sympy
    >>> s0, i0 = sympy.symbols("s0 i0", integer=True)
    >>> form = affine_form(2 * s0 - i0 + 3)
    >>> form.constant, sorted((str(s), c) for s, c in form.coefficients.items())
    (3, [('i0', -1), ('s0', 2)])
    >>> affine_form(s0 * i0) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .affine_size import AffineSize

Bound = int | None


@attrs.frozen(eq=False)
class AffineForm:
    """`constant + sum(coefficient * symbol)`, no zero coefficient kept.

    >>> AffineForm(4, {}).plus(AffineForm(-1, {"n": 2}), scale=3)
    AffineForm(constant=1, coefficients={'n': 6})
    """

    constant: int
    coefficients: Mapping[Any, int]

    def plus(self, other: AffineForm, *, scale: int = 1) -> AffineForm:
        """`self + scale * other`."""
        coefficients = dict(self.coefficients)
        for symbol, coefficient in other.coefficients.items():
            total = coefficients.get(symbol, 0) + scale * coefficient
            if total:
                coefficients[symbol] = total
            else:
                coefficients.pop(symbol, None)
        return AffineForm(self.constant + scale * other.constant, coefficients)

    def substitute(self, symbol: Any, value: AffineForm) -> AffineForm:
        """`self` with `value` in place of `symbol`.

        >>> AffineForm(1, {"i": 2, "n": 1}).substitute("i", AffineForm(-1, {"n": 1}))
        AffineForm(constant=-1, coefficients={'n': 3})
        """
        coefficient = self.coefficients.get(symbol, 0)
        if not coefficient:
            return self
        rest = {s: c for s, c in self.coefficients.items() if s != symbol}
        return AffineForm(self.constant, rest).plus(value, scale=coefficient)

    def range(self, ranges: Mapping[Any, tuple[int, Bound]]) -> tuple[Bound, Bound]:
        """Least and greatest value over the symbols' `ranges` (None: unbounded); a symbol
        not in `ranges` is a size, `(0, None)`, as `symbolic.bounds` takes it.

        >>> AffineForm(1, {"n": -2}).range({"n": (2, 5)})
        (-9, -3)
        """
        low: Bound = self.constant
        high: Bound = self.constant
        for symbol, coefficient in self.coefficients.items():
            least: Bound
            greatest: Bound
            least, greatest = ranges.get(symbol, (0, None))
            if coefficient < 0:
                least, greatest = greatest, least
            low = None if low is None or least is None else low + coefficient * least
            high = None if high is None or greatest is None else high + coefficient * greatest
        return low, high


def affine_form(expr: Any) -> AffineForm | None:
    """`expr` (an int or a sympy expression) as an `AffineForm`, or None where it is not
    affine with integer coefficients.

    >>> affine_form(7)
    AffineForm(constant=7, coefficients={})
    """
    if isinstance(expr, bool):
        return None
    if isinstance(expr, int):
        return AffineForm(expr, {})
    if isinstance(expr, AffineSize):
        return AffineForm(expr.constant, {AffineSize.symbol(n): c for n, c in expr.terms})
    if getattr(expr, "is_Integer", False):
        return AffineForm(int(expr), {})
    if getattr(expr, "is_Symbol", False):
        return AffineForm(0, {expr: 1})
    if getattr(expr, "is_Add", False):
        total = AffineForm(0, {})
        for arg in expr.args:
            term = affine_form(arg)
            if term is None:
                return None
            total = total.plus(term)
        return total
    if getattr(expr, "is_Mul", False):
        coefficient, rest = expr.as_coeff_Mul()
        if not coefficient.is_Integer or rest is expr:
            return None
        inner = affine_form(rest)
        return None if inner is None else AffineForm(0, {}).plus(inner, scale=int(coefficient))
    return None


def eliminate(
    form: AffineForm,
    bounded: Mapping[Any, tuple[Any, Any]],
    *,
    least: bool,
) -> AffineForm | None:
    """`form` with each bounded symbol (innermost last in `bounded`, so eliminated first)
    replaced by the bound that moves it the way asked (`least`: its least value); None
    where a needed bound is unknown or a symbol stays. Raises `NotAffineError` where a
    needed bound has no affine form (sympy must answer).

        >>> eliminate(AffineForm(0, {"i": 1}), {"i": (0, AffineForm(-1, {"n": 1}))}, least=False)
        AffineForm(constant=-1, coefficients={'n': 1})
    """
    for symbol in reversed(tuple(bounded)):
        coefficient = form.coefficients.get(symbol, 0)
        if not coefficient:
            continue
        low, high = bounded[symbol]
        bound = low if (coefficient > 0) == least else high
        if bound is None:
            return None
        value = bound if isinstance(bound, AffineForm) else affine_form(bound)
        if value is None:
            raise NotAffineError(bound)
        form = form.substitute(symbol, value)
    if any(symbol in bounded for symbol in form.coefficients):
        return None
    return form


class NotAffineError(ValueError):
    """A bound that has no affine form: the question goes to sympy."""
