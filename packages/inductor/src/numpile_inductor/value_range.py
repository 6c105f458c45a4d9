"""Value ranges of index expressions, and the rewrites of `FloorDiv`/`ModularIndexing` they allow.

A loop variable `x<d>` of a kernel over `ranges` takes the values `0 .. ranges[d] - 1`, so an
index such as `FloorDiv(4080*x0 + 60*x1 + x2 + 8280, 4080)` over ranges `[64, 64, 60]` is
`x0 + 2`: the terms that are multiples of the divisor leave the division, and what remains
(`60*x1 + x2 + 8280`, in `[8280, 12119]`) has one quotient. This is the range analysis torch's
inductor runs on its `FloorDiv`/`ModularIndexing`; reshapes of views are where they appear.

Bounds are Python ints, `None` for an unknown (unbounded) side: a loop over a symbolic size
gives `[0, None]`, so the rewrites that need an upper bound leave such expressions alone.

    >>> from numpile_inductor.index import FloorDiv, ModularIndexing, loop_var
    >>> x0, x1, x2 = (loop_var(d) for d in range(3))
    >>> ranges = {x0: 64, x1: 64, x2: 60}
    >>> simplify_index(FloorDiv(4080 * x0 + 60 * x1 + x2 + 8280, 4080), ranges)
    x0 + 2
    >>> simplify_index(ModularIndexing(4080 * x0 + 60 * x1 + x2 + 8280, 60, 68), ranges)
    x1 + 2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs
import sympy

from .index import loop_var
from .loop_ir import AccumulateStore, Expr, Kernel, ReductionStore, Store, map_indices
from .sympy_index import FloorDiv, ModularIndexing

Bound: TypeAlias = "int | None"
Ranges: TypeAlias = "Mapping[sympy.Symbol, Any]"


def bounds(expr: Any, ranges: Ranges) -> tuple[Bound, Bound]:
    """The smallest and largest value of `expr` when each symbol `v` of `ranges` takes the
    values `0 .. ranges[v] - 1` (`None`: unknown).

    >>> x0 = loop_var(0)
    >>> bounds(3 * x0 - 2, {x0: 5})
    (-2, 10)
    """
    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return int(expr), int(expr)
    if expr.is_Symbol:
        size = ranges.get(expr)
        low: Bound = 0 if expr.is_nonnegative else None
        if size is not None and sympy.sympify(size).is_Integer:
            return 0, max(0, int(size) - 1)
        return (0 if size is not None else low), None
    if expr.is_Add:
        total: tuple[Bound, Bound] = (0, 0)
        for arg in expr.args:
            arg_low, arg_high = bounds(arg, ranges)
            total = (
                None if total[0] is None or arg_low is None else total[0] + arg_low,
                None if total[1] is None or arg_high is None else total[1] + arg_high,
            )
        return total
    if expr.is_Mul:
        coeff, rest = expr.as_coeff_Mul()
        if coeff.is_Integer and coeff != 1:
            return _scale(bounds(rest, ranges), int(coeff))
        return _product(expr.args, ranges)
    if isinstance(expr, FloorDiv) and expr.args[1].is_Integer and expr.args[1] > 0:
        divisor = int(expr.args[1])
        base_low, base_high = bounds(expr.args[0], ranges)
        return (
            None if base_low is None else base_low // divisor,
            None if base_high is None else base_high // divisor,
        )
    if isinstance(expr, ModularIndexing):
        return _modular_bounds(expr, ranges)
    return None, None


def _scale(bound: tuple[Bound, Bound], factor: int) -> tuple[Bound, Bound]:
    low, high = bound
    scaled = (None if low is None else low * factor, None if high is None else high * factor)
    return scaled if factor >= 0 else (scaled[1], scaled[0])


def _product(args: tuple[Any, ...], ranges: Ranges) -> tuple[Bound, Bound]:
    # A product of nonnegative factors: [product of lows, product of highs].
    low = 1
    high: Bound = 1
    for arg in args:
        arg_low, arg_high = bounds(arg, ranges)
        if arg_low is None or arg_low < 0:
            return None, None
        low *= arg_low
        high = None if high is None or arg_high is None else high * arg_high
    return low, high


def _modular_bounds(expr: Any, ranges: Ranges) -> tuple[Bound, Bound]:
    base, divisor, modulus = expr.args
    if not modulus.is_Integer:
        return 0, None
    top = int(modulus) - 1
    low, high = bounds(base, ranges)
    if divisor.is_Integer and low is not None and high is not None and low >= 0:
        q_low, q_high = low // int(divisor), high // int(divisor)
        if q_high - q_low <= top and q_low % (top + 1) <= q_high % (top + 1):
            return q_low % (top + 1), q_high % (top + 1)
    return 0, top


def simplify_index(expr: Any, ranges: Ranges) -> Any:
    """`expr` with every `FloorDiv` and `ModularIndexing` rewritten as far as the ranges of
    its symbols allow (the same value for every point of the ranges).

    >>> x0, x1 = loop_var(0), loop_var(1)
    >>> simplify_index(FloorDiv(12 * x0 + x1, 6), {x0: 2, x1: 12})
    2*x0 + FloorDiv(x1, 6)
    """
    expr = sympy.sympify(expr)
    if not expr.args or not expr.has(FloorDiv, ModularIndexing):
        return expr
    args = [simplify_index(arg, ranges) for arg in expr.args]
    if isinstance(expr, FloorDiv):
        return _floor_div(args[0], args[1], ranges)
    if isinstance(expr, ModularIndexing):
        return _modular(args[0], args[1], args[2], ranges)
    return expr.func(*args)


def _split_multiples(base: Any, step: int) -> tuple[Any, Any]:
    # base = step * quotient + rest, quotient taking every term with a coefficient divisible
    # by `step`.
    quotient: Any = sympy.Integer(0)
    rest: Any = sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(base)):
        coeff, _ = term.as_coeff_Mul()
        if coeff.is_Integer and int(coeff) % step == 0:
            quotient += term / step
        else:
            rest += term
    return quotient, rest


def _floor_div(base: Any, divisor: Any, ranges: Ranges) -> Any:
    if not (divisor.is_Integer and divisor > 0):
        return FloorDiv(base, divisor)
    step = int(divisor)
    quotient, rest = _split_multiples(base, step)
    low, high = bounds(rest, ranges)
    if low is None:
        # The C division truncates: keep the whole (nonnegative) base under it.
        return FloorDiv(base, divisor)
    if high is not None and low // step == high // step:
        return quotient + low // step
    # Shift the remainder into [0, ...) so the C division (truncating) is the floor.
    shift = low // step
    rest = sympy.expand(rest - shift * step)
    gcd = _content_gcd(rest, step)
    if gcd > 1:
        rest, step = sympy.expand(rest / gcd), step // gcd
    return quotient + shift + FloorDiv(rest, step)


def _modular(base: Any, divisor: Any, modulus: Any, ranges: Ranges) -> Any:
    if not (divisor.is_Integer and modulus.is_Integer and divisor > 0 and modulus > 0):
        return ModularIndexing(base, divisor, modulus)
    step, size = int(divisor), int(modulus)
    period = step * size
    _, rest = _split_multiples(base, period)
    low, high = bounds(rest, ranges)
    if low is None:
        return ModularIndexing(base, divisor, modulus)
    if not 0 <= low < period:
        # Whole periods leave the result as it is: move the lowest value into [0, period).
        periods = -(low // period)
        rest, low = sympy.expand(rest + periods * period), low + periods * period
        high = None if high is None else high + periods * period
    if high is not None and high < period:
        return _floor_div(rest, divisor, ranges)
    if high is not None and low // step == high // step:
        return sympy.Integer((low // step) % size)
    return ModularIndexing(rest, divisor, modulus)


def _content_gcd(expr: Any, step: int) -> int:
    gcd = step
    for term in sympy.Add.make_args(expr):
        coeff, _ = term.as_coeff_Mul()
        if not coeff.is_Integer:
            return 1
        gcd = math.gcd(gcd, int(coeff))
    return gcd


def kernel_ranges(kernel: Kernel) -> dict[sympy.Symbol, Any]:
    """The range of each loop variable of `kernel` (`x<d>` and `r<d>`).

    >>> kernel_ranges(Kernel("k", (4, 5), (), ()))
    {x0: 4, x1: 5}
    """
    ranges: dict[sympy.Symbol, Any] = {}
    for dim, size in enumerate(kernel.ranges):
        ranges[loop_var(dim)] = size
    for dim, size in enumerate(kernel.reduction_ranges):
        ranges[loop_var(dim, "r")] = size
    return ranges


def simplify_kernel_indices(kernel: Kernel) -> Kernel:
    """`kernel` with the index of every load and store simplified under its loop ranges.

    >>> simplify_kernel_indices(Kernel("k", (4,), (), ())).ranges
    (4,)
    """
    ranges = kernel_ranges(kernel)
    cache: dict[Any, Any] = {}

    def index(idx: tuple[Any, ...]) -> tuple[Any, ...]:
        result = []
        for item in idx:
            if item not in cache:
                cache[item] = simplify_index(item, ranges)
            result.append(cache[item])
        return tuple(result)

    def value(expr: Expr) -> Expr:
        return map_indices(expr, lambda item: index((item,))[0])

    stores: list[Store | ReductionStore | AccumulateStore] = []
    for store in kernel.stores:
        stores.append(attrs.evolve(store, index=index(store.index), value=value(store.value)))
    return attrs.evolve(kernel, stores=tuple(stores))
