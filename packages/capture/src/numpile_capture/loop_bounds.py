"""A kept `for` loop's bounds as graph values and as expressions.

`range(x.shape[0] - 1)` under dynamic shapes has a symbolic stop: the loop node takes it
as a graph value computed from the inputs' shapes at run time (`size_node`: `dim` and
`py_binary` nodes), so a new size reuses the compiled code; the body is traced with its
index bounded by the same bounds as sympy expressions (`bound_expr`, see `loop_index`).

    >>> bound_expr(ConstantVar(3))
    3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpile_guards import AffineSize, NeedsSympy
from numpile_guards.symbolic import SymInt

from .loop_exit import LoopFallback
from .op import get_op
from .variables import ConstantVar, ScalarInputVar, ScalarNodeVar, Variable

if TYPE_CHECKING:
    from .tracer import Tracer


def bound_value(tracer: Tracer, var: Variable) -> Any:
    """The graph value (or int) a loop node takes for the range bound `var`."""
    # Late import: carried_values imports this module for size_node.
    from .carried_values import graph_value

    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return size_node(tracer, var.value.expr)
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return var.value
    if isinstance(var, ScalarInputVar | ScalarNodeVar):
        return graph_value(var)
    raise LoopFallback(f"a range bound {var.describe()}")


def size_node(tracer: Tracer, expr: Any) -> Any:
    """A graph value computing the symbolic size `expr` at run time from the inputs' shapes."""
    if isinstance(expr, AffineSize):
        return _affine_size_node(tracer, expr)
    import sympy  # late import: only symbolic trip counts need it

    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return _input_dim(tracer, expr)
    if isinstance(expr, sympy.floor | sympy.Mod):
        # `n // k` (sympy's floor(n/k)) and `n % k` of a size by a positive constant.
        if isinstance(expr, sympy.floor):
            numerator, denominator = expr.args[0].as_numer_denom()
            op = "floordiv"
        else:
            numerator, denominator = expr.args
            op = "mod"
        if denominator.is_Integer and denominator > 0:
            return tracer.graph.call(
                get_op("py_binary"), size_node(tracer, numerator), int(denominator), operator=op
            )
    if isinstance(expr, sympy.Add | sympy.Mul):
        op = "add" if isinstance(expr, sympy.Add) else "mul"
        parts = [size_node(tracer, arg) for arg in expr.args]
        result = parts[0]
        for part in parts[1:]:
            result = tracer.graph.call(get_op("py_binary"), result, part, operator=op)
        return result
    raise LoopFallback(f"the trip count {expr} is not a sum or product of sizes")


def _affine_size_node(tracer: Tracer, expr: AffineSize) -> Any:
    # `size_node` of a light capture's size, node for node as sympy's path makes them (its
    # `Add` holds its number first: `s0 - 1` is `py_binary(-1, s0)`); a sum of several
    # symbols or a multiple stops the light capture (sympy's order of those is its own).
    if expr.is_Symbol:
        return _input_dim(tracer, expr)
    if len(expr.terms) == 1 and expr.terms[0][1] == 1:
        symbol = _input_dim(tracer, AffineSize.symbol(expr.terms[0][0]))
        return tracer.graph.call(get_op("py_binary"), expr.constant, symbol, operator="add")
    raise NeedsSympy(f"the trip count {expr}")


def _input_dim(tracer: Tracer, symbol: Any) -> Any:
    for placeholder in tracer.builder.graph.placeholders:
        shape = getattr(placeholder.meta, "shape", ())
        for axis, size in enumerate(shape):
            if not isinstance(size, int) and size == symbol:
                return tracer.graph.call(get_op("dim"), placeholder, axis=axis)
    int_input = tracer.builder.int_size_node(symbol)  # `np.arange(n)`'s size: n itself
    if int_input is not None:
        return int_input
    raise LoopFallback(f"no input has the size {symbol}")


def bound_expr(var: Variable) -> Any:
    """A range bound as a sympy expression over sizes and outer indices, or None."""
    if isinstance(var, ScalarNodeVar):
        return var.expr
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return var.value.expr
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return var.value
    return None
