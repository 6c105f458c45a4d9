"""JVP rules of the linear and multilinear ops: views, sums, scans, products of arrays.

An op that is linear in its first input (the others are indices or static
values) has the tangent `op(t, *rest)`; an op that is linear in each array
operand separately (`matmul`, `einsum`, ...) has the sum over operands of
the op with that operand replaced by its tangent. The other reductions
(`max`, `prod`, `var`, ...), joins and linalg ops take the tangent their VJP
rule gives by transposition (`transposed_vjp_jvp`).

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.jvp_table import get_jvp
    >>> get_jvp(get_op("reshape")) is not None
    True
"""

from __future__ import annotations

from numpile_capture import Node, get_op

from .jvp_table import JvpContext, register_jvp

# NOTE: ops linear in their first input; the other inputs are indices or constants.
_LINEAR_IN_FIRST = (
    "sum",
    "nansum",
    "mean",
    "cumsum",
    "reshape",
    "squeeze",
    "expand_dims",
    "transpose",
    "broadcast_to",
    "alias",
    "getitem",
    "index",
    "diagonal",
    "tril",
    "triu",
    "tile",
    "repeat",
    "roll",
    # the Fourier transforms (their sizes, axes and norm are parameters)
    "fft.fft",
    "fft.ifft",
    "fft.fft2",
    "fft.ifft2",
    "fft.fftn",
    "fft.ifftn",
    "fft.rfft",
    "fft.fftshift",
    "fft.ifftshift",
)

# NOTE: ops linear in each array operand when the others are held fixed.
_MULTILINEAR = ("matmul", "dot", "inner", "tensordot", "einsum")


@register_jvp(*(get_op(name) for name in _LINEAR_IN_FIRST))
def _linear_jvp(ctx: JvpContext) -> Node | None:
    tangent = ctx.tangent(0)
    if tangent is None:
        return None
    return ctx.same(tangent, *ctx.inputs[1:])


@register_jvp(*(get_op(name) for name in _MULTILINEAR))
def _multilinear_jvp(ctx: JvpContext) -> Node | None:
    terms: list[Node | None] = []
    for position, tangent in enumerate(ctx.tangents):
        if tangent is None:
            continue
        operands = list(ctx.inputs)
        operands[position] = tangent
        terms.append(ctx.same(*operands))
    return ctx.sum_of(terms)
