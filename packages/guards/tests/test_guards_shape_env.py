"""ShapeEnv: symbols, duck sizing, 0/1 specialization, guards simplified against facts."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from numpile_guards import ShapeEnv, SymInt
from numpile_guards.symbolic import bounds, python_text, shape_guard_as_guard

X0 = "L['x'].shape[0]"
Y0 = "L['y'].shape[0]"


def _texts(env: ShapeEnv) -> list[str]:
    return [guard.text for guard in env.produce_guards()]


def test_zero_and_one_are_specialized() -> None:
    env = ShapeEnv()
    assert env.create_symbol(0, X0) == 0
    assert env.create_symbol(1, Y0) == 1
    assert env.symbols() == ()


def test_duck_sizing_shares_a_symbol_and_guards_equality() -> None:
    env = ShapeEnv()
    a = env.create_symbol(8, X0)
    b = env.create_symbol(8, Y0)
    c = env.create_symbol(9, "L['z'].shape[0]")
    assert a is b and c is not a
    assert f"{Y0} == {X0}" in _texts(env)
    plain = ShapeEnv(duck=False)
    assert plain.create_symbol(8, X0) is not plain.create_symbol(8, Y0)


def test_branch_guards_are_recorded_once_and_decided_ones_are_not() -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(5, X0)
    assert env.evaluate(s0 >= 2) is True  # implied by the size range: no guard
    assert _texts(env) == [f"{X0} >= 2"]
    assert env.evaluate(s0 > 4) is True
    assert env.evaluate(s0 > 4) is True
    assert env.evaluate(s0 + 1 > 5) is True  # the same relation, another spelling
    assert _texts(env) == [f"{X0} >= 5"]
    assert env.evaluate(s0 < 3) is False  # decided by the range learned above


def test_failed_branch_records_the_negation() -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(3, X0)
    assert env.evaluate(sympy.Gt(s0, 4)) is False
    texts = _texts(env)
    assert any("<= 4" in text for text in texts)
    guards = env.produce_guards()
    assert all(g.evaluate({"x": np.zeros(3)}, {}, None) for g in guards)
    assert not all(g.evaluate({"x": np.zeros(7)}, {}, None) for g in guards)


def test_divisibility_is_kept_and_simplifies() -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(12, X0)
    assert env.evaluate(sympy.Eq(sympy.Mod(s0, 4), 0)) is True
    assert env.info(s0).divisor == 4
    assert env.simplify(sympy.Mod(s0, 2)) == 0
    assert env.evaluate(sympy.Eq(sympy.Mod(s0, 2), 0)) is True
    assert _texts(env) == [f"{X0} >= 2", f"{X0} % 4 == 0"]
    # A floor that is exact keeps its integer form (backends print it with integer division).
    assert env.simplify(sympy.floor(s0 / 4)) == sympy.floor(s0 / 4)
    assert env.simplify(sympy.floor(s0 / 2) * 2) == s0


def test_mark_range_is_guarded_and_not_duck_sized() -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(8, X0, lo=4, hi=64)
    assert env.create_symbol(8, Y0) is not s0
    assert _texts(env)[:2] == [f"{X0} >= 4", f"{X0} <= 64"]
    assert env.evaluate(s0 <= 100) is True
    assert len(env.produce_guards()) == 3


def test_specialize_pins_the_value_with_a_reason() -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(6, X0)
    assert env.specialize(2 * s0, reason="range()") == 12
    guards = env.produce_guards()
    assert [g.text for g in guards] == [f"{X0} == 6"]


def test_symint_arithmetic_and_comparisons() -> None:
    env = ShapeEnv()
    n = SymInt(env.create_symbol(10, X0), env)
    assert str(n * 2 - 1) == "2*s0 - 1"
    assert (n // 5).hint == 2
    assert (n % 3).hint == 1
    assert (n + 0) is not None and n - n == 0
    assert list(range(n))[-1] == 9
    assert n == 10  # comparison with a constant specializes


def test_python_text_keeps_integer_semantics() -> None:
    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    names = {s0: "a", s1: "b"}
    assert python_text(sympy.Eq(sympy.Mod(3 * s0, 4), 0), names) == "(3*a) % 4 == 0"
    assert python_text(s0 * s1 - 2, names) == "a*b - 2"
    assert python_text(sympy.floor(s0 / 2), names) == "(a // 2)"
    for a in range(2, 9):
        assert eval(python_text(3 * s0 / 2 + s0, {s0: "a"}).replace("a", str(2 * a))) == 5 * a


def test_bounds() -> None:
    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    ranges = {s0: (2, 10), s1: (3, None)}
    assert bounds(s0 * s1, ranges) == (6, None)
    assert bounds(-s0 + 4, ranges) == (-6, 2)
    assert bounds(sympy.Mod(s1, 4), ranges) == (0, 3)


def test_shape_guard_is_a_compiled_shape_relation_with_a_reason() -> None:
    from numpile_guards import GuardKind, compile_guards, guard_failure

    env = ShapeEnv()
    s0 = env.create_symbol(8, X0)
    env.evaluate(sympy.Eq(sympy.Mod(s0, 4), 0))
    guards = [shape_guard_as_guard(g) for g in env.produce_guards()]
    assert all(guard.kind is GuardKind.SHAPE_RELATION for guard in guards)
    check = compile_guards(guards)
    assert check({"x": np.zeros(12)}, {}, None)
    assert not check({"x": np.zeros(10)}, {}, None)
    assert not check({"x": np.zeros(1)}, {}, None)
    failure = guard_failure(guards[1], {"x": np.zeros(10)}, {}, None)
    assert failure is not None and "L['x'].shape[0] % 4 == 0" in failure


def test_hint_of_a_non_integer_raises() -> None:
    env = ShapeEnv()
    s0 = env.create_symbol(5, X0)
    with pytest.raises(ValueError, match="not an integer"):
        env.hint(s0 / 2)
