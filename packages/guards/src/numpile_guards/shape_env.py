"""The symbolic shape environment: sizes as sympy symbols, and the guards capture relied on.

A `ShapeEnv` lives for one capture. Each dynamic size of an input becomes a
symbol `s0, s1, ...` (integer, positive) with the size seen now as its hint.
Sizes 0 and 1 are specialized (they change broadcasting and contiguity);
equal sizes share one symbol (duck sizing), which the guards check as an
equality between their sources. Branching on a size during capture
(`evaluate`) records the branch taken as a guard, simplified against what is
known (ranges, divisibility) and deduplicated; `specialize` pins a size to its
value where a symbolic value cannot be carried.

    >>> import sympy
    >>> env = ShapeEnv()
    >>> s0 = env.create_symbol(8, "L['x'].shape[0]")
    >>> env.create_symbol(8, "L['y'].shape[0]") is s0, env.evaluate(sympy.Eq(s0 % 4, 0))
    (True, True)
    >>> [guard.text for guard in env.produce_guards()]
    ["L['x'].shape[0] >= 2", "L['y'].shape[0] == L['x'].shape[0]", "L['x'].shape[0] % 4 == 0"]
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .affine import NotAffineError, affine_form, eliminate
from .affine_size import AffineRelation, AffineSize, NeedsSympy, light_active
from .symbolic import ShapeGuard, bounds, python_text

if TYPE_CHECKING:
    import sympy

# NOTE: sympy is imported inside the methods that use it: `import numpile` must not pay for it.

log = logging.getLogger("numpile.guards.dynamic")

# The names `create_symbol` gives input sizes: `s0`, `s1`, ...
_SIZE_NAME = re.compile(r"s\d+")


def is_size_symbol(symbol: Any) -> bool:
    """Whether `symbol` is an input size a shape environment created (`s<k>`), as opposed to
    a loop index (`i<k>`), a data-dependent size (`u<k>`) or a code generator's own name.

    >>> is_size_symbol(ShapeEnv().create_symbol(5, "L['x'].shape[0]"))
    True
    """
    return _SIZE_NAME.fullmatch(str(symbol)) is not None


# NOTE: sizes below this are specialized; a dynamic size is at least this (its guard).
_MIN_DYNAMIC = 2
# A size expression with more nodes than this pins its sizes to their values (guarded): sympy's
# reasoning on deep nests, such as a while loop's repeated floor divisions of a size, costs
# seconds per comparison and grows with every iteration.
COMPLEX_SIZE_NODES = 20


@attrs.frozen
class SymbolInfo:
    """What the environment knows of one size symbol: sources, hint, range, divisor.

    `sources[0]` is the canonical source (the first place the size was read);
    `hi` None means unbounded; every size is a multiple of `divisor`.
    """

    symbol: sympy.Symbol
    sources: tuple[str, ...]
    hint: int
    lo: int = _MIN_DYNAMIC
    hi: int | None = None
    divisor: int = 1


class ShapeEnv:
    """Size symbols, their facts, and the guards recorded while capturing one function.

    `duck` shares one symbol between equal sizes; `specialize_zero_one` keeps 0 and 1 static.

        >>> env = ShapeEnv()
        >>> env.create_symbol(1, "L['x'].shape[0]")
        1
    """

    def __init__(self, *, duck: bool = True, specialize_zero_one: bool = True) -> None:
        self.duck = duck
        self.specialize_zero_one = specialize_zero_one
        self._info: dict[sympy.Symbol, SymbolInfo] = {}
        self._by_value: dict[int, sympy.Symbol] = {}
        # NOTE: insertion-ordered, keyed by the simplified relation: dedup keeps the first reason.
        self._guards: dict[sympy.Basic, ShapeGuard] = {}
        self._texts: dict[str, ShapeGuard] = {}
        # NOTE: the loop indices whose bodies are being traced, innermost last: symbol ->
        # (least, greatest) value as expressions over sizes and outer indices (None: not
        # known). They have no hint, so no guard is ever recorded on them.
        self._indices: dict[sympy.Symbol, tuple[Any, Any]] = {}
        # NOTE: the unbacked (data-dependent) sizes: symbol -> (least, greatest) value as
        # expressions over sizes (None: unbounded). No hint either; they live for the capture.
        self._unbacked: dict[sympy.Symbol, tuple[Any, Any]] = {}

    # --- symbols --------------------------------------------------------------------------

    def create_symbol(
        self, value: int, source: str, *, lo: int | None = None, hi: int | None = None
    ) -> int | sympy.Expr:
        """The size `value` read from `source` (a Python expression): a symbol, or `value` itself.

        `lo`/`hi` (from `mark_dynamic(min=, max=)`) bound the symbol; a bounded
        size never shares another's symbol.

            >>> ShapeEnv().create_symbol(5, "L['x'].shape[0]")
            s0
        """
        value = int(value)
        if self.specialize_zero_one and value in (0, 1):
            return value
        bounded = lo is not None or hi is not None
        if self.duck and not bounded and value in self._by_value:
            symbol = self._by_value[value]
            info = self._info[symbol]
            self._info[symbol] = attrs.evolve(info, sources=(*info.sources, source))
            return symbol
        name = f"s{len(self._info)}"
        made: Any
        if light_active():
            made = AffineSize.symbol(name)
        else:
            import sympy

            made = sympy.Symbol(name, integer=True, positive=True)
        low = max(_MIN_DYNAMIC, lo or 0) if self.specialize_zero_one else max(0, lo or 0)
        self._info[made] = SymbolInfo(made, (source,), value, low, hi)
        if not bounded:
            self._by_value.setdefault(value, made)
        log.debug("create_symbol %s = %d for %s", made, value, source)
        return made

    def push_index(self, symbol: sympy.Symbol, low: Any, high: Any) -> None:
        """Bound a loop index (or an int known only at run time) while its body is traced:
        `low <= symbol <= high`, expressions over sizes and outer indices (None: unknown).

            >>> import sympy
            >>> env = ShapeEnv(); s0 = env.create_symbol(5, "L['x'].shape[0]")
            >>> i0, i1 = sympy.symbols("i0 i1", integer=True)
            >>> env.push_index(i0, 0, s0 - 1); env.push_index(i1, 0, i0 - 1)
            >>> env.evaluate(sympy.Le(i1, s0)), env.decide(sympy.Le(i1, 2))
            (True, None)
        """
        self._indices[symbol] = (low, high)

    def create_unbacked(self, symbol: sympy.Symbol, low: Any = 0, high: Any = None) -> None:
        """Record a data-dependent size (`u<k>`, known only at run time) with the bounds its
        op implies: `low <= symbol <= high`, expressions over sizes (None: unbounded).

        The simplifier uses them (`x[m][: x.shape[0]]` needs no clamp); a relation they do
        not decide cannot be guarded (`evaluate` raises `DataDependentGuard`).

            >>> import sympy
            >>> env = ShapeEnv(); s0 = env.create_symbol(5, "L['x'].shape[0]")
            >>> u0 = sympy.Symbol("u0", integer=True, nonnegative=True)
            >>> env.create_unbacked(u0, 0, 2 * s0)
            >>> env.decide(sympy.Le(u0, 2 * s0)), env.decide(sympy.Le(u0, s0))
            (True, None)
        """
        known = self._unbacked.get(symbol)
        if known is not None and known != (low, high):
            low, high = _tighter(known[0], low, least=True), _tighter(known[1], high, least=False)
        self._unbacked[symbol] = (low, high)

    def unbacked_bounds(self, symbol: sympy.Symbol) -> tuple[Any, Any] | None:
        """The bounds recorded for the unbacked size `symbol`, or None if it is not one."""
        return self._unbacked.get(symbol)

    def is_unbacked(self, expr: Any) -> bool:
        """Whether `expr` mentions a data-dependent size (one with no value at capture time).

        >>> import sympy
        >>> ShapeEnv().is_unbacked(sympy.Symbol("u0") + 1)
        True
        """
        free = getattr(expr, "free_symbols", ())
        return any(s not in self._info and s not in self._indices for s in free)

    def pop_index(self, symbol: sympy.Symbol) -> None:
        """Forget a loop index once its body is traced."""
        self._indices.pop(symbol, None)

    def decide(self, relation: Any) -> bool | None:
        """True/False when the known facts (ranges, divisors, loop index bounds) decide
        `relation` for every admitted value, else None; records no guard.

            >>> import sympy
            >>> env = ShapeEnv(); s0 = env.create_symbol(5, "L['x'].shape[0]")
            >>> env.decide(s0 > 1), env.decide(s0 > 4)
            (True, None)
        """
        if isinstance(relation, bool):
            return relation
        if isinstance(relation, AffineRelation):
            try:
                return self._decide_affine(relation)
            except NotAffineError:
                raise NeedsSympy(f"deciding {relation}") from None
        import sympy

        return self._decide(sympy.sympify(relation))

    def symbols(self) -> tuple[SymbolInfo, ...]:
        """Every symbol created, in creation order."""
        return tuple(self._info.values())

    def info(self, symbol: sympy.Symbol) -> SymbolInfo:
        """The facts about `symbol`."""
        return self._info[symbol]

    def hint(self, expr: Any) -> Any:
        """The value of `expr` for the sizes seen at capture time (an int, or a bool).

        >>> env = ShapeEnv(); s0 = env.create_symbol(6, "L['x'].shape[0]")
        >>> env.hint(2 * s0 + 1)
        13
        """
        if isinstance(expr, bool | int):
            return expr
        import sympy

        expr = sympy.sympify(expr)
        _check_no_index(expr, self._indices)
        _check_backed(expr, self._unbacked)
        value = expr.xreplace({s: sympy.Integer(i.hint) for s, i in self._info.items()})
        if value is sympy.true or value is sympy.false:
            return bool(value)
        if value.is_Integer:
            return int(value)
        if value.is_Rational:
            raise ValueError(f"size expression {expr} is not an integer ({value})")
        return bool(value) if value.is_Relational else int(value)

    def largest_hint(self, size: Any) -> int | None:
        """An estimate of the largest value `size` takes at the sizes seen at capture time,
        each loop index anywhere in its bounds: for cost rules, never a guard. None where a
        symbol without a bound (a data-dependent size, an opaque run-time int) leaves it open.

            >>> import sympy
            >>> env = ShapeEnv(); s0 = env.create_symbol(6, "L['x'].shape[0]")
            >>> i0 = sympy.Symbol("i0", integer=True); env.push_index(i0, 0, s0 - 1)
            >>> env.largest_hint(i0 + 1), env.largest_hint(s0 - i0)
            (6, 6)
            >>> env.largest_hint(sympy.Symbol("u0")) is None
            True
        """
        return _largest(self, size, _BOUND_DEPTH)

    # --- simplification -------------------------------------------------------------------

    def simplify(self, expr: Any) -> Any:
        """`expr` simplified with the divisibility facts (`Mod(s0, 2)` is 0 when 4 divides s0).

        >>> import sympy
        >>> env = ShapeEnv(); s0 = env.create_symbol(8, "L['x'].shape[0]")
        >>> env.evaluate(sympy.Eq(sympy.Mod(s0, 4), 0)); env.simplify(sympy.Mod(s0, 2))
        True
        0
        """
        if isinstance(expr, bool | int):
            return expr
        if isinstance(expr, AffineSize):
            for symbol in expr.free_symbols:
                info = self._info.get(symbol)
                if info is not None and (info.divisor > 1 or info.hi == info.lo):
                    raise NeedsSympy(f"simplifying {expr} (a divisor or a pinned size)")
            return expr
        import sympy

        expr = sympy.sympify(expr)
        # Sizes pinned by a guard (specialized) are their value from then on.
        fixed = {s: sympy.Integer(i.lo) for s, i in self._info.items() if i.hi == i.lo}
        if fixed and expr.free_symbols & fixed.keys():
            expr = expr.xreplace(fixed)
        divided = {s: i.divisor for s, i in self._info.items() if i.divisor > 1}
        if not divided or not (expr.free_symbols & divided.keys()):
            return expr
        quotients = {s: sympy.Symbol(f"_q_{s}", integer=True, positive=True) for s in divided}
        forward = {s: divided[s] * quotients[s] for s in divided}
        backward = {quotients[s]: s / divided[s] for s in divided}
        result = sympy.sympify(expr.xreplace(forward)).xreplace(backward)
        if has_fraction(result) and not has_fraction(expr):
            return expr  # keep `floor(s0/2)`: backends print it in exact integer arithmetic
        return result

    def pin_if_complex(self, expr: Any) -> Any:
        """`expr` as an int, its sizes pinned (guarded), once it has more than
        `COMPLEX_SIZE_NODES` nodes; else `expr` unchanged (as where a loop index is in it).

        >>> import sympy
        >>> env = ShapeEnv(); s0 = env.create_symbol(7, "L['x'].shape[0]")
        >>> deep = s0
        >>> for _ in range(12): deep = sympy.floor(3 * deep / 2) + 1
        >>> env.pin_if_complex(s0 + 1), env.pin_if_complex(deep)
        (s0 + 1, 1064)
        >>> [guard.text for guard in env.produce_guards()]
        ["L['x'].shape[0] == 7"]
        """
        if isinstance(expr, bool | int | AffineSize):
            return expr  # an affine size has a node per term, far below the limit
        import sympy

        if not _more_nodes_than(expr, COMPLEX_SIZE_NODES):
            return expr
        free = expr.free_symbols
        if not free <= self._info.keys():
            return expr
        for symbol in sorted(free, key=str):
            self.specialize(symbol, reason="a size expression too deep to reason about")
        return int(sympy.sympify(expr).xreplace({s: self._info[s].hint for s in free}))

    def _decide(
        self, relation: sympy.Basic, *, divisors: bool = True, affine: bool = True
    ) -> bool | None:
        # True/False when the facts decide `relation` for every admitted size, else None.
        # `affine`: answer an affine relation with dict arithmetic (`_decide_affine`), the
        # same answer as the sympy path below at a fraction of its cost.
        import sympy

        if affine:
            try:
                return self._decide_affine(relation)
            except NotAffineError:
                pass
        if divisors:
            relation = self.simplify(relation)
        if relation is sympy.true or relation is sympy.false:
            return bool(relation)
        if not isinstance(relation, sympy.Rel):
            return None
        difference = sympy.expand(relation.lhs - relation.rhs)
        ranges = {s: (i.lo, i.hi) for s, i in self._info.items()}
        if difference.free_symbols & (self._indices.keys() | self._unbacked.keys()):
            low = self._index_extreme(difference, ranges, least=True)
            high = self._index_extreme(difference, ranges, least=False)
        else:
            low, high = bounds(difference, ranges)
        return _sign_decides(str(relation.rel_op), low, high)

    def _decide_affine(self, relation: Any) -> bool | None:
        # `_decide` for a relation between affine forms whose sizes have no divisor or pinned
        # value (those need `simplify`); raises `NotAffineError` where sympy must answer.
        # Mirrors the sympy path step by step: the same elimination order, the same ranges.
        op = getattr(relation, "rel_op", None)
        if op not in _REL_OPS:
            raise NotAffineError(relation)
        lhs, rhs = affine_form(relation.lhs), affine_form(relation.rhs)
        if lhs is None or rhs is None:
            raise NotAffineError(relation)
        difference = lhs.plus(rhs, scale=-1)
        for symbol in difference.coefficients:
            info = self._info.get(symbol)
            if info is not None and (info.divisor > 1 or info.hi == info.lo):
                raise NotAffineError(relation)
        ranges = {s: (i.lo, i.hi) for s, i in self._info.items()}
        bounded = {**self._unbacked, **self._indices}
        if any(symbol in bounded for symbol in difference.coefficients):
            least = eliminate(difference, bounded, least=True)
            greatest = eliminate(difference, bounded, least=False)
            low = None if least is None else least.range(ranges)[0]
            high = None if greatest is None else greatest.range(ranges)[1]
        else:
            low, high = difference.range(ranges)
        return _sign_decides(str(op), low, high)

    def _index_extreme(
        self, expr: Any, ranges: dict[sympy.Symbol, tuple[int, int | None]], *, least: bool
    ) -> int | None:
        # A bound on `expr` over the loop indices' bounds: each index (innermost first) is
        # replaced by the bound that moves `expr` the way asked, while `expr` is linear in it
        # with an integer coefficient; then the sizes' ranges bound what is left.
        import sympy

        bounded = {**self._unbacked, **self._indices}
        inside = [symbol for symbol in bounded if symbol in expr.free_symbols]
        if not expr.is_polynomial(*inside):
            return None  # Max, Piecewise, floor of an index: no bound by substitution
        # Innermost index first, then outer ones, then the unbacked sizes (their bounds
        # mention sizes only).
        for symbol in reversed(bounded):
            if symbol not in expr.free_symbols:
                continue
            coefficient = sympy.diff(expr, symbol)
            if not coefficient.is_Integer:
                return None
            low, high = bounded[symbol]
            bound = low if (coefficient > 0) == least else high
            if bound is None:
                return None
            expr = sympy.expand(expr.xreplace({symbol: sympy.sympify(bound)}))
        if expr.free_symbols & bounded.keys():
            return None
        low, high = bounds(expr, ranges)
        return low if least else high

    # --- guards ---------------------------------------------------------------------------

    def evaluate(self, relation: Any, *, reason: str = "") -> bool:
        """The truth of `relation` for the sizes seen now; a guard keeps it true for reuse.

        Relations the known facts already decide record nothing; a bound on one
        size tightens that size's range guard. A relation is a sympy relation
        (`s0 > 4`, `sympy.Eq(s0 % 4, 0)`: Python's `==` on sympy values compares
        expressions, not sizes).

            >>> env = ShapeEnv(); s0 = env.create_symbol(5, "L['x'].shape[0]")
            >>> env.evaluate(s0 > 1), env.evaluate(s0 > 4)
            (True, True)
            >>> [guard.text for guard in env.produce_guards()]
            ["L['x'].shape[0] >= 5"]
        """
        if isinstance(relation, bool):
            return relation
        if isinstance(relation, AffineRelation):
            known = self.decide(relation)
            if known is None:
                raise NeedsSympy(f"a guard {relation}")
            return known
        import sympy

        relation = sympy.sympify(relation)
        decided = self._decide(relation)
        if decided is not None:
            return decided
        _check_no_index(relation, self._indices)
        value = self.hint(relation)
        taken = relation if value else sympy.Not(relation)
        self._record(sympy.simplify_logic(taken) if not taken.is_Relational else taken, reason)
        return bool(value)

    def specialize(self, expr: Any, *, reason: str = "") -> int:
        """Pin `expr` to its value now (guarded): where a size must be a Python int.

        >>> env = ShapeEnv(); s0 = env.create_symbol(5, "L['x'].shape[0]")
        >>> env.specialize(s0 + 1, reason="range()")
        6
        """
        if isinstance(expr, int):
            return expr
        import sympy

        value = self.hint(expr)
        self.evaluate(sympy.Eq(expr, value), reason=reason or "specialized")
        log.info("specialized %s = %d (%s)", self.render(expr), value, reason or "a Python int")
        return int(value)

    def _record(self, relation: sympy.Basic, reason: str) -> None:
        key = _normalize(relation)
        if key in self._guards:
            return
        self._learn(key)
        text = python_text(key, self._source_names())
        self._guards[key] = ShapeGuard(key, text, reason)
        log.debug("guard %s (%s)", text, reason)

    def add_relation(self, text: str, reason: str) -> None:
        """Guard a relation given directly as Python text over sources (e.g. a stride).

        >>> env = ShapeEnv(); env.add_relation("L['x'].strides[0] == 8", "strides")
        >>> [g.text for g in env.produce_guards()]
        ["L['x'].strides[0] == 8"]
        """
        if light_active():
            self._texts.setdefault(text, ShapeGuard(True, text, reason))
            return
        import sympy

        self._texts.setdefault(text, ShapeGuard(sympy.true, text, reason))

    def _learn(self, relation: sympy.Basic) -> None:
        # Turn a recorded relation into facts: bounds of one symbol, divisibility.
        import sympy

        if not isinstance(relation, sympy.Rel):
            return
        difference = sympy.expand(relation.lhs - relation.rhs)
        symbols = difference.free_symbols
        if len(symbols) != 1:
            return
        (symbol,) = symbols
        if symbol not in self._info:
            return
        info = self._info[symbol]
        if relation.rel_op == "==" and isinstance(relation.lhs, sympy.Mod):
            if relation.rhs == 0 and relation.lhs.args[1].is_Integer:
                inner, modulus = relation.lhs.args
                coefficient = inner.coeff(symbol) if inner != symbol else sympy.Integer(1)
                if coefficient.is_Integer and inner == coefficient * symbol:
                    need = int(modulus) // math.gcd(int(modulus), int(coefficient))
                    divisor = math.lcm(info.divisor, need)
                    self._info[symbol] = attrs.evolve(info, divisor=divisor)
            return
        poly = sympy.Poly(difference, symbol) if difference.is_polynomial(symbol) else None
        if poly is None or poly.degree() != 1:
            return
        a, b = (int(c) if c.is_Integer else None for c in poly.all_coeffs())
        if a is None or b is None:
            return
        # a*s + b (op) 0
        op = relation.rel_op
        lo, hi = info.lo, info.hi
        if op == "==" and b % a == 0:
            lo = hi = -b // a
        elif (op in (">=", ">") and a > 0) or (op in ("<=", "<") and a < 0):
            strict = op in (">", "<")
            lo = max(lo, math.ceil((-b + (1 if strict and a > 0 else 0)) / a))
        elif op in (">=", ">", "<=", "<"):
            strict = op in (">", "<")
            limit = math.floor((-b - (1 if strict else 0)) / a) if a > 0 else None
            if limit is None:
                limit = math.floor(-b / a)
            hi = limit if hi is None else min(hi, limit)
        self._info[symbol] = attrs.evolve(info, lo=lo, hi=hi)

    def _source_names(self) -> dict[sympy.Symbol, str]:
        return {symbol: info.sources[0] for symbol, info in self._info.items()}

    def render(self, expr: Any) -> str:
        """`expr` as Python text over its sources.

        >>> env = ShapeEnv(); s0 = env.create_symbol(5, "L['x'].shape[0]")
        >>> env.render(2 * s0)
        "2*L['x'].shape[0]"
        """
        if isinstance(expr, AffineSize):
            return expr.render(self._source_names())
        import sympy

        return python_text(sympy.sympify(expr), self._source_names())

    def produce_guards(self) -> tuple[ShapeGuard, ...]:
        """Every shape guard of the capture: ranges, duck-sizing equalities, recorded relations.

        Range guards come first (cheapest, most discriminating), then equalities.
        """
        # Without a symbol (static sizes) nothing below needs sympy, so it stays unloaded.
        result = self._symbol_guards() if self._info else []
        result += self._texts.values()
        seen = {guard.text for guard in result}
        for guard in self._guards.values():
            if guard.text not in seen and not self._implied_by_range(guard.relation):
                result.append(guard)
                seen.add(guard.text)
        return tuple(result)

    def _symbol_guards(self) -> list[ShapeGuard]:
        # The range guards of every symbol, then its duck-sizing equalities.
        if light_active():
            return self._affine_symbol_guards()
        import sympy

        names = self._source_names()
        result: list[ShapeGuard] = []
        for symbol, info in self._info.items():
            fixed = info.hi is not None and info.hi == info.lo
            if fixed:
                relation = sympy.Eq(symbol, info.lo)
                result.append(ShapeGuard(relation, python_text(relation, names), "specialized"))
                continue
            if info.lo > 0:
                relation = sympy.Ge(symbol, info.lo)
                result.append(ShapeGuard(relation, python_text(relation, names), "size range"))
            if info.hi is not None:
                relation = sympy.Le(symbol, info.hi)
                result.append(ShapeGuard(relation, python_text(relation, names), "size range"))
        for symbol, info in self._info.items():
            for other in info.sources[1:]:
                text = f"{other} == {info.sources[0]}"
                relation = sympy.Eq(symbol, symbol, evaluate=False)
                result.append(ShapeGuard(relation, text, "duck sizing"))
        return result

    def _affine_symbol_guards(self) -> list[ShapeGuard]:
        # `_symbol_guards` of a light capture: the same texts, relations between sizes.
        names = self._source_names()
        result: list[ShapeGuard] = []
        for symbol, info in self._info.items():
            name = names[symbol]
            if info.hi is not None and info.hi == info.lo:
                raise NeedsSympy(f"the guard of the pinned size {symbol}")
            if info.lo > 0:
                relation = AffineRelation(">=", symbol, info.lo)
                result.append(ShapeGuard(relation, f"{name} >= {info.lo}", "size range"))
            if info.hi is not None:
                relation = AffineRelation("<=", symbol, info.hi)
                result.append(ShapeGuard(relation, f"{name} <= {info.hi}", "size range"))
        for symbol, info in self._info.items():
            for other in info.sources[1:]:
                relation = AffineRelation("==", symbol, symbol)
                result.append(ShapeGuard(relation, f"{other} == {info.sources[0]}", "duck sizing"))
        return result

    def _implied_by_range(self, relation: sympy.Basic) -> bool:
        # Single-symbol bounds were folded into the range guards above.
        import sympy

        if not isinstance(relation, sympy.Rel):
            return False
        if len(relation.free_symbols) != 1:
            return False
        return self._decide(relation, divisors=False) is True


class DataDependentGuard(TypeError):  # noqa: N818 - it names the event
    """A relation on a data-dependent size that its bounds do not decide: it has no value
    at capture time, so no guard can record a branch on it (the caller emits a run-time
    check, or the code around it is not captured). A TypeError, as sympy's own
    "cannot determine truth value" was."""


def _check_backed(expr: Any, unbacked: dict[Any, Any]) -> None:
    found = sorted(str(symbol) for symbol in expr.free_symbols if symbol in unbacked)
    if found:
        raise DataDependentGuard(
            f"a guard on the data-dependent size {', '.join(found)} that its bounds do not "
            f"prove: {expr}"
        )


def _tighter(old: Any, new: Any, *, least: bool) -> Any:
    # Two bounds recorded for one unbacked size: keep both (Max of lower, Min of upper).
    if old is None:
        return new
    if new is None:
        return old
    import sympy

    return sympy.Max(old, new) if least else sympy.Min(old, new)


class LoopIndexGuard(Exception):  # noqa: N818 - it names the event
    """A relation on a loop index that its bounds do not decide: capture cannot guard it
    (the index changes per iteration), so the loop is not kept."""


def _check_no_index(expr: Any, indices: dict[Any, Any]) -> None:
    found = sorted(str(symbol) for symbol in expr.free_symbols if symbol in indices)
    if found:
        raise LoopIndexGuard(
            f"a guard on the loop index {', '.join(found)} that its bounds do not prove: {expr}"
        )


def has_fraction(expr: Any) -> bool:
    """Whether `expr` has a non-integer rational coefficient (`s0/2`, not `floor(s0/2)`).

    >>> import sympy
    >>> has_fraction(sympy.Symbol("s0") / 2), has_fraction(sympy.floor(sympy.Symbol("s0") / 2))
    (True, False)
    """
    import sympy

    expr = sympy.sympify(expr)
    if isinstance(expr, sympy.floor | sympy.ceiling | sympy.Mod):
        return False
    if expr.is_Rational:
        return not expr.is_Integer
    return any(has_fraction(arg) for arg in expr.args)


def _normalize(relation: sympy.Basic) -> sympy.Basic:
    # One spelling per relation: `lhs - rhs (op) 0` with cleared denominators, then tidied.
    import sympy

    if not isinstance(relation, sympy.Rel):
        return relation
    if isinstance(relation.lhs, sympy.Mod) and relation.rhs == 0:
        return relation
    difference = sympy.expand(relation.lhs - relation.rhs)
    numerator, denominator = sympy.fraction(sympy.together(difference))
    if denominator.is_number and denominator.is_positive:
        difference = sympy.expand(numerator)
    # Terms with a positive coefficient on the left, the rest on the right: `s0 == s1`.
    left: list[sympy.Expr] = []
    right: list[sympy.Expr] = []
    for term in sympy.Add.make_args(difference):
        (right if term.could_extract_minus_sign() else left).append(term)
    return type(relation)(sympy.Add(*left), -sympy.Add(*right))


def relations_text(guards: Sequence[ShapeGuard]) -> list[str]:
    """The Python texts of `guards`, in order (for listings and logs).

    >>> relations_text([])
    []
    """
    return [guard.text for guard in guards]


def _more_nodes_than(expr: Any, limit: int) -> bool:
    # Whether `expr`'s tree has more than `limit` nodes, without walking past the limit.
    import sympy

    return any(count >= limit for count, _ in enumerate(sympy.preorder_traversal(expr)))


_REL_OPS = frozenset((">=", ">", "<=", "<", "==", "!="))


def _sign_decides(op: str, low: int | None, high: int | None) -> bool | None:
    # Whether `lhs op rhs` holds, given bounds of `lhs - rhs` (None: unbounded), if they tell.
    if op in (">=", ">"):
        if low is not None and (low > 0 or (op == ">=" and low >= 0)):
            return True
        if high is not None and (high < 0 or (op == ">" and high <= 0)):
            return False
    if op in ("<=", "<"):
        if high is not None and (high < 0 or (op == "<=" and high <= 0)):
            return True
        if low is not None and (low > 0 or (op == "<" and low >= 0)):
            return False
    if op in ("==", "!=") and low is not None and low == high == 0:
        return op == "=="
    if op in ("==", "!="):
        excluded = (low is not None and low > 0) or (high is not None and high < 0)
        if excluded:
            return op == "!="
    return None


# NOTE: how deep `largest_hint` follows bounds that name other indices (`j < i < s0`).
_BOUND_DEPTH = 4


def _largest(env: ShapeEnv, size: Any, depth: int) -> int | None:
    # An affine size is largest at each index's upper bound where its coefficient is positive
    # (lower bound where negative); a sympy expression (clamps, products) is tried at every
    # combination of its indices' bounds.
    if isinstance(size, bool | int):
        return int(size)
    if isinstance(size, AffineSize):
        total = size.constant
        for name, coefficient in size.terms:
            value = _symbol_value(env, AffineSize.symbol(name), coefficient > 0, depth)
            if value is None:
                return None
            total += coefficient * value
        return total
    import itertools

    import sympy

    expr = sympy.sympify(size)
    fixed: dict[Any, Any] = {}
    free: list[Any] = []
    for symbol in expr.free_symbols:
        if symbol in env._info:
            fixed[symbol] = sympy.Integer(env._info[symbol].hint)
        elif symbol in env._indices and len(free) < 4:
            free.append(symbol)
        else:
            return None
    best: int | None = None
    for uppers in itertools.product((False, True), repeat=len(free)):
        values = dict(fixed)
        for symbol, upper in zip(free, uppers, strict=True):
            value = _symbol_value(env, symbol, upper, depth)
            if value is None:
                return None
            values[symbol] = sympy.Integer(value)
        result = expr.xreplace(values)
        if not result.is_Integer:
            return None
        best = int(result) if best is None else max(best, int(result))
    return best


def _symbol_value(env: ShapeEnv, symbol: Any, upper: bool, depth: int) -> int | None:
    # A size symbol's hint, or a loop index's upper (or lower) bound, estimated in turn.
    info = env._info.get(symbol)
    if info is not None:
        return info.hint
    bounds = env._indices.get(symbol)
    if bounds is None or depth == 0:
        return None
    bound = bounds[1] if upper else bounds[0]
    return None if bound is None else _largest(env, bound, depth - 1)
