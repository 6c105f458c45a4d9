"""NumPy scalars made from scalar inputs: a branch on one is a guard, not a graph break.

A NumPy scalar argument that automatic dynamic made a graph input (an `np.float64(dt)`
that changes between calls) is a 0-d graph value, but its value is an input, not array
data: capture knows it, and knows the Python expression that reads it again (`L['a']`).
Python operators and `abs()` on such scalars, Python numbers and unspecialized Python
scalar inputs keep both on their result (`ScalarExpression`: `L['a'] > 0` and
`np.True_`), the value computed by NumPy on the captured objects themselves, so NaN
compares false as in eager. A branch on one (`if a > 0:`, `bool(a)`, `a and b`, `min(a,
3)`) follows the value in the same graph and guards that the expression keeps its truth
value (`EQUALS_MATCH((bool(L['a'] > 0)), True)`), as torch guards a SymBool; a call with
the other outcome recompiles, up to the recompile limit. `int(a)`, `float(a)` and
`a.item()` are Python scalar inputs read through `int(L['a'])`
(`operators.scalar_call`): unspecialized until a use needs the exact value (a shape, an
unrolled `range`), which guards it equal, as torch specializes a SymInt.

Array contents never get an expression (`x.sum() > 0` stays data-dependent control
flow), nor do the NumPy scalar locals of a resume function inside a loop (the values a
loop carries, made from arrays), nor values a kept loop computes.

    >>> from numpile_capture import ArrayMeta, Graph
    >>> node = Graph().placeholder("a", ArrayMeta((), "float64"))
    >>> a = ArrayVar(node, expression=ScalarExpression("L['a']", np.float64(2.0)))
    >>> operand(a), operand(ConstantVar(0))
    (("L['a']", np.float64(2.0)), ('0', 0))
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_guards import ExpressionSource

from .graph import gives_scalar
from .meta import ScalarMeta
from .variables import ArrayVar, ConstantVar, ScalarExpression, ScalarInputVar, Variable

if TYPE_CHECKING:
    from .tracer import Tracer

MAX_EXPRESSION_CHARS = 2000
"""The longest expression a scalar is read by (its guard and fetch code)."""

MAX_EXPRESSION_NESTING = 64
"""The most parentheses in such an expression (Python's parser stops at 200 levels)."""

# Python operators by the names `operators.binary` and `operators.unary` use.
_BINARY: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "add": ("+", operator.add),
    "sub": ("-", operator.sub),
    "mul": ("*", operator.mul),
    "truediv": ("/", operator.truediv),
    "floordiv": ("//", operator.floordiv),
    "mod": ("%", operator.mod),
    "pow": ("**", operator.pow),
    "and": ("&", operator.and_),
    "or": ("|", operator.or_),
    "xor": ("^", operator.xor),
    "lshift": ("<<", operator.lshift),
    "rshift": (">>", operator.rshift),
    "lt": ("<", operator.lt),
    "le": ("<=", operator.le),
    "eq": ("==", operator.eq),
    "ne": ("!=", operator.ne),
    "gt": (">", operator.gt),
    "ge": (">=", operator.ge),
}
_UNARY: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "neg": ("-", operator.neg),
    "pos": ("+", operator.pos),
    "invert": ("~", operator.invert),
    "abs": ("abs", abs),
}


def fits(text: str) -> bool:
    """Whether an expression this long can be read on each call.

    A recurrence (`mid = 0.5 * (lo + hi)` in an unrolled loop) would double its text, or
    nest it past Python's parser, at each step: past the bounds the value is not tracked.

    >>> fits("L['a'] + 1"), fits("(" * 65)
    (True, False)
    """
    return len(text) <= MAX_EXPRESSION_CHARS and text.count("(") <= MAX_EXPRESSION_NESTING


def operand(var: Variable) -> tuple[str, Any] | None:
    """How `var` reads as an operand of a scalar expression, and its value now; None
    when it has no such reading (arrays, run-time values, non-finite float constants).

    A NumPy scalar with an expression, an unspecialized Python scalar input (by its
    source, without reading it) or a Python number.
    """
    if isinstance(var, ArrayVar):
        expression = var.expression
        return None if expression is None else (expression.operand_text, expression.value)
    if isinstance(var, ScalarInputVar):
        assert var.source is not None
        return var.source.name, var.current
    if isinstance(var, ConstantVar) and type(var.value) in (int, float, bool):
        value = var.value
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return repr(value), value
    if isinstance(var, ConstantVar) and isinstance(var.value, np.bool_ | np.number):
        text = numpy_scalar_text(var.value)
        return None if text is None else (text, var.value)
    return None


def argument(var: Variable) -> tuple[str, Any] | None:
    """`operand`, spelled as an argument of a call (no parentheses of its own needed)."""
    if isinstance(var, ArrayVar) and var.expression is not None:
        return var.expression.text, var.expression.value
    return operand(var)


def numpy_scalar_text(value: np.generic) -> str | None:
    """`value` spelled as Python that gives it back (`np.float32(0.5)`), or None when no
    such spelling is exact (NaN, infinities, long doubles).

    >>> numpy_scalar_text(np.float32(0.1)), numpy_scalar_text(np.float64("nan"))
    ('np.float32(0.1)', None)
    """
    kind = type(value)
    if getattr(np, kind.__name__, None) is not kind:
        return None
    # NumPy 2's repr (`np.float32(0.1)`) where it gives the value back, else its exact one.
    for text in (repr(value), f"np.{kind.__name__}({value.item()!r})"):
        if _gives_back(text, value):
            return text
    return None


