"""Light sizes (`AffineSize`): printed, computed and decided as their sympy expressions."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_guards import (
    AffineRelation,
    AffineSize,
    NeedsSympy,
    ShapeEnv,
    light_active,
    light_sizes,
    relation,
)

_NAMES = ["s0", "s1", "s2", "s10", "i0", "i1", "i2", "i12", "r0", "r3"]
_SYMPY_RELATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "<": sympy.Lt,
    "<=": sympy.Le,
    ">": sympy.Gt,
    ">=": sympy.Ge,
    "==": sympy.Eq,
    "!=": sympy.Ne,
}


@st.composite
def _sizes(draw: st.DrawFn) -> Any:
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=0, max_size=4, unique=True))
    coefficients = {name: draw(st.sampled_from([-12, -3, -2, -1, 1, 2, 5])) for name in names}
    return AffineSize.of(draw(st.integers(-20, 20)), coefficients)


def _as_sympy(value: Any) -> Any:
    return value.to_sympy() if isinstance(value, AffineSize) else sympy.Integer(value)


@settings(max_examples=400, deadline=None)
@given(_sizes())
def test_a_size_prints_as_its_sympy_expression(size: Any) -> None:
    # The printed graph is the kernel cache key: both captures must print a size alike.
    assert str(size) == str(_as_sympy(size))


@settings(max_examples=200, deadline=None)
@given(_sizes(), _sizes(), st.integers(-4, 4))
def test_arithmetic_is_sympy_arithmetic(a: Any, b: Any, k: int) -> None:
    for got, want in (
        (a + b, _as_sympy(a) + _as_sympy(b)),
        (a - b, _as_sympy(a) - _as_sympy(b)),
        (k * a, k * _as_sympy(a)),
        (a * k, _as_sympy(a) * k),
        (k - a, k - _as_sympy(a)),
        (-a, -_as_sympy(a)),
    ):
        assert _as_sympy(got) == sympy.expand(want)
        assert isinstance(got, int) == (sympy.expand(want).is_Integer is True)


def test_equal_sizes_are_equal_keys_and_a_size_is_no_int() -> None:
    s0, i0 = AffineSize.symbol("s0"), AffineSize.symbol("i0")
    assert {s0 - i0: 1}[-i0 + s0] == 1
    assert s0 + 1 != 1 and s0 != s0 + 0 * i0 + 1
    assert (s0 - i0).free_symbols == {s0, i0}
    assert s0.is_Symbol and not (2 * s0).is_Symbol and not s0.is_Integer


def test_inside_a_light_capture_only_affine_arithmetic_runs() -> None:
    s0, i0 = AffineSize.symbol("s0"), AffineSize.symbol("i0")
    with light_sizes():
        assert light_active()
        assert 2 * (s0 - i0) + 1 == AffineSize.of(1, {"s0": 2, "i0": -2})
        for needs_sympy in (
            lambda: s0 * i0,
            lambda: s0 // 2,
            lambda: s0 % 3,
            lambda: s0 < 4,
            lambda: bool(s0),
            lambda: s0 + 0.5,
            lambda: s0.is_positive,
            lambda: sympy.sympify(s0),
        ):
            with pytest.raises(NeedsSympy):
                needs_sympy()
    assert not light_active()


def test_outside_a_light_capture_a_size_is_its_sympy_expression() -> None:
    s0, i0 = AffineSize.symbol("s0"), AffineSize.symbol("i0")
    assert s0 * i0 == s0.to_sympy() * i0.to_sympy()
    assert s0 // 2 == sympy.floor(s0.to_sympy() / 2)
    assert sympy.Max(s0, 3) == sympy.Max(s0.to_sympy(), 3)
    assert (s0 - 1).is_positive is None and s0.is_positive is True
    assert s0 == s0.to_sympy()
    with pytest.raises(TypeError):
        bool(s0 < 4)


def test_a_light_capture_cannot_import_sympy_on_its_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The import of sympy is what a light capture exists to avoid: one that reaches it stops.
    monkeypatch.delitem(__import__("sys").modules, "sympy")
    with light_sizes(), pytest.raises(NeedsSympy):
        import sympy as _  # noqa: F401


def _envs(light: bool) -> tuple[ShapeEnv, list[Any]]:
    # The same facts in both representations: two sizes, then `i0 in [0, s0 - 1]`,
    # `i1 in [0, i0 - 1]`.
    env = ShapeEnv()
    if light:
        with light_sizes():
            s0 = env.create_symbol(9, "L['x'].shape[0]")
            s1 = env.create_symbol(5, "L['y'].shape[0]", lo=3, hi=6)
        i0, i1 = AffineSize.symbol("i0"), AffineSize.symbol("i1")
    else:
        s0 = env.create_symbol(9, "L['x'].shape[0]")
        s1 = env.create_symbol(5, "L['y'].shape[0]", lo=3, hi=6)
        i0, i1 = sympy.symbols("i0 i1", integer=True)
    env.push_index(i0, 0, s0 - 1)
    env.push_index(i1, 0, i0 - 1)
    return env, [s0, s1, i0, i1]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(_SYMPY_RELATIONS)),
    st.lists(st.integers(-2, 2), min_size=4, max_size=4),
    st.lists(st.integers(-2, 2), min_size=4, max_size=4),
    st.integers(-4, 4),
)
def test_a_light_relation_is_decided_as_the_sympy_one_or_left_to_it(
    op: str, left: list[int], right: list[int], constant: int
) -> None:
    light_env, light_symbols = _envs(light=True)
    sympy_env, sympy_symbols = _envs(light=False)

    def side(symbols: list[Any], coefficients: list[int], plus: int) -> Any:
        total: Any = plus
        for symbol, c in zip(symbols, coefficients, strict=True):
            total = total + c * symbol
        return total

    lhs = side(light_symbols, left, constant)
    rhs = side(light_symbols, right, 0)
    with light_sizes():
        light_relation = relation(op, lhs, rhs)
        assert isinstance(light_relation, AffineRelation | bool)
        light = light_env.decide(light_relation)
    want = sympy_env.decide(
        _SYMPY_RELATIONS[op](side(sympy_symbols, left, constant), side(sympy_symbols, right, 0))
    )
    # sympy may decide more (its relations evaluate on construction: `1 + 2*k != 0` of an
    # integer k); the light capture then stops (`evaluate` raises NeedsSympy), never differs.
    assert light is None or light == want


def test_a_light_capture_guards_as_the_sympy_one() -> None:
    light_env, (s0, _, i0, _) = _envs(light=True)
    sympy_env, _ = _envs(light=False)
    with light_sizes():
        assert light_env.evaluate(relation(">", s0, i0)) is True
        with pytest.raises(NeedsSympy):
            light_env.evaluate(relation(">", s0, 4))  # a new guard: sympy records it
        light_guards = [guard.text for guard in light_env.produce_guards()]
    assert light_guards == [guard.text for guard in sympy_env.produce_guards()]
    assert light_env.render(2 * s0 - 1) == sympy_env.render(2 * sympy_env.symbols()[0].symbol - 1)


def test_a_pinned_size_or_a_divisor_stops_the_light_capture() -> None:
    env = ShapeEnv()
    with light_sizes():
        s0 = env.create_symbol(8, "L['x'].shape[0]", lo=8, hi=8)
        with pytest.raises(NeedsSympy):
            env.simplify(s0 + 1)
        with pytest.raises(NeedsSympy):
            env.produce_guards()


@pytest.mark.parametrize("op", sorted(_SYMPY_RELATIONS))
def test_relation_builds_sympy_relations_outside_a_light_capture(op: str) -> None:
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    assert relation(op, s0, 3) == _SYMPY_RELATIONS[op](s0, 3)
    assert relation(op, AffineSize.symbol("s0"), 3) == _SYMPY_RELATIONS[op](s0, 3)
    with pytest.raises(ValueError, match="expected one of"):
        relation("=", s0, 3)


@pytest.mark.parametrize("light", [True, False])
def test_the_largest_hint_takes_each_index_at_its_end(light: bool) -> None:
    # s0 = 9, s1 = 5, i0 in [0, s0 - 1], i1 in [0, i0 - 1]: the estimate a cost rule reads
    # is the same in both representations.
    env, (s0, s1, i0, i1) = _envs(light)
    with light_sizes() if light else contextlib.nullcontext():
        assert env.largest_hint(i0 + 1) == 9
        assert env.largest_hint(s0 - i0) == 9
        assert env.largest_hint(2 * s1 + i1) == 10 + 7
        assert env.largest_hint(s0 - i1 - 1) == 8
        assert env.largest_hint(7) == 7
    opaque = AffineSize.symbol("r5") if light else sympy.Symbol("r5", integer=True)
    assert env.largest_hint(opaque + 1) is None


def test_the_largest_hint_of_a_clamp_is_its_largest_at_the_bounds() -> None:
    env, (s0, _, i0, _) = _envs(False)
    assert env.largest_hint(sympy.Min(i0 + 3, s0)) == 9
    assert env.largest_hint(sympy.Max(0, s0 - 2 * i0)) == 9
    assert env.largest_hint(s0 * (i0 + 1)) == 81
