"""VJP rules of linear algebra (matmul, dot, tensordot, einsum, inv, det, solve, norm, tril, triu).

Contractions transpose into contractions: the cotangent of `matmul(a, b)`
for `a` is `ct @ b^T`; 1-d operands are lifted to matrices first and the
added axis squeezed afterwards. No conjugation (JAX's convention).

    >>> from numpile_capture import get_op
    >>> from numpile_autograd_aot.vjp_table import get_vjp
    >>> get_vjp(get_op("solve")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numpile_capture import ArrayMeta, Node, get_op

from .vjp_table import VjpContext, register_vjp


def _ndim(value: Node) -> int:
    meta = value.meta
    assert isinstance(meta, ArrayMeta)
    return meta.ndim


def _swap_last(ctx: VjpContext, value: Node) -> Node:
    ndim = _ndim(value)
    axes = (*range(ndim - 2), ndim - 1, ndim - 2)
    return ctx.call("transpose", value, axes=axes)


def _matmul_grads(ctx: VjpContext, a: Node, b: Node, g: Node) -> list[Node | None]:
    a_vector = _ndim(a) == 1
    b_vector = _ndim(b) == 1
    a2 = ctx.call("expand_dims", a, axis=(0,)) if a_vector else a
    b2 = ctx.call("expand_dims", b, axis=(1,)) if b_vector else b
    g2 = g
    if a_vector:
        g2 = ctx.call("expand_dims", g2, axis=(_ndim(g2) if b_vector else _ndim(g2) - 1,))
    if b_vector:
        g2 = ctx.call("expand_dims", g2, axis=(_ndim(g2),))
    ga = gb = None
    if ctx.wants(0):
        ga = ctx.call("matmul", g2, _swap_last(ctx, b2))
        if a_vector:
            ga = ctx.call("squeeze", ga, axis=(_ndim(ga) - 2,))
    if ctx.wants(1):
        gb = ctx.call("matmul", _swap_last(ctx, a2), g2)
        if b_vector:
            gb = ctx.call("squeeze", gb, axis=(_ndim(gb) - 1,))
    return [ga, gb]


@register_vjp(get_op("matmul"))
def _matmul_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    a, b = ctx.inputs
    return _matmul_grads(ctx, a, b, ctx.cotangent)


def _tensordot_grads(
    ctx: VjpContext, a: Node, b: Node, a_axes: tuple[int, ...], b_axes: tuple[int, ...]
) -> list[Node | None]:
    g = ctx.cotangent
    a_free = [i for i in range(_ndim(a)) if i not in a_axes]
    b_free = [i for i in range(_ndim(b)) if i not in b_axes]
    g_a = tuple(range(len(a_free)))
    g_b = tuple(range(len(a_free), len(a_free) + len(b_free)))
    ga = gb = None
    if ctx.wants(0):
        raw = ctx.call("tensordot", g, b, axes=(g_b, tuple(b_free)))
        # raw dims: a's free axes, then a's contracted axes in the order of sorted b_axes
        order = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
        ga = ctx.call("transpose", raw, axes=tuple(int(i) for i in np.argsort(order)))
    if ctx.wants(1):
        raw = ctx.call("tensordot", a, g, axes=(tuple(a_free), g_a))
        order = [b_axes[a_axes.index(i)] for i in sorted(a_axes)] + b_free
        gb = ctx.call("transpose", raw, axes=tuple(int(i) for i in np.argsort(order)))
    return [ga, gb]


def _tensordot_axes(axes: Any, a_ndim: int, b_ndim: int) -> tuple[tuple[int, ...], ...]:
    if isinstance(axes, int):
        return tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
    first, second = axes
    first = first if isinstance(first, tuple | list) else (first,)
    second = second if isinstance(second, tuple | list) else (second,)
    return tuple(i % a_ndim for i in first), tuple(i % b_ndim for i in second)


@register_vjp(get_op("tensordot"))
def _tensordot_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    a, b = ctx.inputs
    a_axes, b_axes = _tensordot_axes(ctx.params["axes"], _ndim(a), _ndim(b))
    return _tensordot_grads(ctx, a, b, a_axes, b_axes)


@register_vjp(get_op("dot"))
def _dot_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    a, b = ctx.inputs
    g = ctx.cotangent
    if not (isinstance(a, Node) and isinstance(b, Node)) or 0 in (_ndim(a), _ndim(b)):
        return [
            ctx.call("multiply", g, b) if ctx.wants(0) else None,
            ctx.call("multiply", g, a) if ctx.wants(1) else None,
        ]
    if _ndim(a) <= 2 and _ndim(b) <= 2:
        return _matmul_grads(ctx, a, b, g)
    contracted = 0 if _ndim(b) == 1 else _ndim(b) - 2
    return _tensordot_grads(ctx, a, b, (_ndim(a) - 1,), (contracted,))


@register_vjp(get_op("inner"))
def _inner_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    a, b = ctx.inputs
    g = ctx.cotangent
    if not (isinstance(a, Node) and isinstance(b, Node)) or 0 in (_ndim(a), _ndim(b)):
        return [
            ctx.call("multiply", g, b) if ctx.wants(0) else None,
            ctx.call("multiply", g, a) if ctx.wants(1) else None,
        ]
    return _tensordot_grads(ctx, a, b, (_ndim(a) - 1,), (_ndim(b) - 1,))


@register_vjp(get_op("einsum"))
def _einsum_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    subscripts = ctx.params["subscripts"].replace(" ", "")
    lhs, arrow, rhs = subscripts.partition("->")
    terms = lhs.split(",")
    if not arrow:
        counts = {label: lhs.count(label) for label in set(lhs) if label.isalpha()}
        rhs = "".join(sorted(label for label, count in counts.items() if count == 1))
    if "." in subscripts or any(len(set(term)) != len(term) for term in terms):
        raise NotImplementedError(f"no VJP for einsum {subscripts!r} (ellipsis or repeated label)")
    grads: list[Node | None] = []
    for position, term in enumerate(terms):
        if not ctx.wants(position):
            grads.append(None)
            continue
        others = [t for i, t in enumerate(terms) if i != position]
        known = set(rhs).union(*others)
        reachable = "".join(label for label in term if label in known)
        spec = ",".join([rhs, *others]) + "->" + reachable
        operands = [ctx.cotangent, *(v for i, v in enumerate(ctx.inputs) if i != position)]
        grad = ctx.call("einsum", *operands, subscripts=spec)
        if reachable != term:  # labels summed in this operand alone: broadcast back
            missing = tuple(i for i, label in enumerate(term) if label not in known)
            grad = ctx.call("expand_dims", grad, axis=missing)
            grad = ctx.call("broadcast_to", grad, shape=ctx.input_meta(position).shape)
        grads.append(grad)
    return grads


@register_vjp(get_op("inv"))
def _inv_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    turned = _swap_last(ctx, ctx.node)
    product = ctx.call("matmul", ctx.call("matmul", turned, ctx.cotangent), turned)
    return [ctx.call("negative", product)]


@register_vjp(get_op("det"))
def _det_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    scale = ctx.call("expand_dims", ctx.call("multiply", ctx.cotangent, ctx.node), axis=(-2, -1))
    inverse = ctx.call("inv", ctx.inputs[0])
    return [ctx.call("multiply", scale, _swap_last(ctx, inverse))]


@register_vjp(get_op("solve"))
def _solve_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    a, b = ctx.inputs
    vector = _ndim(b) == 1
    gb = ctx.call("solve", _swap_last(ctx, a), ctx.cotangent)
    x = ctx.node
    if vector:
        ga = ctx.call(
            "multiply",
            ctx.call("expand_dims", gb, axis=(_ndim(gb),)),
            ctx.call("expand_dims", x, axis=(_ndim(x) - 1,)),
        )
    else:
        ga = ctx.call("matmul", gb, _swap_last(ctx, x))
    return [ctx.call("negative", ga) if ctx.wants(0) else None, gb]


@register_vjp(get_op("norm"))
def _norm_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    if ctx.params.get("ord") not in (None, "fro", 2) or (
        ctx.params.get("ord") == 2
        and ctx.params.get("axis") is not None
        and not isinstance(ctx.params.get("axis"), int)
    ):
        raise NotImplementedError(f"no VJP for norm with ord={ctx.params.get('ord')!r}")
    x = ctx.inputs[0]
    meta = ctx.input_meta(0)
    axis = ctx.params.get("axis")
    axes = (
        tuple(range(meta.ndim))
        if axis is None
        else (
            tuple(a % meta.ndim for a in axis) if isinstance(axis, tuple) else (axis % meta.ndim,)
        )
    )
    result = ctx.node
    g = ctx.cotangent
    if not ctx.params.get("keepdims", False):
        result = ctx.call("expand_dims", result, axis=axes)
        g = ctx.call("expand_dims", g, axis=axes)
    safe = ctx.call("where", ctx.call("equal", result, 0), 1, result)
    direction = ctx.call("conjugate", x) if meta.dtype.kind == "c" else x
    return [ctx.call("multiply", ctx.call("divide", g, safe), direction)]


# --- creation --------------------------------------------------------------------------------


@register_vjp(get_op("zeros_like"), get_op("ones_like"), get_op("empty_like"), get_op("arange"))
def _no_vjp_creation(ctx: VjpContext) -> Sequence[Node | None]:
    # The result does not depend on the input's values.
    return [None] * len(ctx.inputs)


@register_vjp(get_op("full"))
def _full_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [ctx.call("sum", ctx.cotangent)]


@register_vjp(get_op("full_like"))
def _full_like_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [None, ctx.call("sum", ctx.cotangent)]


# --- triangles -------------------------------------------------------------------------------


@register_vjp(get_op("tril"), get_op("triu"))
def _triangle_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    assert ctx.node.op is not None
    return [ctx.call(ctx.node.op.name, ctx.cotangent, k=ctx.params.get("k", 0))]
