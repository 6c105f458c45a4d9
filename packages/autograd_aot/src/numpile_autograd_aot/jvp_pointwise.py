"""JVP rules of the pointwise ops: unary ops by their derivative table, binary arithmetic.

Unary ops use the VJP rules' table of derivatives (`vjp_pointwise`): the
tangent is `t * f'(x)`. Piecewise-constant ops have a zero tangent. The other
pointwise ops (`power`, `arctan2`, `maximum`, `where`, `clip`, ...) take the
tangent their VJP rule gives by transposition (`transposed_vjp_jvp`).

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.jvp_table import get_jvp
    >>> get_jvp(get_op("exp")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Callable

from numpile_capture import Node, get_op

from .jvp_table import JvpContext, register_jvp
from .vjp_pointwise import _DERIVATIVES, PIECEWISE_CONSTANT, Derivative
from .vjp_table import VjpContext


def _derivative_rule(derivative: Derivative) -> Callable[[JvpContext], Node | None]:
    def rule(ctx: JvpContext) -> Node | None:
        tangent = ctx.tangent(0)
        if tangent is None:
            return None
        # The derivative builders only call ops: a VJP context over the same node serves.
        builder = VjpContext(ctx.graph, ctx.node, ctx.node, ())
        slope = derivative(builder, ctx.inputs[0], ctx.node)
        return ctx.call("multiply", tangent, slope)

    return rule


for _name, _derivative in _DERIVATIVES.items():
    register_jvp(get_op(_name))(_derivative_rule(_derivative))


@register_jvp(*(get_op(name) for name in PIECEWISE_CONSTANT))
def _zero_jvp(ctx: JvpContext) -> Node | None:
    # Piecewise constant: the derivative is zero wherever it exists.
    return None


@register_jvp(
    get_op("positive"),
    get_op("copy"),
    get_op("astype"),
    get_op("negative"),
    get_op("conjugate"),
    get_op("real"),
    get_op("imag"),
)
def _linear_unary_jvp(ctx: JvpContext) -> Node | None:
    tangent = ctx.tangent(0)
    return None if tangent is None else ctx.same(tangent)


@register_jvp(get_op("add"))
def _add_jvp(ctx: JvpContext) -> Node | None:
    return ctx.sum_of([ctx.tangent(0), ctx.tangent(1)])


@register_jvp(get_op("subtract"))
def _subtract_jvp(ctx: JvpContext) -> Node | None:
    left, right = ctx.tangent(0), ctx.tangent(1)
    negated = None if right is None else ctx.call("negative", right)
    return ctx.sum_of([left, negated])


@register_jvp(get_op("multiply"))
def _multiply_jvp(ctx: JvpContext) -> Node | None:
    x, y = ctx.inputs[0], ctx.inputs[1]
    left, right = ctx.tangent(0), ctx.tangent(1)
    return ctx.sum_of(
        [
            None if left is None else ctx.call("multiply", left, y),
            None if right is None else ctx.call("multiply", x, right),
        ]
    )


@register_jvp(get_op("divide"))
def _divide_jvp(ctx: JvpContext) -> Node | None:
    y = ctx.inputs[1]
    left, right = ctx.tangent(0), ctx.tangent(1)
    return ctx.sum_of(
        [
            None if left is None else ctx.call("divide", left, y),
            None
            if right is None
            else ctx.call("negative", ctx.call("multiply", right, ctx.call("divide", ctx.node, y))),
        ]
    )
