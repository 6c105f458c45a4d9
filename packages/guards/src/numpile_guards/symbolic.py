"""Symbolic sizes at capture time: `SymInt`, shape guards, and their Python rendering.

A `SymInt` is what traced code sees for a dynamic size (`x.shape[0]`): it
does integer arithmetic symbolically, and turns into a plain int (with a
guard) wherever Python needs one (`range(n)`, `bool(n > 3)`, indexing).
A `ShapeGuard` is one symbolic relation a cache entry relies on, rendered as
Python over sources (`L['x'].shape[0] % 4 == 0`); `shape_guard_as_guard`
plugs it into the guard list as a SHAPE_RELATION guard.

    >>> from numpile_guards.shape_env import ShapeEnv
    >>> env = ShapeEnv()
    >>> n = SymInt(env.create_symbol(6, "L['x'].shape[0]"), env)
    >>> (n * 2 + 1).expr, int(n // 4 == 1)
    (2*s0 + 1, 1)
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .affine_size import AffineSize, light_active, relation
from .guard import Guard, GuardKind
from .source import Source, evaluation_names

if TYPE_CHECKING:
    import sympy

    from .shape_env import ShapeEnv

# NOTE: sympy is imported inside the functions that use it: `import numpile` must not pay for it.

Bound = int | None


@attrs.frozen
class ShapeGuard:
    """One symbolic relation an entry relies on: the sympy `relation` and its Python `text`.

    `reason` says why capture needed it (a branch, "duck sizing", "specialized").

        >>> import numpy as np, sympy
        >>> ShapeGuard(sympy.true, "L['x'].shape[0] >= 2", "size range").evaluate(
        ...     {"x": np.zeros(3)}, {}, None)
        True
    """

    relation: Any = attrs.field(eq=False)
    text: str
    reason: str = attrs.field(default="", eq=False)

    def evaluate(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> bool:
        """Whether the relation holds for these inputs (a missing source fails)."""
        try:
            return bool(eval(self.text, evaluation_names(L, G, F)))
        except Exception:
            return False

    def __str__(self) -> str:
        return f"SHAPE({self.text})" + (f"  # {self.reason}" if self.reason else "")


@attrs.frozen
class RelationSource(Source):
    """A source whose value is a shape relation's truth: `(L['x'].shape[0] >= 2)`.

    The source of a SHAPE_RELATION guard: it names the relation in listings and reasons.

        >>> RelationSource("L['x'].shape[0] >= 2").name
        "(L['x'].shape[0] >= 2)"
    """

    text: str

    @property
    def name(self) -> str:
        return f"({self.text})"


def shape_guard_as_guard(guard: ShapeGuard) -> Guard:
    """`guard` as a SHAPE_RELATION guard (inlined in the compiled check as its text).

    >>> import sympy
    >>> str(shape_guard_as_guard(ShapeGuard(sympy.true, "L['n'] > 1")))
    "SHAPE_RELATION(L['n'] > 1)"
    """
    return Guard(GuardKind.SHAPE_RELATION, RelationSource(guard.text), guard)


# --- Python rendering -------------------------------------------------------------------

_REL = {"==": "==", "!=": "!=", ">=": ">=", "<=": "<=", ">": ">", "<": "<"}


def python_text(expr: Any, names: Mapping[sympy.Symbol, str]) -> str:
    """`expr` as a Python expression, each symbol replaced by its source text.

    Integer semantics are kept: `Mod` is `%`, `floor(a/b)` is `//`.

        >>> import sympy
        >>> s0 = sympy.Symbol("s0", integer=True, positive=True)
        >>> python_text(sympy.Eq(sympy.Mod(s0, 4), 0), {s0: "L['x'].shape[0]"})
        "L['x'].shape[0] % 4 == 0"
    """
    import sympy

    return _text(sympy.sympify(expr), names, 0)


def _text(expr: Any, names: Mapping[sympy.Symbol, str], outer: int) -> str:
    # `outer` is the binding strength of the enclosing operator: 0 none, 1 +, 2 *, 3 **.
    import sympy

    if expr is sympy.true:
        return "True"
    if expr is sympy.false:
        return "False"
    if isinstance(expr, sympy.Symbol):
        return names.get(expr, expr.name)
    if expr.is_Integer:
        text = str(int(expr))
        return f"({text})" if int(expr) < 0 and outer else text
    if isinstance(expr, sympy.Rel):
        lhs = _text(expr.lhs, names, 1)
        rhs = _text(expr.rhs, names, 1)
        return _wrap(f"{lhs} {_REL[expr.rel_op]} {rhs}", outer > 0)
    if isinstance(expr, sympy.And | sympy.Or):
        word = " and " if isinstance(expr, sympy.And) else " or "
        return _wrap(word.join(_text(arg, names, 1) for arg in expr.args), outer > 0)
    if isinstance(expr, sympy.Not):
        return _wrap(f"not {_text(expr.args[0], names, 1)}", outer > 0)
    if isinstance(expr, sympy.Add):
        terms = sorted(expr.args, key=lambda arg: (arg.is_number, sympy.default_sort_key(arg)))
        text = _text(terms[0], names, 1)
        for term in terms[1:]:
            if term.could_extract_minus_sign():
                text += f" - {_text(-term, names, 2)}"
            else:
                text += f" + {_text(term, names, 1)}"
        return _wrap(text, outer > 1)
    if isinstance(expr, sympy.Mul):
        numerator, denominator = sympy.fraction(expr)
        if denominator != 1:
            # Exact by the guards that made it a size: integer division.
            return _wrap(f"{_text(numerator, names, 2)} // {_text(denominator, names, 3)}", True)
        factors = [_text(arg, names, 2) for arg in expr.args]
        return _wrap("*".join(factors), outer > 2)
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
        return _wrap(f"{_text(expr.base, names, 3)}**{int(expr.exp)}", outer > 2)
    if isinstance(expr, sympy.Mod):
        left = _text(expr.args[0], names, 3)
        return _wrap(f"{left} % {_text(expr.args[1], names, 3)}", outer > 1)
    if isinstance(expr, sympy.floor):
        numerator, denominator = sympy.fraction(sympy.together(expr.args[0]))
        return _wrap(f"{_text(numerator, names, 2)} // {_text(denominator, names, 3)}", True)
    if expr.is_Rational:
        return f"({int(expr.p)} / {int(expr.q)})"
    raise ValueError(f"cannot render size expression {expr} as Python")


def _wrap(text: str, needed: bool) -> str:
    return f"({text})" if needed else text


# --- bounds ------------------------------------------------------------------------------


def bounds(expr: Any, ranges: Mapping[sympy.Symbol, tuple[int, Bound]]) -> tuple[Bound, Bound]:
    """Lower and upper bounds of `expr` over the symbol `ranges` (None: unknown or infinite).

    >>> import sympy
    >>> s0 = sympy.Symbol("s0", integer=True, positive=True)
    >>> bounds(3 * s0 - 2, {s0: (2, None)})
    (4, None)
    """
    import sympy

    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return int(expr), int(expr)
    if isinstance(expr, sympy.Symbol):
        low: Bound
        high: Bound
        low, high = ranges.get(expr, (0, None))
        return low, high
    if isinstance(expr, sympy.Add):
        low_sum: Bound = 0
        high_sum: Bound = 0
        for arg in expr.args:
            low, high = bounds(arg, ranges)
            low_sum = None if low_sum is None or low is None else low_sum + low
            high_sum = None if high_sum is None or high is None else high_sum + high
        return low_sum, high_sum
    if isinstance(expr, sympy.Mul):
        coefficient, rest = expr.as_coeff_Mul()
        if coefficient != 1 and coefficient.is_Integer:
            low, high = bounds(rest, ranges)
            return _scale(int(coefficient), low, high)
        low_product: Bound = 1
        high_product: Bound = 1
        for arg in expr.args:
            low, high = bounds(arg, ranges)
            if low is None or low < 0:
                return None, None
            low_product = None if low_product is None else low_product * low
            high_product = None if high_product is None or high is None else high_product * high
        return low_product, high_product
    if isinstance(expr, sympy.Mod) and expr.args[1].is_Integer and int(expr.args[1]) > 0:
        return 0, int(expr.args[1]) - 1
    return None, None


def _scale(factor: int, low: Bound, high: Bound) -> tuple[Bound, Bound]:
    if factor >= 0:
        return (None if low is None else factor * low), (None if high is None else factor * high)
    return (None if high is None else factor * high), (None if low is None else factor * low)


# --- SymInt -------------------------------------------------------------------------------


def _lift(value: Any) -> Any:
    if isinstance(value, SymInt):
        return value.expr
    if isinstance(value, bool):
        raise TypeError("bool")
    if isinstance(value, int) and light_active():
        return value
    import sympy

    if isinstance(value, int):
        return sympy.Integer(value)
    raise TypeError(type(value).__name__)


_PYTHON_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class SymInt:
    """A size known symbolically at capture time: `expr` over size symbols of `env`.

    Arithmetic stays symbolic; comparisons, `int()`, `bool()` and indexing
    evaluate now and record a guard (`ShapeEnv.evaluate` / `specialize`).

        >>> from numpile_guards.shape_env import ShapeEnv
        >>> env = ShapeEnv(); n = SymInt(env.create_symbol(5, "L['x'].shape[0]"), env)
        >>> str(n - 1), n > 3
        ('s0 - 1', True)
    """

    __slots__ = ("env", "expr")

    def __init__(self, expr: Any, env: ShapeEnv) -> None:
        self.env = env
        if isinstance(expr, AffineSize):
            self.expr: Any = expr
            return
        import sympy

        self.expr = sympy.sympify(expr)

    def __repr__(self) -> str:
        return f"SymInt({self.expr})"

    def __str__(self) -> str:
        return str(self.expr)

    @property
    def hint(self) -> int:
        """The value for the sizes seen at capture time (no guard)."""
        value: int = self.env.hint(self.expr)
        return value

    def _binary(self, other: Any, fn: Callable[[Any, Any], Any], swap: bool) -> Any:
        try:
            right = _lift(other)
        except TypeError:
            return NotImplemented
        left = self.expr
        if swap:
            left, right = right, left
        return wrap_size(fn(left, right), self.env)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, operator.add, False)

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, operator.add, True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, operator.sub, False)

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, operator.sub, True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, operator.mul, False)

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, operator.mul, True)

    def __floordiv__(self, other: Any) -> Any:
        return self._binary(other, _floordiv, False)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._binary(other, _floordiv, True)

    def __mod__(self, other: Any) -> Any:
        return self._binary(other, _mod, False)

    def __rmod__(self, other: Any) -> Any:
        return self._binary(other, _mod, True)

    def __truediv__(self, other: Any) -> Any:
        return int(self) / other

    def __rtruediv__(self, other: Any) -> Any:
        return other / int(self)

    def __pow__(self, other: Any) -> Any:
        return int(self) ** other

    def __neg__(self) -> Any:
        return wrap_size(-self.expr, self.env)

    def __pos__(self) -> SymInt:
        return self

    def __abs__(self) -> Any:
        return abs(int(self))

    def _compare(self, other: Any, op: str) -> Any:
        try:
            right = _lift(other)
        except TypeError:
            if isinstance(other, float):
                return _PYTHON_COMPARISONS[op](int(self), other)
            return NotImplemented
        return self.env.evaluate(relation(op, self.expr, right), reason="comparison of sizes")

    def __eq__(self, other: object) -> Any:
        return self._compare(other, "==")

    def __ne__(self, other: object) -> Any:
        return self._compare(other, "!=")

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, "<")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, ">")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, ">=")

    def __hash__(self) -> int:
        return hash(int(self))

    def __bool__(self) -> bool:
        return self.env.evaluate(relation("!=", self.expr, 0), reason="truth of a size")

    def __int__(self) -> int:
        return self.env.specialize(self.expr, reason="a Python int was needed")

    def __index__(self) -> int:
        return self.env.specialize(self.expr, reason="a Python int was needed (index)")

    def __float__(self) -> float:
        return float(int(self))


def _floordiv(left: Any, right: Any) -> Any:
    import sympy

    return sympy.floor(left / right)


def _mod(left: Any, right: Any) -> Any:
    import sympy

    return sympy.Mod(left, right)


def is_size_expr(value: Any) -> bool:
    """Whether `value` is a sympy expression (a symbolic size), without importing sympy.

    No value can be one before sympy is loaded, so a capture of static sizes never loads it.

        >>> is_size_expr(4)
        False
    """
    # Another thread may be importing sympy right now: a module without `Basic` yet has
    # made no expression either.
    if isinstance(value, AffineSize):
        return True
    basic = getattr(sys.modules.get("sympy"), "Basic", None)
    return basic is not None and isinstance(value, basic)


def wrap_size(expr: Any, env: ShapeEnv) -> Any:
    """A size for traced code: an int when `expr` is a number, else a `SymInt`.

    >>> import sympy
    >>> wrap_size(sympy.Integer(4), None)
    4
    """
    if isinstance(expr, AffineSize) and env is not None:
        return SymInt(env.simplify(expr), env)  # an affine size with a symbol: never an int
    import sympy

    if env is None:
        expr = sympy.sympify(expr)
    else:
        expr = env.pin_if_complex(env.simplify(expr))
        if isinstance(expr, int):
            return expr
    if expr.is_Integer:
        return int(expr)
    return SymInt(expr, env)
