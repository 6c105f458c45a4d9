"""VJP rules of the pointwise ops (ufuncs, where, clip, astype, copy, angle, round).

Unary ops whose derivative is an expression of the input `x` and the result
`o` are a table (`_DERIVATIVES`): the cotangent is `ct * f'(x)`. Ops whose
derivative is zero almost everywhere (floor, sign, ...) give no gradient.

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("tanh")) is not None
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from numpile_capture import Node, get_op

from .vjp_table import VjpContext, register_vjp

# A derivative is a node or, for linear ops, a Python constant.
Derivative = Callable[[VjpContext, Any, Node], Any]


def _inverse_sqrt(ctx: VjpContext, value: Node) -> Node:
    return ctx.call("reciprocal", ctx.call("sqrt", value))


def _one_minus_square(ctx: VjpContext, value: Any) -> Node:
    return ctx.call("subtract", 1, ctx.call("square", value))


# NOTE: f'(x) as graph nodes, from the input `x` and the result `o`, one entry per op.
_DERIVATIVES: dict[str, Derivative] = {
    "sin": lambda c, x, o: c.call("cos", x),
    "cos": lambda c, x, o: c.call("negative", c.call("sin", x)),
    "tan": lambda c, x, o: c.call("add", 1, c.call("square", o)),
    "arcsin": lambda c, x, o: _inverse_sqrt(c, _one_minus_square(c, x)),
    "arccos": lambda c, x, o: c.call("negative", _inverse_sqrt(c, _one_minus_square(c, x))),
    "arctan": lambda c, x, o: c.call("reciprocal", c.call("add", 1, c.call("square", x))),
    "sinh": lambda c, x, o: c.call("cosh", x),
    "cosh": lambda c, x, o: c.call("sinh", x),
    "tanh": lambda c, x, o: _one_minus_square(c, o),
    "arcsinh": lambda c, x, o: _inverse_sqrt(c, c.call("add", c.call("square", x), 1)),
    "arccosh": lambda c, x, o: _inverse_sqrt(c, c.call("subtract", c.call("square", x), 1)),
    "arctanh": lambda c, x, o: c.call("reciprocal", _one_minus_square(c, x)),
    "exp": lambda c, x, o: o,
    "exp2": lambda c, x, o: c.call("multiply", o, math.log(2.0)),
    "expm1": lambda c, x, o: c.call("add", o, 1),
    "log": lambda c, x, o: c.call("reciprocal", x),
    "log2": lambda c, x, o: c.call("reciprocal", c.call("multiply", x, math.log(2.0))),
    "log10": lambda c, x, o: c.call("reciprocal", c.call("multiply", x, math.log(10.0))),
    "log1p": lambda c, x, o: c.call("reciprocal", c.call("add", x, 1)),
    "sqrt": lambda c, x, o: c.call("divide", 0.5, o),
    "cbrt": lambda c, x, o: c.call("reciprocal", c.call("multiply", c.call("square", o), 3)),
    "square": lambda c, x, o: c.call("multiply", x, 2),
    "reciprocal": lambda c, x, o: c.call("negative", c.call("square", o)),
    "deg2rad": lambda c, x, o: math.pi / 180,
    "radians": lambda c, x, o: math.pi / 180,
    "rad2deg": lambda c, x, o: 180 / math.pi,
    "degrees": lambda c, x, o: 180 / math.pi,
}


def _derivative_rule(derivative: Derivative) -> Callable[[VjpContext], Sequence[Node | None]]:
    def rule(ctx: VjpContext) -> Sequence[Node | None]:
        slope = derivative(ctx, ctx.inputs[0], ctx.node)
        return [ctx.call("multiply", ctx.cotangent, slope)]

    return rule


for _name, _derivative in _DERIVATIVES.items():
    register_vjp(get_op(_name))(_derivative_rule(_derivative))


# NOTE: ops whose derivative is zero wherever it exists (both modes' rules say so).
PIECEWISE_CONSTANT: tuple[str, ...] = (
    "sign",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "round",
    "spacing",
    "heaviside",
    "floor_divide",
    "nextafter",
)


@register_vjp(*(get_op(name) for name in PIECEWISE_CONSTANT))
def _zero_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # Piecewise constant: the derivative is zero wherever it exists.
    return [None] * len(ctx.inputs)


@register_vjp(get_op("positive"), get_op("copy"), get_op("astype"))
def _identity_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.cotangent]


@register_vjp(get_op("negative"))
def _negative_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("negative", ctx.cotangent)]


@register_vjp(get_op("conjugate"))
def _conjugate_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("conjugate", ctx.cotangent)]


@register_vjp(get_op("absolute"), get_op("fabs"))
def _absolute_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, g = ctx.inputs[0], ctx.cotangent
    if ctx.input_meta(0).dtype.kind == "c":
        safe = ctx.call("where", ctx.call("equal", ctx.node, 0), 1, ctx.node)
        return [ctx.call("divide", ctx.call("multiply", g, ctx.call("conjugate", x)), safe)]
    return [ctx.call("multiply", g, ctx.call("sign", x))]


@register_vjp(get_op("angle"))
def _angle_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    z = ctx.inputs[0]
    if ctx.input_meta(0).dtype.kind != "c":
        return [None]
    scale = ctx.call("square", ctx.call("absolute", z))
    if ctx.params.get("deg", False):
        scale = ctx.call("multiply", scale, math.pi / 180)
    turned = ctx.call("multiply", ctx.call("conjugate", z), -1j)
    return [ctx.call("divide", ctx.call("multiply", ctx.cotangent, turned), scale)]


# --- binary arithmetic ---------------------------------------------------------------------


@register_vjp(get_op("add"))
def _add_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.cotangent, ctx.cotangent]


@register_vjp(get_op("subtract"))
def _subtract_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.cotangent, ctx.call("negative", ctx.cotangent)]


@register_vjp(get_op("multiply"))
def _multiply_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    g = ctx.cotangent
    return [
        ctx.call("multiply", g, y) if ctx.wants(0) else None,
        ctx.call("multiply", g, x) if ctx.wants(1) else None,
    ]


@register_vjp(get_op("divide"))
def _divide_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    _, y = ctx.inputs
    g = ctx.cotangent
    gx = ctx.call("divide", g, y)
    gy = ctx.call("negative", ctx.call("multiply", gx, ctx.node)) if ctx.wants(1) else None
    return [gx, gy]


@register_vjp(get_op("power"), get_op("float_power"))
def _power_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    g = ctx.cotangent
    gx = gy = None
    if ctx.wants(0):
        op_name = "power" if ctx.node.op is get_op("power") else "float_power"
        if type(y) in (int, float) and y == 2 and op_name == "power":
            # x ** 2 (the common square): d/dx = 2 * x, without a power(x, 1) copy
            gx = ctx.call("multiply", g, ctx.call("multiply", x, y))
        else:
            lowered_exponent = ctx.call("subtract", y, 1) if isinstance(y, Node) else y - 1
            lowered = ctx.call(op_name, x, lowered_exponent)
            gx = ctx.call("multiply", g, ctx.call("multiply", y, lowered))
    if ctx.wants(1):
        safe = ctx.call("where", ctx.call("equal", x, 0), 1, x)
        gy = ctx.call("multiply", g, ctx.call("multiply", ctx.node, ctx.call("log", safe)))
    return [gx, gy]


def _pick_share(ctx: VjpContext, mine: Any, other: Any) -> Node:
    # The share of the cotangent that goes to `mine`: 1 if it alone is the result, 1/2 on ties.
    # NOTE: built from the cotangent and weak Python scalars only, so a float32 graph stays
    # float32 (a `where(.., 0.5, 1.0)` mask would be float64 and double the backward's traffic).
    g = ctx.cotangent
    mine_is = ctx.call("equal", mine, ctx.node)
    other_is = ctx.call("equal", other, ctx.node)
    shared = ctx.call("where", other_is, ctx.call("multiply", g, 0.5), g)
    return ctx.call("where", mine_is, shared, 0.0)


@register_vjp(get_op("maximum"), get_op("minimum"), get_op("fmax"), get_op("fmin"))
def _extremum_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    return [
        _pick_share(ctx, x, y) if ctx.wants(0) else None,
        _pick_share(ctx, y, x) if ctx.wants(1) else None,
    ]


@register_vjp(get_op("logaddexp"))
def _logaddexp_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    g = ctx.cotangent
    return [
        ctx.call("multiply", g, ctx.call("exp", ctx.call("subtract", x, ctx.node))),
        ctx.call("multiply", g, ctx.call("exp", ctx.call("subtract", y, ctx.node))),
    ]


@register_vjp(get_op("logaddexp2"))
def _logaddexp2_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    g = ctx.cotangent
    return [
        ctx.call("multiply", g, ctx.call("exp2", ctx.call("subtract", x, ctx.node))),
        ctx.call("multiply", g, ctx.call("exp2", ctx.call("subtract", y, ctx.node))),
    ]


@register_vjp(get_op("arctan2"))
def _arctan2_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    y, x = ctx.inputs
    g = ctx.cotangent
    scaled = ctx.call("divide", g, ctx.call("add", ctx.call("square", x), ctx.call("square", y)))
    return [ctx.call("multiply", scaled, x), ctx.call("negative", ctx.call("multiply", scaled, y))]


@register_vjp(get_op("hypot"))
def _hypot_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    scaled = ctx.call("divide", ctx.cotangent, ctx.node)
    return [ctx.call("multiply", scaled, x), ctx.call("multiply", scaled, y)]


@register_vjp(get_op("copysign"))
def _copysign_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x = ctx.inputs[0]
    flipped = ctx.call("not_equal", ctx.call("signbit", x), ctx.call("signbit", ctx.node))
    return [ctx.call("where", flipped, ctx.call("negative", ctx.cotangent), ctx.cotangent), None]


@register_vjp(get_op("remainder"), get_op("fmod"))
def _remainder_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y = ctx.inputs
    gy = None
    if ctx.wants(1):
        rounding = "floor_divide" if ctx.node.op is get_op("remainder") else None
        if rounding is not None:
            quotient = ctx.call(rounding, x, y)
        else:
            quotient = ctx.call("trunc", ctx.call("divide", x, y))
        gy = ctx.call("negative", ctx.call("multiply", ctx.cotangent, quotient))
    return [ctx.cotangent, gy]


@register_vjp(get_op("ldexp"))
def _ldexp_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("ldexp", ctx.cotangent, ctx.inputs[1]), None]


# --- selection and casts ---------------------------------------------------------------------


@register_vjp(get_op("where"))
def _where_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    condition = ctx.inputs[0]
    g = ctx.cotangent
    return [
        None,
        ctx.call("where", condition, g, 0) if ctx.wants(1) else None,
        ctx.call("where", condition, 0, g) if ctx.wants(2) else None,
    ]


@register_vjp(get_op("clip"))
def _clip_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, low, high = ctx.inputs
    g = ctx.cotangent
    raised = x if low is None else ctx.call("maximum", x, low)
    above = None if high is None else ctx.call("greater", raised, high)
    inside: Any = True
    if low is not None:
        inside = ctx.call("greater_equal", x, low)
    if above is not None:
        inside = ctx.call("logical_and", inside, ctx.call("logical_not", above))
    gx = ctx.call("where", inside, g, 0)
    glow = ghigh = None
    if low is not None and ctx.wants(1):
        below = ctx.call("less", x, low)
        if above is not None:
            below = ctx.call("logical_and", below, ctx.call("logical_not", above))
        glow = ctx.call("where", below, g, 0)
    if above is not None and ctx.wants(2):
        ghigh = ctx.call("where", above, g, 0)
    return [gx, glow, ghigh]
