"""Sizes and loop indices without sympy: affine values for a capture that must not import it.

`import sympy` costs about 0.3 s, most of the warm start of a function whose sizes or loop
indices are symbolic (the kernel cache hit that follows needs no sympy). Nearly every such
size is affine: an int constant plus int multiples of symbols (`s0 - i0 - 1`). While a
capture runs inside `light_sizes()` (the dispatcher opens it where sympy is not loaded yet),
the shape environment makes `AffineSize` symbols instead of sympy's, and the relations the
capture asks about are `AffineRelation`s, which `ShapeEnv.decide` answers with integer
arithmetic. Anything else (a product of sizes, `floor`, a guard the ranges do not decide,
any attribute of sympy's, an `import sympy` on the capturing thread) raises `NeedsSympy`,
and the dispatcher captures again the sympy way: a case not handled here costs time, never
a different result.

Invariants: an `AffineSize` prints exactly as `str()` of its sympy expression does, so a
graph captured either way prints (and hashes, for the kernel cache) the same; a size with
no symbol left is a plain int; outside a light capture an `AffineSize` behaves as its sympy
expression (`to_sympy`) in every operation it does not define itself.

    >>> s0, i0 = AffineSize.symbol("s0"), AffineSize.symbol("i0")
    >>> s0 - i0 - 1, 1 - i0, 2 * s0 + 3, (s0 - i0) + i0
    (-i0 + s0 - 1, 1 - i0, 2*s0 + 3, s0)
    >>> (s0 - s0) + 4
    4
"""

from __future__ import annotations

import contextlib
import numbers
import operator
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "AffineRelation",
    "AffineSize",
    "NeedsSympy",
    "light_active",
    "light_sizes",
    "relation",
]

# NOTE: per thread: a background build that imports sympy must not end another thread's
# light capture, nor be refused itself.
_STATE = threading.local()

_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


class NeedsSympy(BaseException):
    """A light capture reached something only sympy can answer: capture again with sympy.

    A BaseException, so that no `except Exception` of capture (a loop not kept, a graph
    break) turns it into a different graph.
    """


def light_active() -> bool:
    """Whether this thread is inside a light capture (`light_sizes`).

    >>> light_active()
    False
    """
    return bool(getattr(_STATE, "light", False))


class _RefuseSympy:
    # A `sys.meta_path` finder: while a light capture runs on this thread, an import of sympy
    # (any site not taught the light path) raises `NeedsSympy` instead of loading it.
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if light_active() and (name == "sympy" or name.startswith("sympy.")):
            raise NeedsSympy(f"import {name}")


_REFUSE_SYMPY = _RefuseSympy()


@contextlib.contextmanager
def light_sizes() -> Iterator[None]:
    """Capture sizes as `AffineSize` inside the block (this thread only); `NeedsSympy`
    escapes it where sympy is needed.

    >>> with light_sizes():
    ...     light_active()
    True
    """
    if _REFUSE_SYMPY not in sys.meta_path:
        sys.meta_path.insert(0, _REFUSE_SYMPY)
    previous = light_active()
    _STATE.light = True
    try:
        yield
    finally:
        _STATE.light = previous


def _needs_sympy(what: str) -> NeedsSympy:
    return NeedsSympy(f"{what} of a size (light capture)")


