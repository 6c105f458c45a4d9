"""Range analysis of index expressions: `simplify_index` against brute force.

Every rewrite must give the same value at every point of the loop ranges, and every
`FloorDiv`/`ModularIndexing` it leaves must have a nonnegative base there (the C spelling
truncates, which is the floor only for nonnegative bases).
"""

from __future__ import annotations

import itertools
from typing import Any

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_inductor.index import FloorDiv, ModularIndexing, c_index, loop_var
from numpile_inductor.value_range import bounds, simplify_index

X0, X1, X2 = (loop_var(d) for d in range(3))


def _value(expr: Any, point: dict[Any, int], *, c_semantics: bool) -> int:
    # Evaluates with floor semantics, or as the C code does (asserting nonnegative bases).
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return point[expr]
    args = [_value(arg, point, c_semantics=c_semantics) for arg in expr.args]
    if isinstance(expr, FloorDiv | ModularIndexing):
        if c_semantics:
            assert args[0] >= 0, f"{expr} has a negative base at {point}"
        quotient = args[0] // args[1]
        return quotient if isinstance(expr, FloorDiv) else quotient % args[2]
    if expr.is_Add:
        return sum(args)
    if expr.is_Mul:
        product = 1
        for arg in args:
            product *= arg
        return product
    raise AssertionError(f"unexpected {expr!r}")


def _points(ranges: dict[Any, int]) -> list[dict[Any, int]]:
    symbols = list(ranges)
    return [
        dict(zip(symbols, values, strict=True))
        for values in itertools.product(*(range(ranges[s]) for s in symbols))
    ]


def _same_everywhere(expr: Any, ranges: dict[Any, int]) -> Any:
    simple = simplify_index(expr, ranges)
    for point in _points(ranges):
        want = _value(expr, point, c_semantics=False)
        assert _value(simple, point, c_semantics=True) == want, (expr, simple, point)
    return simple


_affine = st.tuples(st.integers(-3, 3), st.sampled_from([1, 2, 3, 4, 6, 12]), st.integers(-30, 60))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_affine, min_size=1, max_size=3),
    st.lists(st.integers(1, 6), min_size=3, max_size=3),
    st.sampled_from([1, 2, 3, 4, 5, 6, 12]),
    st.sampled_from([1, 2, 3, 5, 7]),
    st.booleans(),
)
def test_simplified_index_equals_the_original_at_every_point(
    terms: list[tuple[int, int, int]],
    sizes: list[int],
    divisor: int,
    modulus: int,
    nest: bool,
) -> None:
    ranges = dict(zip((X0, X1, X2), sizes, strict=True))
    base: Any = sympy.Integer(0)
    for dim, (sign, scale, constant) in enumerate(terms):
        base += sign * scale * (X0, X1, X2)[dim] + constant
    low, _ = bounds(base, ranges)
    assert low is not None
    base = sympy.expand(base - min(low, 0))  # the graph's bases are nonnegative
    if nest:
        base = 5 * FloorDiv(base, 3) + ModularIndexing(base, 2, 4)
    _same_everywhere(FloorDiv(base, divisor), ranges)
    _same_everywhere(ModularIndexing(base, divisor, modulus), ranges)


def test_the_issues_flattened_stencil_index_is_affine() -> None:
    # in_field[2:I+2, 2:J+2, :] of a 68x68x60 field, through a flat index (issue 24)
    ranges = {X0: 64, X1: 64, X2: 60}
    flat = 4080 * X0 + 60 * X1 + X2 + 8280
    index = (FloorDiv(flat, 4080), ModularIndexing(flat, 60, 68), ModularIndexing(flat, 1, 60))
    simple = tuple(simplify_index(i, ranges) for i in index)
    assert simple == (X0 + 2, X1 + 2, X2)
    assert "/" not in c_index(sum(simple)) and "%" not in c_index(sum(simple))


def test_a_reshape_keeps_the_division_it_needs_and_drops_the_rest() -> None:
    # (4, 6) seen as (2, 12): 12*x0 + x1 over x1 < 12 splits into 2*x0 + x1 // 6
    ranges = {X0: 2, X1: 12}
    assert _same_everywhere(FloorDiv(12 * X0 + X1, 6), ranges) == 2 * X0 + FloorDiv(X1, 6)
    assert _same_everywhere(ModularIndexing(12 * X0 + X1, 1, 6), ranges) == ModularIndexing(
        X1, 1, 6
    )


def test_symbolic_ranges_simplify_only_what_holds_for_every_size() -> None:
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    ranges = {X0: s0, X1: 60}
    assert simplify_index(FloorDiv(60 * X0 + X1, 60), ranges) == X0
    assert simplify_index(ModularIndexing(60 * X0 + X1, 1, 60), ranges) == X1
    # x0 has no upper bound: x0 // 4 stays a division
    assert simplify_index(FloorDiv(X0 + 8, 4), ranges) == 2 + FloorDiv(X0, 4)


def test_bounds_of_divisions_and_moduli() -> None:
    ranges = {X0: 10, X1: 4}
    assert bounds(FloorDiv(X0 + 3, 4), ranges) == (0, 3)
    assert bounds(ModularIndexing(X1 + 1, 1, 8), ranges) == (1, 4)
    assert bounds(ModularIndexing(X0, 1, 8), ranges) == (0, 7)
    assert bounds(X0 - 2 * X1, ranges) == (-6, 9)