def _gives_back(text: str, value: np.generic) -> bool:
    try:
        again = eval(text, {"np": np})
    except Exception:
        return False
    if type(again) is not type(value) or not bool(again == value):
        return False
    # -0.0 and 0.0 compare equal.
    return not isinstance(value, np.floating) or np.signbit(again) == np.signbit(value)


def has_expression(var: Variable) -> bool:
    """Whether `var` is a NumPy scalar capture can compute again from the inputs."""
    return isinstance(var, ArrayVar) and var.expression is not None


def derived_binary(name: str, left: Variable, right: Variable, result: Variable) -> Variable:
    """`result` of `left <name> right` with its expression, when both operands have a
    reading (see `operand`); else `result` as it is."""
    found = _BINARY.get(name)
    if found is None:
        return result
    left_side, right_side = operand(left), operand(right)
    if left_side is None or right_side is None:
        return result
    symbol, fn = found
    (left_text, left_value), (right_text, right_value) = left_side, right_side
    text = f"{left_text} {symbol} {right_text}"
    return _tagged(result, text, True, fn, left_value, right_value)


def derived_unary(name: str, value: Variable, result: Variable) -> Variable:
    """`result` of `-value`, `+value`, `~value` or `abs(value)` with its expression."""
    found = _UNARY.get(name)
    expression = value.expression if isinstance(value, ArrayVar) else None
    if found is None or expression is None:
        return result
    spelled, fn = found
    if name == "abs":
        return _tagged(result, f"abs({expression.text})", False, fn, expression.value)
    return _tagged(result, spelled + expression.operand_text, True, fn, expression.value)


def derived_call(
    fn: Any, args: list[Variable], kwargs: dict[str, Variable], result: Variable
) -> Variable:
    """`result` of the NumPy ufunc `fn` (`np.sqrt(a)`, `np.isnan(a)`) on operands that all
    have a reading, with its expression `np.sqrt(L['a'])`; else `result` as it is."""
    if not isinstance(fn, np.ufunc) or kwargs:
        return result
    ufunc: Callable[..., Any] = fn
    name = fn.__name__
    if name is None or getattr(np, name, None) is not ufunc:
        return result
    sides = [argument(arg) for arg in args]
    if not sides or any(side is None for side in sides):
        return result
    texts = [side[0] for side in sides if side is not None]
    values = [side[1] for side in sides if side is not None]
    text = f"np.{name}({', '.join(texts)})"
    return _tagged(result, text, False, fn, *values)


def _tagged(
    result: Variable, text: str, compound: bool, fn: Callable[..., Any], *values: Any
) -> Variable:
    # The value NumPy gives on the captured objects; it must be the NumPy scalar the graph
    # computes (its dtype), else the result is left untracked. So is one NumPy warns about
    # (`a / 0`, an overflow): the guard would warn on each call, the graph warns once.
    if not isinstance(result, ArrayVar) or result.meta.shape != () or not fits(text):
        return result
    if not gives_scalar(result.node):
        return result
    try:
        with np.errstate(all="raise"):
            value = fn(*values)
    except Exception:
        return result
    if not isinstance(value, np.generic) or value.dtype != result.meta.dtype:
        return result
    expression = ScalarExpression(text, value, compound=compound)
    return attrs.evolve(result, expression=expression)


def guarded_truth(tracer: Tracer, var: ArrayVar) -> bool:
    """The truth of `var` (which has an expression) now, guarded to stay the same.

    The guard evaluates `bool(<expression>)` on the next call's inputs, with NumPy's
    semantics (the same Python expression on the real objects).
    """
    expression = var.expression
    assert expression is not None
    outcome = bool(expression.value)
    tracer.builder.guard_value(ExpressionSource(f"bool({expression.text})"), outcome)
    return outcome


def python_scalar(tracer: Tracer, var: ArrayVar, method: str) -> ScalarInputVar | None:
    """`var.item()` (`method` "item") of a NumPy scalar with an expression: the Python
    scalar it gives, read on each call through `<expression>.item()`; else None."""
    expression = var.expression
    if expression is None or method != "item":
        return None
    value = expression.value.item()
    if type(value) not in (int, float, bool):
        return None
    source = ExpressionSource(f"{expression.operand_text}.item()")
    tracer.builder.guard_type(source, type(value))
    return tracer.builder.scalar_input(value, source)


def untracked_origin(tracer: Tracer, var: ArrayVar) -> str | None:
    """For a NumPy scalar without an expression that scalar inputs alone made (no array,
    no value a resumed loop carries), the ops that made it, as text; else None (array
    data: data-dependent control flow)."""
    if not gives_scalar(var.node):
        return None
    tracked = tracer.builder.expression_inputs
    ops: list[str] = []
    seen: set[int] = set()
    pending = [var.node]
    scalar_origin = False
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        python_input = isinstance(node.meta, ScalarMeta) and node.meta.type in (int, float)
        if node in tracked or (node.op is None and python_input):
            scalar_origin = True
            continue
        if node.op is None:
            return None  # an array input, or a value a loop carries
        if node.op.name not in ops:
            ops.append(node.op.name)
        pending.extend(node.input_nodes())
    return ", ".join(reversed(ops)) if scalar_origin else None
