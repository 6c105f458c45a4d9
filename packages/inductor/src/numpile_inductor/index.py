"""Index expressions: integers over loop variables, and their C spelling.

Loop variables are `x0, x1, ...` (output dims) and `r0, r1, ...` (reduced
dims), all nonnegative integers. An index is an int, an affine `AffineSize`
(`64*x0 + x1`, `s0 - x0 - 1`) on a light lowering (see `light_lowering`), or a
sympy expression. Reshapes of a non-contiguous value need floor division and
modulo of a flat index: `FloorDiv` and `ModularIndexing` (sympy's, in
`sympy_index`) do only the cheap, sound rewrites (never `simplify()`: it costs
tens of milliseconds an expression and misses the identities that matter).
The functions here are the seam: an int or an `AffineSize` never loads sympy,
and anything else on a light lowering raises `NeedsSympy` (it lowers again).

    >>> from numpile_inductor.index import ModularIndexing
    >>> c_index(ModularIndexing(loop_var(0) * 12 + 5, 4, 3))
    '(((12*x0 + 5) / 4) % 3)'
    >>> c_index(AffineSize.symbol("s0") - AffineSize.symbol("x0") - 2**31)
    's0 - x0 - 2147483648LL'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from numpile_guards import AffineSize, NeedsSympy, light_active

if TYPE_CHECKING:
    import sympy
else:
    from .light_lowering import sympy  # imported on first use: a light lowering needs none

# NOTE: `FloorDiv` and `ModularIndexing` are read from here too (`__getattr__` below).
__all__ = [
    "as_index",
    "c_index",
    "c_offset",
    "c_size",
    "coefficient",
    "flatten_index",
    "free_symbols",
    "index_int",
    "index_symbol",
    "is_integer",
    "is_symbol",
    "loop_var",
    "replace_symbols",
    "size_symbol",
    "stride_rank",
    "strided_offset",
    "unflatten_index",
]

# NOTE: a symbolic stride (a product of size symbols) is ranked at this value for every
# size symbol: sizes 0 and 1 are specialized, so a symbol stands for a size of at least 2,
# and only the order of the strides matters.
_SIZE_HINT = 4096

# NOTE: memoized so every kernel shares the same symbol objects.
_LOOP_VARS: dict[str, sympy.Symbol] = {}

# C's int literals: one past 32 bits is a long long (sympy's C printer is taught the same).
_INT_LIMIT = 2**31


def __getattr__(name: str) -> Any:
    # `FloorDiv` and `ModularIndexing` are sympy classes: `sympy_index` loads on first use.
    if name in ("FloorDiv", "ModularIndexing"):
        return getattr(_sympy_index(name), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _sympy_index(what: str) -> ModuleType:
    # The sympy half; on a light lowering, `NeedsSympy` (whether or not sympy is loaded).
    if light_active():
        raise NeedsSympy(f"{what} (light lowering)")
    from . import sympy_index

    return sympy_index


def loop_var(dim: int, prefix: str = "x") -> Any:
    """The loop variable of dimension `dim` (`x<dim>`, or `r<dim>` for reductions): an
    `AffineSize` symbol on a light lowering, else a nonnegative sympy symbol.

    >>> loop_var(2, "r")
    r2
    """
    return index_symbol(f"{prefix}{dim}")


def index_symbol(name: str) -> Any:
    """The nonnegative integer symbol `name` (a loop variable, a gathered index): an
    `AffineSize` symbol on a light lowering, else sympy's.

    >>> index_symbol("ind0") * 2
    2*ind0
    """
    if light_active():
        return AffineSize.symbol(name)
    if name not in _LOOP_VARS:
        _LOOP_VARS[name] = sympy.Symbol(name, integer=True, nonnegative=True)
    return _LOOP_VARS[name]


def size_symbol(name: str) -> Any:
    """The integer symbol `name` (a C variable holding a size): light or sympy's.

    >>> size_symbol("sym_s0") + 1
    sym_s0 + 1
    """
    if light_active():
        return AffineSize.symbol(name)
    return sympy.Symbol(name, integer=True)


def index_int(value: int) -> Any:
    """`value` as an index: an int on a light lowering, else sympy's Integer.

    >>> index_int(0) + loop_var(0)
    x0
    """
    return value if light_active() else sympy.Integer(value)


def as_index(value: Any) -> Any:
    """`value` (an int or a size) as an index expression: as is on a light lowering, else
    sympy's (`sympify`).

    >>> as_index(3) + loop_var(0)
    x0 + 3
    """
    if light_active() and isinstance(value, int | AffineSize):
        return value
    return sympy.sympify(value)


def coefficient(expr: Any, symbol: Any) -> Any:
    """The derivative of `expr` in `symbol`: its coefficient where `expr` is affine.

    >>> coefficient(3 * loop_var(0) + loop_var(1), loop_var(0))
    3
    """
    if isinstance(expr, int):
        return 0
    if isinstance(expr, AffineSize):
        return dict(expr.terms).get(str(symbol), 0)
    return sympy.diff(expr, symbol)


def is_symbol(expr: Any) -> bool:
    """Whether `expr` is one symbol alone (a size or loop variable), light or sympy.

    >>> is_symbol(loop_var(0)), is_symbol(2 * loop_var(0)), is_symbol(3)
    (True, False, False)
    """
    if isinstance(expr, int | AffineSize):
        return isinstance(expr, AffineSize) and expr.is_Symbol
    return isinstance(expr, sympy.Symbol)


def is_integer(expr: Any) -> bool:
    """Whether `expr` is an integer (an int or sympy's Integer), no symbol in it.

    >>> is_integer(4), is_integer(loop_var(0))
    (True, False)
    """
    if isinstance(expr, int | AffineSize):
        return isinstance(expr, int)
    return isinstance(expr, sympy.Integer)


def free_symbols(expr: Any) -> set[Any]:
    """The symbols of `expr` (an int has none).

    >>> sorted(map(str, free_symbols(loop_var(1) - loop_var(0) + 4)))
    ['x0', 'x1']
    """
    if isinstance(expr, int):
        return set()
    if isinstance(expr, AffineSize):
        return expr.free_symbols
    found: set[Any] = sympy.sympify(expr).free_symbols
    return found


def replace_symbols(expr: Any, mapping: Mapping[Any, Any]) -> Any:
    """`expr` with each symbol that is a key of `mapping` replaced by its value (sympy's
    `xreplace`); a light index takes light values (ints and `AffineSize`).

    >>> replace_symbols(loop_var(0) + 1, {loop_var(0): loop_var(1) * 2})
    2*x1 + 1
    """
    if isinstance(expr, int):
        return expr
    if isinstance(expr, AffineSize):
        total: Any = expr.constant
        for name, coefficient in expr.terms:
            symbol = AffineSize.symbol(name)
            total = total + coefficient * mapping.get(symbol, symbol)
        return total
    return sympy.sympify(expr).xreplace(dict(mapping))


def c_index(expr: Any) -> str:
    """The C spelling of an index expression (int64 arithmetic).

    >>> c_index(loop_var(0) * 3 + 1)
    '3*x0 + 1'
    """
    if isinstance(expr, int | AffineSize):
        return _c_affine(expr)
    text: str = _sympy_index("the C spelling of a sympy index").print_index(expr)
    return text


def c_size(expr: Any) -> str:
    """The C spelling of a size expression over size symbols, in exact int64 arithmetic.

    >>> c_size(sympy.floor(sympy.Symbol("s0", integer=True) / 3 + sympy.Rational(1, 3)))
    'np_floordiv_i64(s0 + 1, 3)'
    """
    if isinstance(expr, int | AffineSize):
        return _c_affine(expr)
    text: str = _sympy_index("the C spelling of a sympy size").print_size(expr)
    return text


def c_offset(index: Sequence[Any], strides: Sequence[Any]) -> str:
    """The C spelling of the expanded element offset `sum(index[d] * strides[d])`
    (`strided_offset`): on a light lowering, products of an affine index and a stride symbol
    are spelled without sympy, in its term order.

    >>> c_offset((loop_var(0) + 1, 2 * loop_var(1)), (sympy.Symbol("s0", integer=True), 1))
    's0*x0 + s0 + 2*x1'
    """
    if not light_active():
        return c_index(strided_offset(index, strides))
    monomials: dict[tuple[str, ...], int] = {}
    for idx, stride in zip(index, strides, strict=True):
        for left, a in _monomials(idx):
            for right, b in _monomials(stride):
                key = tuple(sorted(left + right))
                monomials[key] = monomials.get(key, 0) + a * b
    return _c_sum(monomials)


def _monomials(value: Any) -> list[tuple[tuple[str, ...], int]]:
    # An int or `AffineSize` as (symbol names, coefficient) terms.
    if isinstance(value, int):
        return [((), value)]
    if isinstance(value, AffineSize):
        return [((name,), c) for name, c in value.terms] + [((), value.constant)]
    raise NeedsSympy(f"the index {value!r} (light lowering)")


def _c_literal(value: int) -> str:
    return f"{value}LL" if abs(value) >= _INT_LIMIT else str(value)


def _c_affine(expr: int | AffineSize) -> str:
    return _c_sum(dict(_monomials(expr)))


def _c_sum(monomials: dict[tuple[str, ...], int]) -> str:
    # The text sympy's C printer gives a sum of monomials (`Expr.as_ordered_terms`): terms
    # in descending lex order of their exponents over the symbols sorted by name, the
    # constant last, except `Add(positive number, Mul(negative number, symbol))`, which
    # prints the number first (`1 - x0`); factors sorted by name, the coefficient first.
    terms = [(key, c) for key, c in monomials.items() if c]
    if not terms:
        return "0"
    if any(len(set(key)) != len(key) for key, _ in terms):
        raise NeedsSympy("a power of an index symbol (light lowering)")
    names = sorted({name for key, _ in terms for name in key})
    terms.sort(key=lambda term: tuple(name in term[0] for name in names), reverse=True)
    (first, a), (last, b) = terms[0], terms[-1]
    if len(terms) == 2 and last == () and b > 0 and len(first) == 1 and a < 0:
        terms.reverse()
    text = ""
    for key, c in terms:
        literal = _c_literal(abs(c))
        if not key:
            part = literal
        elif abs(c) == 1:
            part = "*".join(key)
        else:
            part = "*".join((literal, *key))
        if not text:
            text = f"-{part}" if c < 0 else part
        else:
            text += f" - {part}" if c < 0 else f" + {part}"
    return text


def strided_offset(index: Sequence[Any], strides: Sequence[Any]) -> Any:
    """The expanded element offset `sum(index[d] * strides[d])`: the expression
    `sympy.expand` gives, built term by term where it can be (see `_affine_terms`).

    >>> s0 = sympy.Symbol("s0", integer=True)
    >>> strided_offset((loop_var(0) + 1, 2 * loop_var(1)), (s0, 1))
    s0*x0 + s0 + 2*x1
    """
    terms = _affine_terms(index, strides)
    if terms is not None:
        return sympy.Add(*terms)
    flat: Any = sympy.Integer(0)
    for idx, stride in zip(index, strides, strict=True):
        flat = flat + sympy.sympify(idx) * stride
    return sympy.expand(flat)


def _affine_terms(index: Sequence[Any], strides: Sequence[Any]) -> list[Any] | None:
    # The common case: each index an integer combination of symbols plus an integer, each
    # stride a symbol or an integer. Then every product is a sum of monomials, and sympy's
    # Add and Mul put them in the canonical form that `expand` reaches by walking the
    # whole expression with every hint (a third of a light graph's code generation).
    # None where an index or stride is anything else (FloorDiv, a product of sizes, ...).
    terms: list[Any] = []
    for idx, stride in zip(index, strides, strict=True):
        factor = sympy.sympify(stride)
        if not (factor.is_Symbol or factor.is_Integer):
            return None
        for term, coefficient in sympy.sympify(idx).as_coefficients_dict().items():
            if not coefficient.is_Integer or not (term.is_Symbol or term == 1):
                return None
            terms.append(sympy.Mul(coefficient, term, factor))
    return terms


def flatten_index(index: tuple[Any, ...], shape: tuple[int, ...]) -> Any:
    """The C-order flat position of `index` in an array of `shape`.

    >>> flatten_index((loop_var(0), loop_var(1)), (2, 3))
    3*x0 + x1
    """
    flat: Any = index_int(0)
    for idx, size in zip(index, shape, strict=True):
        flat = flat * size + idx
    return flat


def unflatten_index(flat: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The C-order index in an array of `shape` of flat position `flat`.

    >>> unflatten_index(loop_var(0), (2, 3))
    (FloorDiv(x0, 3), ModularIndexing(x0, 1, 3))
    """
    result: list[Any] = []
    step = 1
    for size in reversed(shape):
        if size == 1:
            result.append(index_int(0))
        elif step == 1 and len(result) == len(shape) - 1:
            result.append(flat)
        else:
            result.append(_split(flat, step, size, is_outer=len(result) == len(shape) - 1))
        step *= size
    return tuple(reversed(result))


def _split(flat: Any, step: int, size: int, *, is_outer: bool) -> Any:
    sympy_index = _sympy_index("a reshape's FloorDiv or ModularIndexing")
    if is_outer:
        return sympy_index.FloorDiv(flat, step)
    return sympy_index.ModularIndexing(flat, step, size)


def stride_rank(stride: Any) -> int | None:
    """An int standing for element stride `stride` in comparisons with the others of one
    array: itself, or a symbolic stride with every size symbol at one large size (their
    order is what matters); None where it is no integer.

    >>> stride_rank(3)
    3
    """
    if isinstance(stride, int):
        return stride
    hinted = replace_symbols(stride, dict.fromkeys(free_symbols(stride), _SIZE_HINT))
    return int(hinted) if is_integer(hinted) else None
