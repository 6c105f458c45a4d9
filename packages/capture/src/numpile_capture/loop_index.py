"""The loop index as a bounded size symbol: shapes inside a body that depend on it.

While a `for_loop` body is traced, its index is a sympy integer symbol (`i0` for the
outermost loop, `i1` for the loop inside it, ...) registered in the capture's shape
environment with the bounds its range gives (`0 <= i1 <= i0 - 1 <= s0 - 2` for
`for i in range(n): for j in range(i):`). Python arithmetic on the index keeps an
expression (`i0 + 1`, `n - i0`), so a slice bounded by it has a symbolic length:
`A[i, :j]` has shape `(i1,)`, `x[i:]` has `(s0 - i0,)`. Lengths are simplified under
the bounds: no clamp and no negative wrap where the bounds prove them away; where they
do not, the length is the exact clamp expression (`Max(0, ...)`, a `Piecewise` on the
sign), never a guess. A branch on the index that the bounds do not decide cannot be a
guard (the index changes per iteration): the shape environment raises `LoopIndexGuard`
and the loop is not kept (`explain().loops_not_kept` says so).

An int the body computes that is no affine expression of indices and sizes (a carried
counter, `i // 2`) gets an opaque symbol `r<k>` with no bounds.

    >>> from numpile_guards import ShapeEnv
    >>> env = ShapeEnv(); n = env.create_symbol(8, "L['x'].shape[0]")
    >>> with index_scope(env, 0, n - 1) as i:  # for i in range(n): x[i:]
    ...     slice_length(n, i, None, 1, env)
    -i0 + s0
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from numpile_guards import AffineSize, NeedsSympy, light_active, relation

if TYPE_CHECKING:
    import sympy

    from numpile_guards import ShapeEnv

# NOTE: index symbols are named i<depth>, opaque run-time ints r<k>; size symbols are s<k>.
_LOOP_SYMBOL = re.compile(r"[ir]\d+")

# NOTE: a process-wide counter: opaque symbols must never meet another's name in one graph.
_OPAQUE = itertools.count()

# NOTE: the index symbols of the bodies being traced on this capture, innermost last (None
# for a body that never reads its index).
_ACTIVE: list[Any] = []


def is_loop_symbol(symbol: Any) -> bool:
    """Whether `symbol` stands for a loop index or an int known only at run time.

    >>> import sympy
    >>> is_loop_symbol(sympy.Symbol("i0")), is_loop_symbol(sympy.Symbol("s0"))
    (True, False)
    """
    return _LOOP_SYMBOL.fullmatch(str(symbol)) is not None


def mentions_loop_symbol(shape: tuple[Any, ...]) -> bool:
    """Whether a shape depends on a loop index (or another run-time int).

    >>> mentions_loop_symbol((3, 4))
    False
    """
    for dim in shape:
        if isinstance(dim, int):
            continue
        if any(is_loop_symbol(symbol) for symbol in getattr(dim, "free_symbols", ())):
            return True
    return False


def range_bounds(start: Any, stop: Any, step: Any) -> tuple[Any, Any]:
    """The least and greatest index of a non-empty `range(start, stop, step)` given as
    expressions (None: unknown), as the body sees them.

    >>> range_bounds(0, 5, 1), range_bounds(4, -1, -1), range_bounds(0, 5, None)
    ((0, 4), (0, 4), (None, None))
    """
    if step is None or not _is_int(step) or int(step) == 0:
        return None, None
    if int(step) > 0:
        return start, None if stop is None else stop - 1
    return (None if stop is None else stop + 1), start


def _is_int(value: Any) -> bool:
    return isinstance(value, int) or bool(getattr(value, "is_Integer", False))


@contextmanager
def index_scope(
    env: ShapeEnv | None, low: Any, high: Any, *, read: bool = True
) -> Iterator[sympy.Symbol | None]:
    """A new index symbol bounded by `low <= symbol <= high` while a body is traced.

    `read=False` (the body never reads its index: `for _ in range(steps)`) makes no
    symbol: None, and sympy is not imported for it; inner loops keep their depth's name.

    >>> with index_scope(None, 0, 4) as symbol:
    ...     symbol
    i0
    >>> with index_scope(None, 0, 4, read=False) as unread, index_scope(None, 0, 2) as inner:
    ...     unread, inner
    (None, i1)
    """
    symbol: Any = None
    if read and light_active():
        symbol = AffineSize.symbol(f"i{len(_ACTIVE)}")
    elif read:
        import sympy

        symbol = sympy.Symbol(f"i{len(_ACTIVE)}", integer=True)
    _ACTIVE.append(symbol)
    if env is not None and symbol is not None:
        env.push_index(symbol, low, high)
    opaque_before = len(_OPAQUE_LIVE)
    try:
        yield symbol
    finally:
        _ACTIVE.pop()
        if env is not None:
            if symbol is not None:
                env.pop_index(symbol)
            for extra in _OPAQUE_LIVE[opaque_before:]:
                env.pop_index(extra)
        del _OPAQUE_LIVE[opaque_before:]


# NOTE: the opaque symbols made while the bodies of `_ACTIVE` are traced (forgotten with them).
_OPAQUE_LIVE: list[Any] = []


def opaque_int(env: ShapeEnv | None) -> sympy.Symbol:
    """A symbol for an int the body computes that has no expression (nothing is known of it).

    >>> str(opaque_int(None)).startswith("r")
    True
    """
    symbol: Any
    if light_active():
        symbol = AffineSize.symbol(f"r{next(_OPAQUE)}")
    else:
        import sympy

        symbol = sympy.Symbol(f"r{next(_OPAQUE)}", integer=True)
    if env is not None and _ACTIVE:
        env.push_index(symbol, None, None)
        _OPAQUE_LIVE.append(symbol)
    return symbol


def combine(operator: str, left: Any, right: Any) -> Any:
    """The expression of `left <operator> right` on int expressions, or None when the
    result has none (an operator other than +, -, *, or an unknown operand).

    >>> import sympy
    >>> combine("sub", 5, sympy.Symbol("i0", integer=True))
    5 - i0
    """
    if left is None or right is None:
        return None
    if light_active() and _light(left) and _light(right):
        if operator == "add":
            return left + right
        if operator == "sub":
            return left - right
        if operator == "mul":
            return left * right  # a product of two sizes stops the light capture
        return None
    import sympy

    a, b = sympy.sympify(left), sympy.sympify(right)
    if operator == "add":
        return a + b
    if operator == "sub":
        return a - b
    if operator == "mul":
        return sympy.expand(a * b)
    return None


def slice_length(size: Any, start: Any, stop: Any, step: int, env: ShapeEnv | None) -> Any:
    """The length of `slice(start, stop, step)` on an axis of `size` (expressions; None for
    an omitted bound), as Python clamps it, simplified with what `env` knows.

    >>> slice_length(10, 2, 7, 2, None), slice_length(10, None, None, -3, None)
    (3, 4)
    """
    return slice_span(size, start, stop, step, env)[1]


def slice_span(
    size: Any, start: Any, stop: Any, step: int, env: ShapeEnv | None
) -> tuple[Any, Any]:
    """Where `slice(start, stop, step)` on an axis of `size` starts (the index of its first
    element, where it has one) and its length, as in `slice_length`.

    >>> slice_span(10, -3, None, 1, None), slice_span(10, None, None, -1, None)
    ((7, 3), (9, 10))
    """
    if light_active() and all(v is None or _light(v) for v in (size, start, stop)):
        return _affine_slice_span(size, start, stop, step, env)
    import sympy

    def decide(relation: Any) -> bool | None:
        relation = sympy.sympify(relation)
        if relation is sympy.true or relation is sympy.false:
            return bool(relation)
        return None if env is None else env.decide(relation)

    size = sympy.sympify(size)
    # NOTE: the bound the slice starts from needs no clamp toward the far end: the other
    # bound is inside the axis, so the span past it is negative and the length 0 anyway
    # (`x[1:]` of a size that may be 0 is `Max(0, n - 1)`, not `Max(0, n - Min(1, n))`).
    if step > 0:
        first = _clamped(start, size, 0, (0, None), decide)
        last = _clamped(stop, size, size, (0, size), decide)
        span = last - first
    else:
        first = _clamped(start, size, size - 1, (None, size - 1), decide)
        last = _clamped(stop, size, -1, (-1, size - 1), decide)
        span = first - last
    magnitude = abs(step)
    count = span if magnitude == 1 else sympy.floor((span + magnitude - 1) / magnitude)
    nonnegative = decide(sympy.Ge(span, 0))
    if nonnegative is False:
        length: Any = sympy.Integer(0)
    elif nonnegative is True:
        length = sympy.expand(count)
    else:
        length = sympy.Max(0, sympy.expand(count))
    first = sympy.expand(first)
    return (int(first) if first.is_Integer else first), (
        int(length) if length.is_Integer else length
    )


def _light(value: Any) -> bool:
    return isinstance(value, AffineSize) or (isinstance(value, int) and not isinstance(value, bool))


def _affine_slice_span(
    size: Any, start: Any, stop: Any, step: int, env: ShapeEnv | None
) -> tuple[Any, Any]:
    # `slice_span` of a light capture, step by step as the sympy path: the same clamps
    # proven away by the same questions; where sympy would keep a `Max`, `Min`,
    # `Piecewise` or `floor`, the light capture stops (`NeedsSympy`).
    def decide(op: str, lhs: Any, rhs: Any) -> bool | None:
        if isinstance(lhs, int) and isinstance(rhs, int):
            return bool(_INT_COMPARISONS[op](lhs, rhs))
        return None if env is None else env.decide(relation(op, lhs, rhs))

    def limited(value: Any, limit: Any, past: str, reaching: str, clamp: str) -> Any:
        # `value`, or `limit` where `value` is past it (`past`), when the facts decide which.
        if limit is None:
            return value
        beyond = decide(past, value, limit)
        if beyond is False:
            return value
        if beyond is True or decide(reaching, value, limit) is True:
            return limit
        raise NeedsSympy(f"{clamp}({value}, {limit}) of a slice bound")

    def clamped(value: Any, default: Any, low: Any, high: Any) -> Any:
        if value is None:
            return default
        negative = decide("<", value, 0)
        if negative is True:
            return limited(value + size, low, "<", "<=", "Max")
        if negative is False:
            return limited(value, high, ">", ">=", "Min")
        raise NeedsSympy(f"the sign of the slice bound {value}")

    if step > 0:
        first = clamped(start, 0, 0, None)
        last = clamped(stop, size, 0, size)
        span = last - first
    else:
        first = clamped(start, size - 1, None, size - 1)
        last = clamped(stop, -1, -1, size - 1)
        span = first - last
    magnitude = abs(step)
    if magnitude != 1 and not isinstance(span, int):
        raise NeedsSympy(f"floor of the slice span {span} by {magnitude}")
    count = span if magnitude == 1 else (span + magnitude - 1) // magnitude
    nonnegative = decide(">=", span, 0)
    if nonnegative is False:
        return first, 0
    if nonnegative is True:
        return first, count
    raise NeedsSympy(f"Max(0, {count}) of a slice length")


_INT_COMPARISONS = {
    "<": int.__lt__,
    "<=": int.__le__,
    ">": int.__gt__,
    ">=": int.__ge__,
}


def _clamped(value: Any, size: Any, default: Any, limits: tuple[Any, Any], decide: Any) -> Any:
    # A slice bound as Python's PySlice_AdjustIndices makes it: negative values count from
    # the end, then the result is clamped into `limits`.
    import sympy

    if value is None:
        return default
    value = sympy.sympify(value)
    low, high = limits
    negative = decide(sympy.Lt(value, 0))
    wrapped = value + size
    from_end = wrapped if low is None else _at_least(wrapped, low, decide)
    from_start = value if high is None else _at_most(value, high, decide)
    if negative is True:
        return from_end
    if negative is False:
        return from_start
    return sympy.Piecewise((from_end, sympy.Lt(value, 0)), (from_start, True))


def _at_least(value: Any, low: Any, decide: Any) -> Any:
    import sympy

    # `value` where it is proven inside (it keeps the loop index, so shapes of one body stay
    # comparable); `low` where it is proven at or past it; else the clamp.
    below = decide(sympy.Lt(value, low))
    if below is False:
        return value
    if below is True or decide(sympy.Le(value, low)) is True:
        return sympy.sympify(low)
    return sympy.Max(value, low)


def _at_most(value: Any, high: Any, decide: Any) -> Any:
    import sympy

    above = decide(sympy.Gt(value, high))
    if above is False:
        return value
    if above is True or decide(sympy.Ge(value, high)) is True:
        return sympy.sympify(high)
    return sympy.Min(value, high)
