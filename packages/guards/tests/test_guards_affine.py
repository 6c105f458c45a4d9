"""Affine forms and the shape environment's affine shortcut: the same answers as sympy's."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_guards import ShapeEnv
from numpile_guards.affine import AffineForm, affine_form, eliminate

_RELATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "<": sympy.Lt,
    "<=": sympy.Le,
    ">": sympy.Gt,
    ">=": sympy.Ge,
    "==": sympy.Eq,
    "!=": sympy.Ne,
}


def test_affine_forms_of_sympy_expressions() -> None:
    s0, i0 = sympy.symbols("s0 i0", integer=True)
    form = affine_form(3 * (s0 - i0) - 2 * s0 + 5)
    assert form is not None
    assert (form.constant, dict(form.coefficients)) == (5, {s0: 1, i0: -3})
    cancelled = affine_form(s0 + i0 - s0 - i0)
    assert cancelled is not None and (cancelled.constant, dict(cancelled.coefficients)) == (0, {})
    assert dict(AffineForm(1, {s0: 2}).plus(AffineForm(0, {s0: 1}), scale=-2).coefficients) == {}
    for not_affine in (s0 * i0, sympy.floor(s0 / 2), sympy.Max(s0, i0), s0 / 2, s0**2):
        assert affine_form(not_affine) is None


def test_elimination_takes_the_bound_that_moves_the_form_the_way_asked() -> None:
    # i1 in [0, i0 - 1], i0 in [0, n - 1]: `n - i1` is least at i1 = i0 - 1 = n - 2 (2),
    # greatest at i1 = 0 (n, unbounded above).
    n, i0, i1 = sympy.symbols("n i0 i1", integer=True)
    bounded = {i0: (0, n - 1), i1: (0, i0 - 1)}
    form = affine_form(n - i1)
    assert form is not None
    least = eliminate(form, bounded, least=True)
    greatest = eliminate(form, bounded, least=False)
    assert least is not None and greatest is not None
    assert least.range({n: (2, None)}) == (2, 2)
    assert greatest.range({n: (2, None)}) == (2, None)
    assert eliminate(form, {i1: (None, None)}, least=True) is None


def test_affine_questions_do_not_reach_sympy_algebra(monkeypatch: pytest.MonkeyPatch) -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(9, "L['x'].shape[0]")
    i0, i1 = sympy.symbols("i0 i1", integer=True)
    env.push_index(i0, 0, s0 - 1)
    env.push_index(i1, 0, i0 - 1)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("sympy algebra on an affine question")

    relations = [sympy.Lt(i1, s0), sympy.Le(i1 + 1, i0), sympy.Ge(s0 - i0 - 1, 0)]
    monkeypatch.setattr(sympy, "expand", refuse)
    monkeypatch.setattr(sympy, "diff", refuse)
    assert [env.decide(relation) for relation in relations] == [True, True, True]
    assert env.decide(sympy.Lt(i1, 3)) is None
    # A bound with no affine form goes to sympy, which this test refuses.
    env.push_index(sympy.Symbol("i2", integer=True), 0, sympy.floor(i1 / 2))
    with pytest.raises(AssertionError, match="sympy algebra"):
        env.decide(sympy.Le(sympy.Symbol("i2", integer=True), s0))


@st.composite
def _affine(draw: st.DrawFn, symbols: list[Any]) -> Any:
    expr: Any = sympy.Integer(draw(st.integers(-4, 4)))
    for symbol in symbols:
        expr += draw(st.integers(-2, 2)) * symbol
    return expr


@st.composite
def _questions(draw: st.DrawFn) -> tuple[ShapeEnv, Any, dict[Any, list[int]], list[Any]]:
    env = ShapeEnv()
    sizes: list[Any] = []
    values: dict[Any, list[int]] = {}
    for k in range(draw(st.integers(1, 2))):
        lo = draw(st.integers(2, 5))
        hi = draw(st.one_of(st.none(), st.integers(lo, lo + 4)))
        symbol = env.create_symbol(lo, f"L['x{k}'].shape[0]", lo=lo, hi=hi)
        sizes.append(symbol)
        values[symbol] = list(range(lo, (hi if hi is not None else lo + 3) + 1))
    indices: list[Any] = []
    for depth in range(draw(st.integers(0, 2))):
        symbol = sympy.Symbol(f"i{depth}", integer=True)
        outer = sizes + indices
        low = draw(st.one_of(st.none(), _affine(outer)))
        high = draw(st.one_of(st.none(), _affine(outer), st.just(sympy.floor(sizes[0] / 2))))
        env.push_index(symbol, low, high)
        indices.append(symbol)
    op = draw(st.sampled_from(sorted(_RELATIONS)))
    relation = _RELATIONS[op](draw(_affine(sizes + indices)), draw(_affine(sizes + indices)))
    return env, relation, values, indices


def _holds_everywhere(env: ShapeEnv, relation: Any, values: dict[Any, list[int]]) -> set[bool]:
    # The relation's truth at every small assignment the facts admit (brute force).
    outcomes: set[bool] = set()
    sizes = list(values)
    bounds = env._indices
    for chosen in itertools.product(*(values[s] for s in sizes)):
        assignment: dict[Any, int] = dict(zip(sizes, chosen, strict=True))

        def walk(pending: list[Any], assignment: dict[Any, int]) -> None:
            if not pending:
                value = relation.xreplace({s: sympy.Integer(v) for s, v in assignment.items()})
                outcomes.add(bool(value))
                return
            symbol, rest = pending[0], pending[1:]
            low, high = bounds[symbol]
            at = {s: sympy.Integer(v) for s, v in assignment.items()}
            lo = -6 if low is None else int(sympy.sympify(low).xreplace(at))
            hi = 12 if high is None else int(sympy.sympify(high).xreplace(at))
            for value in range(lo, hi + 1):
                walk(rest, {**assignment, symbol: value})

        walk(list(bounds), assignment)
    return outcomes


@settings(max_examples=100, deadline=None)
@given(_questions())
def test_the_affine_shortcut_answers_as_sympy_does(
    question: tuple[ShapeEnv, Any, dict[Any, list[int]], list[Any]],
) -> None:
    env, relation, values, _ = question
    if isinstance(relation, sympy.logic.boolalg.BooleanAtom):
        return
    fast = env._decide(relation)
    assert fast == env._decide(relation, affine=False)
    if fast is not None:
        outcomes = _holds_everywhere(env, relation, values)
        assert outcomes <= {fast}