class AffineSize:
    """`constant + sum(coefficient * symbol)` over named integer symbols, at least one term.

    Symbols are named as the shape environment names them: `s<k>` (input sizes, positive),
    `i<k>` (loop indices), `r<k>` (run-time ints). Build one with `symbol` and arithmetic.

        >>> n = AffineSize.symbol("s0")
        >>> str(3 * n - 6), sorted(map(str, (n + AffineSize.symbol("i1")).free_symbols))
        ('3*s0 - 6', ['i1', 's0'])
    """

    __slots__ = ("_hash", "constant", "terms")

    constant: int
    terms: tuple[tuple[str, int], ...]

    def __init__(self, constant: int, terms: tuple[tuple[str, int], ...]) -> None:
        # NOTE: `terms` sorted by name, no zero coefficient: equal sizes are equal tuples.
        self.constant = constant
        self.terms = terms
        self._hash = hash((AffineSize, constant, terms))

    @staticmethod
    def symbol(name: str) -> AffineSize:
        """The symbol `name` as a size."""
        return AffineSize(0, ((name, 1),))

    @staticmethod
    def of(constant: int, coefficients: dict[str, int]) -> AffineSize | int:
        """The size `constant + sum(coefficients)`: an int where no symbol is left.

        >>> AffineSize.of(2, {"s0": 0}), AffineSize.of(2, {"s0": -1})
        (2, 2 - s0)
        """
        terms = tuple(sorted((name, c) for name, c in coefficients.items() if c))
        return AffineSize(constant, terms) if terms else constant

    # --- arithmetic: closed over ints and sizes -------------------------------------------

    def _combine(self, other: Any, scale: int) -> AffineSize | int | None:
        # `self + scale * other`, or None where `other` is no int nor size.
        if isinstance(other, bool):
            return None
        if isinstance(other, AffineSize):
            coefficients = dict(self.terms)
            for name, c in other.terms:
                coefficients[name] = coefficients.get(name, 0) + scale * c
            return AffineSize.of(self.constant + scale * other.constant, coefficients)
        if isinstance(other, numbers.Integral):
            return AffineSize.of(self.constant + scale * int(other), dict(self.terms))
        return None

    def _scaled(self, factor: Any) -> AffineSize | int | None:
        if isinstance(factor, bool) or not isinstance(factor, numbers.Integral):
            return None
        k = int(factor)
        return AffineSize.of(self.constant * k, {name: c * k for name, c in self.terms})

    def _other(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        # An operation this class does not define: sympy's, outside a light capture.
        if light_active():
            raise _needs_sympy(what)
        return fn(self.to_sympy(), *(_sympy_of(arg) for arg in args))

    def __add__(self, other: Any) -> Any:
        result = self._combine(other, 1)
        return self._other("add", operator.add, other) if result is None else result

    def __radd__(self, other: Any) -> Any:
        result = self._combine(other, 1)
        return self._other("radd", _reflected(operator.add), other) if result is None else result

    def __sub__(self, other: Any) -> Any:
        result = self._combine(other, -1)
        return self._other("sub", operator.sub, other) if result is None else result

    def __rsub__(self, other: Any) -> Any:
        result = self._scaled(-1)
        negated = result._combine(other, 1) if isinstance(result, AffineSize) else None
        return self._other("rsub", _reflected(operator.sub), other) if negated is None else negated

    def __mul__(self, other: Any) -> Any:
        result = self._scaled(other)
        return self._other("mul", operator.mul, other) if result is None else result

    def __rmul__(self, other: Any) -> Any:
        result = self._scaled(other)
        return self._other("rmul", _reflected(operator.mul), other) if result is None else result

    def __neg__(self) -> Any:
        return self._scaled(-1)

    def __pos__(self) -> AffineSize:
        return self

    def __floordiv__(self, other: Any) -> Any:
        return self._other("floordiv", operator.floordiv, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._other("rfloordiv", _reflected(operator.floordiv), other)

    def __truediv__(self, other: Any) -> Any:
        return self._other("truediv", operator.truediv, other)

    def __rtruediv__(self, other: Any) -> Any:
        return self._other("rtruediv", _reflected(operator.truediv), other)

    def __mod__(self, other: Any) -> Any:
        return self._other("mod", operator.mod, other)

    def __rmod__(self, other: Any) -> Any:
        return self._other("rmod", _reflected(operator.mod), other)

    def __pow__(self, other: Any) -> Any:
        return self._other("pow", operator.pow, other)

    def __abs__(self) -> Any:
        return self._other("abs", abs)

    def __lt__(self, other: Any) -> Any:
        return self._other("lt", operator.lt, other)

    def __le__(self, other: Any) -> Any:
        return self._other("le", operator.le, other)

    def __gt__(self, other: Any) -> Any:
        return self._other("gt", operator.gt, other)

    def __ge__(self, other: Any) -> Any:
        return self._other("ge", operator.ge, other)

    def __bool__(self) -> bool:
        # sympy raises for the truth of a symbolic expression; so does this, through it.
        return bool(self._other("truth", bool))

    def __int__(self) -> int:
        return int(self._other("int", int))

    def __index__(self) -> int:
        return int(self._other("index", operator.index))

    # --- equality, as sympy's: structural ---------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AffineSize):
            return self.constant == other.constant and self.terms == other.terms
        if isinstance(other, int) or light_active() or "sympy" not in sys.modules:
            return False  # a size with a symbol never equals an int
        return bool(self.to_sympy() == other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return self._hash

    # --- what capture reads of a sympy expression --------------------------------------------

    @property
    def free_symbols(self) -> set[AffineSize]:
        """The symbols, each as a size (as sympy's `free_symbols`)."""
        return {AffineSize.symbol(name) for name, _ in self.terms}

    @property
    def is_Symbol(self) -> bool:  # noqa: N802 - sympy's spelling, read by duck-typed code
        """Whether this is one symbol alone."""
        return self.constant == 0 and len(self.terms) == 1 and self.terms[0][1] == 1

    @property
    def is_Integer(self) -> bool:  # noqa: N802 - sympy's spelling
        """Always False: a size with no symbol is an int."""
        return False

    @property
    def is_number(self) -> bool:
        """Always False, as `is_Integer`."""
        return False

    def __getattr__(self, name: str) -> Any:
        # Only for names the class does not define (sympy's API): the light capture stops.
        if name.startswith("__") or not light_active():
            if name.startswith("__"):
                raise AttributeError(name)
            return getattr(self.to_sympy(), name)
        raise _needs_sympy(f"attribute {name}")

    def _sympy_(self) -> Any:
        # sympy's hook for foreign objects (`sympify`, sympy operators): the light capture
        # stops; elsewhere (a size that left a light capture) the sympy expression.
        if light_active():
            raise _needs_sympy("sympy use")
        return self.to_sympy()

    def to_sympy(self) -> Any:
        """The sympy expression, with the symbols a shape environment makes (`s<k>` integer
        and positive, the others integer).

        >>> (AffineSize.symbol("s0") - 1).to_sympy().free_symbols
        {s0}
        """
        import sympy

        total = sympy.Integer(self.constant)
        for name, c in self.terms:
            symbol = sympy.Symbol(name, integer=True, positive=True if name[0] == "s" else None)
            total += c * symbol
        return total

    def render(self, names: dict[Any, str]) -> str:
        """Python text of this size with each symbol's source from `names` (symbol -> text).

        >>> (2 * AffineSize.symbol("s0") - 1).render({AffineSize.symbol("s0"): "L['x'].shape[0]"})
        "2*L['x'].shape[0] - 1"
        """
        text = str(self)
        for name, _ in sorted(self.terms, key=lambda term: -len(term[0])):
            source = names.get(AffineSize.symbol(name))
            if source is None:
                raise _needs_sympy(f"the source of {name}")
            text = _replace_name(text, name, source)
        return text

    def __str__(self) -> str:
        parts: list[tuple[bool, str]] = []
        for name, c in self.terms:
            parts.append((c < 0, name if abs(c) == 1 else f"{abs(c)}*{name}"))
        if self.constant:
            parts.append((self.constant < 0, str(abs(self.constant))))
        # sympy prints a positive number first before one negative term: `1 - i0`.
        if len(parts) == 2 and self.constant > 0 and parts[0][0]:
            parts.reverse()
        negative, first = parts[0]
        text = f"-{first}" if negative else first
        for negative, part in parts[1:]:
            text += f" - {part}" if negative else f" + {part}"
        return text

    def __repr__(self) -> str:
        return str(self)


def _reflected(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda this, other: fn(other, this)


def _sympy_of(value: Any) -> Any:
    return value.to_sympy() if isinstance(value, AffineSize) else value


def _replace_name(text: str, name: str, source: str) -> str:
    # `name` as a whole word (`s1` inside `s10` stays).
    return re.sub(rf"\b{re.escape(name)}\b", lambda _: source, text)


class AffineRelation:
    """`lhs op rhs` between sizes and ints, as a light capture asks `ShapeEnv.decide` it.

    `rel_op`, `lhs` and `rhs` are spelled as sympy's relations spell them.

        >>> str(AffineRelation("<", AffineSize.symbol("i0"), 4))
        'i0 < 4'
    """

    __slots__ = ("lhs", "rel_op", "rhs")

    def __init__(self, rel_op: str, lhs: AffineSize | int, rhs: AffineSize | int) -> None:
        self.rel_op = rel_op
        self.lhs = lhs
        self.rhs = rhs

    def __str__(self) -> str:
        return f"{self.lhs} {self.rel_op} {self.rhs}"

    def __repr__(self) -> str:
        return str(self)


def relation(op: str, lhs: Any, rhs: Any) -> Any:
    """`lhs op rhs` (`op` one of == != < <= > >=): an `AffineRelation` in a light capture
    where both sides are ints or sizes, else sympy's relation.

    >>> relation(">", AffineSize.symbol("s0"), 1)
    s0 > 1
    """
    if op not in _COMPARISONS:
        raise ValueError(f"relation {op!r}: expected one of {_COMPARISONS}")
    sides = (int, AffineSize)
    if light_active() and isinstance(lhs, sides) and isinstance(rhs, sides):
        return AffineRelation(op, lhs, rhs)
    import sympy

    build = {
        "==": sympy.Eq,
        "!=": sympy.Ne,
        "<": sympy.Lt,
        "<=": sympy.Le,
        ">": sympy.Gt,
        ">=": sympy.Ge,
    }[op]
    return build(lhs, rhs)
