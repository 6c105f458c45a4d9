"""VJP rules of the least-squares extern rows: `linalg.pinv`, `linalg.lstsq`, `polyfit`.

All three hold where the rank is constant near the input (full rank, as NumPy's cutoffs
`rcond` / `rtol` leave it): the pseudo-inverse is then differentiable (Golub and Pereyra
1973), with the transpose of its derivative

    A_bar = -P^T P_bar P^T + (I - A P) P_bar^T P P^T + P^T P P_bar^T (I - P A),  P = pinv(A),

written without an identity matrix (`M - A (P M)`), so batches and any shape work. `lstsq`'s
solution is `pinv(a) @ b`; its singular values take `svdvals`' rule; its residuals have no
rule (their length is 0 or the number of right-hand sides, known only at run time) and its
rank is an integer. `polyfit(x, y, deg, w=w)` is the least-squares solution of
`(w V(x)) c = w y` with V the Vandermonde matrix of `x` (NumPy scales V's columns first,
which leaves the solution unchanged): the rule builds `A = w V` in the graph and goes
through the same transpose, then back to `x` (V's derivative), `w` and `y`.

    >>> from numpile_capture import get_op
    >>> get_vjp(get_op("linalg.pinv")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from numpile_capture import Node, get_op

from .vjp_extern import singular_values_transpose
from .vjp_table import VjpContext, get_vjp, register_vjp

__all__ = ["get_vjp"]


def _swap(ctx: VjpContext, value: Node) -> Node:
    ndim = value.meta.ndim  # type: ignore[union-attr]
    return ctx.call("transpose", value, axes=(*range(ndim - 2), ndim - 1, ndim - 2))


def _matmul(ctx: VjpContext, *factors: Node) -> Node:
    product = factors[0]
    for factor in factors[1:]:
        product = ctx.call("matmul", product, factor)
    return product


def _pinv_transpose(ctx: VjpContext, a: Node, p: Node, p_bar: Node) -> Node:
    # The module docstring's formula: A_bar from P = pinv(A) and P_bar (constant rank).
    first = ctx.call("negative", _matmul(ctx, _swap(ctx, p), p_bar, _swap(ctx, p)))
    left = _matmul(ctx, _swap(ctx, p_bar), p, _swap(ctx, p))  # P_bar^T P P^T, (m, n)
    second = ctx.call("subtract", left, _matmul(ctx, a, p, left))  # (I - A P) left
    right = _matmul(ctx, _swap(ctx, p), p, _swap(ctx, p_bar))  # P^T P P_bar^T, (m, n)
    third = ctx.call("subtract", right, _matmul(ctx, right, p, a))  # right (I - P A)
    return ctx.call("add", ctx.call("add", first, second), third)


def _lower_read(ctx: VjpContext, grad: Node) -> Node:
    # NumPy's Hermitian routines read the lower triangle: the gradient of the symmetric
    # matrix built from it (an off-diagonal entry counts twice, the diagonal once).
    both = ctx.call("tril", ctx.call("add", grad, _swap(ctx, grad)))
    diagonal = ctx.call("subtract", ctx.call("tril", grad), ctx.call("tril", grad, k=-1))
    return ctx.call("subtract", both, diagonal)


@register_vjp(get_op("linalg.pinv"))
def _pinv_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    grad = _pinv_transpose(ctx, ctx.inputs[0], ctx.node, ctx.cotangent)
    # pinv(hermitian=True) decomposes with eigh, which reads the lower triangle.
    return [_lower_read(ctx, grad) if ctx.params.get("hermitian") else grad]


def _as_matrix(ctx: VjpContext, value: Node) -> Node:
    # A 1-D right-hand side (or solution) as one column.
    return ctx.call("expand_dims", value, axis=(-1,)) if value.meta.ndim == 1 else value  # type: ignore[union-attr]


def _solution_transpose(ctx: VjpContext, a: Node, b: Node, x_bar: Node) -> tuple[Node, Node]:
    # x = pinv(a) @ b: b_bar = P^T x_bar, a_bar from P_bar = x_bar b^T.
    p = ctx.call("linalg.pinv", a)
    columns = _as_matrix(ctx, x_bar)
    b_bar = ctx.call("matmul", _swap(ctx, p), columns)
    p_bar = ctx.call("matmul", columns, _swap(ctx, _as_matrix(ctx, b)))
    return _pinv_transpose(ctx, a, p, p_bar), b_bar


@register_vjp(get_op("linalg.lstsq"))
def _lstsq_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    a, b = ctx.inputs[:2]
    if 1 in ctx.items:
        raise NotImplementedError(
            "the gradient through np.linalg.lstsq's residuals (their length is known only at "
            "run time): compute them as np.sum((b - a @ x) ** 2, axis=0)"
        )
    a_bar: Node | None = None
    b_bar: Node | None = None
    if 0 in ctx.items:
        a_bar, b_bar = _solution_transpose(ctx, a, b, ctx.items[0])
        if b.meta.ndim == 1:
            b_bar = ctx.call("reshape", b_bar, shape=b.meta.shape)
    if 3 in ctx.items:
        term = singular_values_transpose(ctx, a, ctx.items[3])
        a_bar = term if a_bar is None else ctx.call("add", a_bar, term)
    return [a_bar, b_bar]


def _vandermonde(ctx: VjpContext, x: Node, degree: int) -> tuple[Node, Node]:
    # V[i, j] = x_i ** (degree - j) and dV/dx_i = (degree - j) x_i ** (degree - j - 1).
    dtype = x.meta.dtype  # type: ignore[union-attr]
    powers = tuple(float(k) for k in range(degree, -1, -1))
    column = ctx.call("expand_dims", x, axis=(-1,))
    exponents = ctx.call("array", value=powers, dtype=dtype)
    lowered = ctx.call("array", value=tuple(max(k - 1.0, 0.0) for k in powers), dtype=dtype)
    values = ctx.call("power", column, exponents)
    slopes = ctx.call("multiply", ctx.call("power", column, lowered), exponents)
    return values, slopes


@register_vjp(get_op("polyfit"))
def _polyfit_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    x, y, w = ctx.inputs[:3]
    degree = int(ctx.params["deg"])
    dtype = ctx.meta.dtype
    x = ctx.call("astype", x, dtype=dtype)
    values, slopes = _vandermonde(ctx, x, degree)
    weights = (
        None
        if w is None
        else ctx.call("expand_dims", ctx.call("astype", w, dtype=dtype), axis=(-1,))
    )
    a = values if weights is None else ctx.call("multiply", weights, values)
    rhs = _as_matrix(ctx, ctx.call("astype", y, dtype=dtype))
    b = rhs if weights is None else ctx.call("multiply", weights, rhs)
    a_bar, b_bar = _solution_transpose(ctx, a, b, ctx.cotangent)
    grads: list[Node | None] = [None, None, None]
    if ctx.wants(1):
        y_bar = b_bar if weights is None else ctx.call("multiply", weights, b_bar)
        grads[1] = ctx.call("reshape", y_bar, shape=y.meta.shape)
    if ctx.wants(0):
        on_x = ctx.call("sum", ctx.call("multiply", a_bar, slopes), axis=(-1,))
        grads[0] = (
            on_x
            if weights is None
            else ctx.call("multiply", on_x, ctx.call("astype", w, dtype=dtype))
        )
    if ctx.wants(2) and weights is not None:
        on_w = ctx.call("sum", ctx.call("multiply", a_bar, values), axis=(-1,))
        on_w = ctx.call("add", on_w, ctx.call("sum", ctx.call("multiply", b_bar, rhs), axis=(-1,)))
        grads[2] = on_w
    return grads
