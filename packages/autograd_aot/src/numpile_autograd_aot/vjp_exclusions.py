"""The canonical ops that have no VJP rule, each with the reason: an explicit table.

Every op of capture's canonical set either has a VJP rule (`get_vjp`) or is
named here; a test checks both directions and that each reason holds for the
op (its result on float inputs is integer or bool, it refuses float inputs,
it is a creation or a mutation op). `no_vjp_table()` renders the table that
the package README shows.

    >>> EXCLUDED_OPS["argmax"]
    'integer or bool result'
"""

from __future__ import annotations

from numpile_capture import extern_rows

__all__ = ["EXCLUDED_OPS", "REASONS", "extern_no_grad", "no_vjp_table"]

INTEGER_RESULT = "integer or bool result"
INTEGER_INPUTS = "integer and bool inputs only"
CREATION = "creation from constants"
MUTATION = "mutation"
LOOPS = "loop structure"
EXTERN = "extern row without a rule"
DIGAMMA = "derivative needs digamma"

# NOTE: why each kind of exclusion needs no rule (shown in the README).
REASONS: dict[str, str] = {
    INTEGER_RESULT: (
        "the result carries no gradient (comparisons, predicates, index results); "
        "a float input of such an op gets no cotangent from it"
    ),
    INTEGER_INPUTS: "NumPy refuses float inputs, so no differentiable value reaches the op",
    CREATION: ("the inputs are shapes, dtypes and Python constants, never a differentiated array"),
    MUTATION: (
        "functionalization replaces in-place ops by pure ones (add_ -> add, setitem -> "
        "view_scatter, ...) before the joint graph is built; those have rules"
    ),
    LOOPS: (
        "`for_loop` has a VJP (vjp_loop: a loop stacking the carried values, then a reverse "
        "loop), and so has `cond` (vjp_cond: a `cond` of its branches' VJPs); `loop_output` "
        "passes its cotangent to its loop's rule; Python scalars carry "
        "no gradient (nor `numpy_scalar`, a NumPy scalar made of one, nor `python_number`, "
        "the Python scalar `int(v)` / `float(v)` makes of a 0-d value: `int(v)` is piecewise "
        "constant, and a differentiated output that depends on an input through `float(v)` "
        "raises `DetachedFloatError` naming the line, as JAX does; so does `math_call`, "
        "`math.sqrt(v)` & co., a Python float of a 0-d value); a `while_loop`, "
        "a `break` or a `setitem_at` (`setitem_at_scatter`, "
        "its pure form in a resumed loop's graph) in a differentiated loop "
        "makes grad capture the function again with its loops unrolled (up to 1000 "
        "iterations), and past that it is an error naming the loop and its line"
    ),
    EXTERN: (
        "a row of the extern-op table whose `no_grad` says why (a random draw, counts, a "
        "tuple result, a rule not written yet); `extern_no_grad()` lists each reason"
    ),
    DIGAMMA: "gamma' = gamma * digamma and lgamma' = digamma: numpile has no digamma op yet",
}

_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
_LOGICAL = ("logical_and", "logical_or", "logical_xor", "logical_not")
_PREDICATES = ("isnan", "isinf", "isfinite", "signbit")
_INDEX_RESULTS = ("argsort", "argmax", "argmin", "nanargmax", "nanargmin")
_BOOL_REDUCTIONS = ("any", "all", "count_nonzero")
_INTEGER_ONLY = (
    "gcd",
    "lcm",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "invert",
    "left_shift",
    "right_shift",
    "bitwise_count",
)
_CREATION = ("zeros", "ones", "empty", "linspace", "eye", "array")
_LOOPS = (
    "while_loop",
    "loop_output",
    "py_binary",
    "py_unary",
    "dim",
    "setitem_at",
    "setitem_at_scatter",
    "numpy_scalar",
    "python_number",
    "math_call",
)
_IN_PLACE_BINARY = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "fmod",
    "power",
    "float_power",
    "gcd",
    "lcm",
    "heaviside",
    *_COMPARISONS,
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "logaddexp",
    "logaddexp2",
    "ldexp",
    "arctan2",
    "hypot",
    "copysign",
    "nextafter",
    "matmul",
)
_MUTATION = (
    *(f"{name}_" for name in _IN_PLACE_BINARY),
    *("setitem", "fill", "copyto", "index_put", "ufunc_at", "view_scatter_"),
)

# NOTE: op name -> reason kind; insertion-ordered so the README table is stable.
EXCLUDED_OPS: dict[str, str] = {
    **dict.fromkeys(_COMPARISONS + _LOGICAL + _PREDICATES, INTEGER_RESULT),
    **dict.fromkeys(_INDEX_RESULTS + _BOOL_REDUCTIONS, INTEGER_RESULT),
    **dict.fromkeys(_INTEGER_ONLY, INTEGER_INPUTS),
    **dict.fromkeys(_CREATION, CREATION),
    **dict.fromkeys(_MUTATION, MUTATION),
    **dict.fromkeys(_LOOPS, LOOPS),
    **{row.name: EXTERN for row in extern_rows() if row.no_grad},
    "result_item": EXTERN,
    "broadcast_unbacked": EXTERN,
    "gamma": DIGAMMA,
    "lgamma": DIGAMMA,
}


def extern_no_grad() -> dict[str, str]:
    """Why each extern row without a VJP rule has none (the rows' own `no_grad`).

    >>> extern_no_grad()["random.normal"]
    'a random draw: no reparametrized gradient'
    """
    reasons = {row.name: row.no_grad for row in extern_rows() if row.no_grad}
    reasons["result_item"] = (
        "an item of a tuple result: the reverse sweep passes its cotangent on to the tuple's "
        "rule (svd, eigh, qr, slogdet), which reads every item's"
    )
    reasons["broadcast_unbacked"] = (
        "the run-time broadcast check of two data-dependent sizes: a tuple result "
        "(gradients of tuples not modelled yet)"
    )
    return reasons


def no_vjp_table() -> str:
    """The Markdown table of excluded ops, one row per reason (as in the README).

    >>> no_vjp_table().splitlines()[0]
    '| reason | ops | why no rule |'
    """
    lines = ["| reason | ops | why no rule |", "| --- | --- | --- |"]
    for reason, why in REASONS.items():
        names = ", ".join(f"`{name}`" for name, kind in EXCLUDED_OPS.items() if kind == reason)
        lines.append(f"| {reason} | {names} | {why} |")
    return "\n".join(lines)
