"""VJP rules of extern-table ops (`numpile_capture.extern_rows`): FFTs, shifts, cholesky,
eigvalsh and svdvals (inv, det and solve are in `vjp_linalg.py`), and of the special
functions erf and erfc.

A row without a rule says why in its `no_grad` (the exclusion table reads it). Complex
numbers follow JAX's convention (see `vjp_table`): the DFT matrix is symmetric, so a complex
transform's transpose is the same transform of the cotangent, resized back to the input's
length along each axis where `n`/`s` padded or cut it. NumPy's Hermitian and Cholesky
routines read the lower triangle only, so their rules give the symmetric gradient folded
onto it (`tril(G + G.T) - diag(G)`).

    >>> from numpile_capture import get_op
    >>> get_vjp(get_op("fft.fft")) is not None
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from numpile_capture import Node, extern_row, get_op

from .vjp_table import VjpContext, get_vjp, register_vjp

__all__ = ["get_vjp", "singular_values_transpose"]


def _swap(ctx: VjpContext, value: Node) -> Node:
    ndim = len(value.meta.shape)  # type: ignore[union-attr]
    return ctx.call("transpose", value, axes=(*range(ndim - 2), ndim - 1, ndim - 2))


def _resize(ctx: VjpContext, grad: Node, axes: Sequence[int], sizes: Sequence[Any]) -> Node:
    # Back to the input's length along `axes`: cut what padding added, pad what a cut removed.
    for axis, size in zip(axes, sizes, strict=True):
        current = grad.meta.shape[axis]  # type: ignore[union-attr]
        if current == size:
            continue
        ndim = len(grad.meta.shape)  # type: ignore[union-attr]
        if isinstance(current, int) and isinstance(size, int) and current < size:
            widths = tuple((0, size - current) if d == axis else (0, 0) for d in range(ndim))
            grad = ctx.call("pad", grad, pad_width=widths)
        else:
            index = tuple(slice(0, size) if d == axis else slice(None) for d in range(ndim))
            grad = ctx.call("getitem", grad, index=index)
    return grad


_ONE_AXIS = frozenset(f"fft.{n}" for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
_TWO_AXES = frozenset(f"fft.{n}" for n in ("fft2", "ifft2", "rfft2", "irfft2"))


def _transform_axes(ctx: VjpContext, ndim: int) -> list[int]:
    params = ctx.params
    name = ctx.node.op.name  # type: ignore[union-attr]
    if "axis" in params or name in _ONE_AXIS:
        return [params.get("axis", -1) % ndim]
    axes = params.get("axes")
    if axes is None:
        sizes = params.get("s")
        if name in _TWO_AXES:
            axes = (-2, -1)
        elif sizes is not None:
            axes = tuple(range(-len(sizes), 0))
        else:
            axes = tuple(range(ndim))
    return [axis % ndim for axis in axes]


@register_vjp(
    *(get_op(f"fft.{name}") for name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"))
)
def _complex_fft_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    meta = ctx.input_meta(0)
    axes = _transform_axes(ctx, meta.ndim)
    params = {"norm": ctx.params["norm"]} if ctx.params.get("norm") is not None else {}
    name = ctx.node.op.name  # type: ignore[union-attr]
    if name in ("fft.fft", "fft.ifft"):
        grad = ctx.call(name, ctx.cotangent, axis=axes[0], **params)
    else:
        grad = ctx.call(name, ctx.cotangent, axes=tuple(axes), **params)
    grad = _resize(ctx, grad, axes, [meta.shape[axis] for axis in axes])
    return [grad if meta.dtype.kind == "c" else ctx.call("real", grad)]


@register_vjp(get_op("fft.rfft"))
def _rfft_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # rfft keeps the first n // 2 + 1 outputs of fft: the transpose pads the cotangent.
    meta = ctx.input_meta(0)
    axis = _transform_axes(ctx, meta.ndim)[0]
    points = ctx.params.get("n") or meta.shape[axis]
    params = {"norm": ctx.params["norm"]} if ctx.params.get("norm") is not None else {}
    grad = ctx.call("fft.fft", ctx.cotangent, n=points, axis=axis, **params)
    grad = _resize(ctx, grad, [axis], [meta.shape[axis]])
    return [ctx.call("real", grad)]


# NOTE: the norm whose scale is the other direction's: the transpose of a transform scaled
# by `norm` is the opposite-direction transform with the same scale.
_SWAPPED = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(ctx: VjpContext, *, swap: bool = False) -> dict[str, Any]:
    norm = ctx.params.get("norm")
    if swap:
        return {"norm": _SWAPPED[norm]}
    return {} if norm is None else {"norm": norm}


def _real_in_axes(ctx: VjpContext, ndim: int) -> tuple[list[int], list[Any]]:
    # The axes of an r2c transform and the points it takes along each (`n` / `s` or the
    # input's own lengths); the last axis is the half-spectrum one.
    meta = ctx.input_meta(0)
    axes = _transform_axes(ctx, ndim)
    given = ctx.params.get("s")
    if ctx.params.get("n") is not None:
        given = (ctx.params["n"],)
    points = list(given) if given is not None else [meta.shape[axis] for axis in axes]
    return axes, points


@register_vjp(get_op("fft.rfft2"), get_op("fft.rfftn"))
def _rfftn_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # rfftn is fftn keeping the first half (plus one) of the last axis's outputs: its
    # transpose zero-pads the cotangent back to the full length (fftn's `s`), then fftn.
    meta = ctx.input_meta(0)
    axes, points = _real_in_axes(ctx, meta.ndim)
    grad = ctx.call("fft.fftn", ctx.cotangent, s=tuple(points), axes=tuple(axes), **_norm(ctx))
    grad = _resize(ctx, grad, axes, [meta.shape[axis] for axis in axes])
    return [ctx.call("real", grad)]


def _half_spectrum_weights(ctx: VjpContext, length: Any, points: Any, axis: int, ndim: int) -> Node:
    # The c2r transforms read bins 1 .. (points - 1) // 2 twice (as themselves and as their
    # conjugate mirror), bin 0 and an even `points`'s middle bin once: weights 1, 2, ..., 2, 1.
    if not isinstance(length, int) or not isinstance(points, int):
        raise NotImplementedError("the gradient of a c2r FFT of a symbolic length")
    weights = [1.0 if k == 0 or 2 * k == points else 2.0 for k in range(length)]
    node = ctx.call("array", value=tuple(weights), dtype=None)
    trailing = tuple(range(1, ndim - axis))
    return ctx.call("expand_dims", node, axis=trailing) if trailing else node


def _c2r_vjp(ctx: VjpContext, axes: list[int], points: list[Any], *, swap: bool) -> Node:
    # y = c2r(a): the transpose is the r2c transform of the cotangent (same scale, so the
    # swapped norm), the doubly read bins weighted 2, conjugated (JAX's convention for a
    # real-linear map of a complex input), resized back to the input's lengths.
    meta = ctx.input_meta(0)
    norm = _norm(ctx, swap=not swap)
    grad = ctx.call("fft.rfftn", ctx.cotangent, s=tuple(points), axes=tuple(axes), **norm)
    last = axes[-1]
    length = grad.meta.shape[last]  # type: ignore[union-attr]
    weights = _half_spectrum_weights(ctx, length, points[-1], last, meta.ndim)
    grad = ctx.call("conjugate", ctx.call("multiply", grad, weights))
    grad = _resize(ctx, grad, axes, [meta.shape[axis] for axis in axes])
    return grad if meta.dtype.kind == "c" else ctx.call("real", grad)


def _c2r_points(ctx: VjpContext) -> tuple[list[int], list[Any]]:
    # The axes and output lengths of a c2r transform: `n` / `s`, else 2 * (length - 1).
    meta = ctx.input_meta(0)
    axes = _transform_axes(ctx, meta.ndim)
    out = ctx.node.meta.shape  # type: ignore[union-attr]
    return axes, [out[axis] for axis in axes]


@register_vjp(get_op("fft.irfft"), get_op("fft.irfft2"), get_op("fft.irfftn"))
def _irfft_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    axes, points = _c2r_points(ctx)
    return [_c2r_vjp(ctx, axes, points, swap=False)]


@register_vjp(get_op("fft.hfft"))
def _hfft_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # hfft(a) = irfft(conj(a)) with the swapped norm: the conjugate of irfft's rule.
    axes, points = _c2r_points(ctx)
    grad = _c2r_vjp(ctx, axes, points, swap=True)
    meta = ctx.input_meta(0)
    return [ctx.call("conjugate", grad) if meta.dtype.kind == "c" else grad]


@register_vjp(get_op("fft.ihfft"))
def _ihfft_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # ihfft(a) = conj(rfft(a)) with the swapped norm: rfft's rule on the conjugate cotangent.
    meta = ctx.input_meta(0)
    axis = _transform_axes(ctx, meta.ndim)[0]
    points = ctx.params.get("n") or meta.shape[axis]
    cotangent = ctx.call("conjugate", ctx.cotangent)
    grad = ctx.call("fft.fft", cotangent, n=points, axis=axis, **_norm(ctx, swap=True))
    grad = _resize(ctx, grad, [axis], [meta.shape[axis]])
    return [ctx.call("real", grad)]


@register_vjp(get_op("fft.fftshift"), get_op("fft.ifftshift"))
def _shift_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    inverse = "fft.ifftshift" if ctx.node.op.name == "fft.fftshift" else "fft.fftshift"  # type: ignore[union-attr]
    axes = ctx.params.get("axes")
    params = {} if axes is None else {"axes": axes}
    return [ctx.call(inverse, ctx.cotangent, **params)]


def _fold_lower(ctx: VjpContext, symmetric: Node) -> Node:
    # The gradient for NumPy's routines that read the lower triangle of a symmetric input.
    both = ctx.call("add", symmetric, _swap(ctx, symmetric))
    lower = ctx.call("tril", both)
    diagonal = ctx.call("subtract", ctx.call("tril", symmetric), ctx.call("tril", symmetric, k=-1))
    return ctx.call("subtract", lower, diagonal)


def _items(ctx: VjpContext, name: str, *inputs: Any, **params: Any) -> tuple[Node, ...]:
    # The result items of a tuple-valued extern row, as bind_extern builds them.
    row = extern_row(name)
    node = ctx.graph.call(row.op, *inputs, **params)
    metas = row.meta_of_node(*(value.meta for value in inputs), **params)
    assert isinstance(metas, tuple)
    item = get_op("result_item")
    return tuple(
        ctx.graph.add_node(item, (node,), {"index": k}, meta) for k, meta in enumerate(metas)
    )


@register_vjp(get_op("linalg.cholesky"))
def _cholesky_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # Murray (2016), as PyTorch's cholesky_backward: A_bar = L^-T P L^-1 with
    # P = sym(tril(L^T L_bar)) (half diagonal), then folded onto the lower triangle.
    low = ctx.node
    product = ctx.call("tril", ctx.call("matmul", _swap(ctx, low), ctx.cotangent))
    strict = ctx.call("tril", product, k=-1)
    middle = ctx.call("multiply", ctx.call("add", product, _swap(ctx, strict)), 0.5)
    left = ctx.call("solve", _swap(ctx, low), middle)
    grad = _swap(ctx, ctx.call("solve", _swap(ctx, low), _swap(ctx, left)))
    symmetric = ctx.call("multiply", ctx.call("add", grad, _swap(ctx, grad)), 0.5)
    return [_fold_lower(ctx, symmetric)]


@register_vjp(get_op("linalg.eigvalsh"))
def _eigvalsh_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # dw_i = v_i^T dA v_i: A_bar = V diag(w_bar) V^T, folded onto the triangle NumPy read.
    params = {"UPLO": ctx.params["UPLO"]} if "UPLO" in ctx.params else {}
    _, vectors = _items(ctx, "linalg.eigh", ctx.inputs[0], **params)
    scaled = ctx.call("multiply", vectors, ctx.call("expand_dims", ctx.cotangent, axis=(-2,)))
    symmetric = ctx.call("matmul", scaled, _swap(ctx, vectors))
    if params.get("UPLO") == "U":
        return [_swap(ctx, _fold_lower(ctx, _swap(ctx, symmetric)))]
    return [_fold_lower(ctx, symmetric)]


def singular_values_transpose(ctx: VjpContext, a: Node, values_bar: Node) -> Node:
    """A_bar of the singular values of `a` from their cotangent: ds_i = u_i^T dA v_i, so
    A_bar = U diag(s_bar) Vh (distinct singular values)."""
    left, _, right = _items(ctx, "linalg.svd", a, full_matrices=False)
    scaled = ctx.call("multiply", left, ctx.call("expand_dims", values_bar, axis=(-2,)))
    return ctx.call("matmul", scaled, right)


@register_vjp(get_op("linalg.svdvals"))
def _svdvals_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    return [singular_values_transpose(ctx, ctx.inputs[0], ctx.cotangent)]


@register_vjp(get_op("erf"), get_op("erfc"))
def _erf_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # d erf(x) / dx = 2 / sqrt(pi) * exp(-x**2); erfc is 1 - erf.
    x = ctx.inputs[0]
    scale = 2.0 / math.sqrt(math.pi)
    if ctx.node.op.name == "erfc":  # type: ignore[union-attr]
        scale = -scale
    slope = ctx.call(
        "multiply", ctx.call("exp", ctx.call("negative", ctx.call("square", x))), scale
    )
    return [ctx.call("multiply", ctx.cotangent, slope)]


def _own_items(ctx: VjpContext) -> tuple[Node, ...]:
    # The items of the tuple node the rule is for (new `result_item` nodes reading it).
    row = extern_row(ctx.node.op.name)  # type: ignore[union-attr]
    metas = row.meta_of_node(
        *(v.meta if isinstance(v, Node) else v for v in ctx.inputs), **ctx.params
    )
    assert isinstance(metas, tuple)
    item = get_op("result_item")
    return tuple(
        ctx.graph.add_node(item, (ctx.node,), {"index": k}, meta) for k, meta in enumerate(metas)
    )


def _off_diagonal_inverse(ctx: VjpContext, values: Node, *, squared: bool = False) -> Node:
    # F[..., i, j] = 1 / (v_j - v_i) off the diagonal (of v**2 when `squared`), 0 on it:
    # the coupling of two eigen- (or singular) vectors (distinct values assumed).
    size = values.meta.shape[-1]  # type: ignore[union-attr]
    if not isinstance(size, int):
        raise NotImplementedError("the gradient of a decomposition of a symbolic size")
    if squared:
        values = ctx.call("multiply", values, values)
    gaps = ctx.call(
        "subtract",
        ctx.call("expand_dims", values, axis=(-2,)),
        ctx.call("expand_dims", values, axis=(-1,)),
    )
    eye = ctx.call("eye", n=size, dtype=values.meta.dtype)  # type: ignore[union-attr]
    off = ctx.call("subtract", 1.0, eye)
    return ctx.call("divide", off, ctx.call("add", gaps, eye))


def _diagonal_matrix(ctx: VjpContext, values: Node) -> Node:
    size = values.meta.shape[-1]  # type: ignore[union-attr]
    eye = ctx.call("eye", n=size, dtype=values.meta.dtype)  # type: ignore[union-attr]
    return ctx.call("multiply", ctx.call("expand_dims", values, axis=(-2,)), eye)


@register_vjp(get_op("linalg.eigh"))
def _eigh_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # A = V diag(w) V^T (distinct eigenvalues): A_bar = V (diag(w_bar) + F o V^T V_bar) V^T,
    # symmetrized, then folded onto the triangle NumPy read (as eigvalsh's rule).
    values, vectors = _own_items(ctx)
    middle: Node | None = None
    if 0 in ctx.items:
        middle = _diagonal_matrix(ctx, ctx.items[0])
    if 1 in ctx.items:
        coupling = ctx.call("matmul", _swap(ctx, vectors), ctx.items[1])
        weighted = ctx.call("multiply", _off_diagonal_inverse(ctx, values), coupling)
        middle = weighted if middle is None else ctx.call("add", middle, weighted)
    assert middle is not None
    full = ctx.call("matmul", ctx.call("matmul", vectors, middle), _swap(ctx, vectors))
    symmetric = ctx.call("multiply", ctx.call("add", full, _swap(ctx, full)), 0.5)
    if ctx.params.get("UPLO") == "U":
        return [_swap(ctx, _fold_lower(ctx, _swap(ctx, symmetric)))]
    return [_fold_lower(ctx, symmetric)]


def _projector_off(ctx: VjpContext, basis: Node) -> Node:
    # I - B B^T: the projection off the columns of `basis` (static row count).
    rows = basis.meta.shape[-2]  # type: ignore[union-attr]
    if not isinstance(rows, int):
        raise NotImplementedError("the gradient of a decomposition of a symbolic size")
    eye = ctx.call("eye", n=rows, dtype=basis.meta.dtype)  # type: ignore[union-attr]
    return ctx.call("subtract", eye, ctx.call("matmul", basis, _swap(ctx, basis)))


@register_vjp(get_op("linalg.svd"))
def _svd_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # Townsend (2016), distinct nonzero singular values, A = U diag(s) V^T:
    # A_bar = U (J S + diag(s_bar) + S K) V^T + (I - U U^T) U_bar S^-1 V^T
    #       + U S^-1 V_bar^T (I - V V^T), J = F o (U^T U_bar - U_bar^T U),
    #       K = F o (V^T V_bar - V_bar^T V), F_ij = 1 / (s_j^2 - s_i^2).
    if ctx.params.get("compute_uv") is False:
        left, _, right = _items(ctx, "linalg.svd", ctx.inputs[0], full_matrices=False)
        scaled = ctx.call("multiply", left, ctx.call("expand_dims", ctx.cotangent, axis=(-2,)))
        return [ctx.call("matmul", scaled, right)]
    meta = ctx.input_meta(0)
    if ctx.params.get("full_matrices", True) and meta.shape[-1] != meta.shape[-2]:
        raise NotImplementedError(
            "the gradient of np.linalg.svd with full_matrices=True of a non-square matrix "
            "(the extra singular vectors are not unique): pass full_matrices=False"
        )
    left, values, right_h = _own_items(ctx)
    right = _swap(ctx, right_h)
    row = ctx.call("expand_dims", values, axis=(-2,))  # s_j along columns
    column = ctx.call("expand_dims", values, axis=(-1,))  # s_i along rows
    coupling = _off_diagonal_inverse(ctx, values, squared=True)
    middle: Node | None = None
    extra: list[Node] = []
    if 1 in ctx.items:
        middle = _diagonal_matrix(ctx, ctx.items[1])
    if 0 in ctx.items:
        bar = ctx.items[0]
        product = ctx.call("matmul", _swap(ctx, left), bar)
        skew = ctx.call("subtract", product, _swap(ctx, product))
        term = ctx.call("multiply", ctx.call("multiply", coupling, skew), row)
        middle = term if middle is None else ctx.call("add", middle, term)
        outside = ctx.call("matmul", _projector_off(ctx, left), ctx.call("divide", bar, row))
        extra.append(ctx.call("matmul", outside, right_h))
    if 2 in ctx.items:
        bar = _swap(ctx, ctx.items[2])
        product = ctx.call("matmul", _swap(ctx, right), bar)
        skew = ctx.call("subtract", product, _swap(ctx, product))
        term = ctx.call("multiply", column, ctx.call("multiply", coupling, skew))
        middle = term if middle is None else ctx.call("add", middle, term)
        outside = ctx.call("divide", _swap(ctx, bar), column)
        outside = ctx.call("matmul", outside, _projector_off(ctx, right))
        extra.append(ctx.call("matmul", left, outside))
    grad = None
    if middle is not None:
        grad = ctx.call("matmul", ctx.call("matmul", left, middle), right_h)
    for term in extra:
        grad = term if grad is None else ctx.call("add", grad, term)
    return [grad]


@register_vjp(get_op("linalg.qr"))
def _qr_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # A = QR with m >= n (Liao et al. 2019): M = R R_bar^T - Q_bar^T Q,
    # A_bar = (Q_bar + Q copyltu(M)) R^-T, copyltu(M) the symmetric matrix of M's lower part.
    meta = ctx.input_meta(0)
    mode = ctx.params.get("mode", "reduced")
    rows, columns = meta.shape[-2], meta.shape[-1]
    if mode not in ("reduced", "complete", "r") or not isinstance(rows, int):
        raise NotImplementedError(f"the gradient of np.linalg.qr with mode={mode!r}")
    if not isinstance(columns, int) or rows < columns or (mode == "complete" and rows != columns):
        raise NotImplementedError("the gradient of np.linalg.qr of a wide matrix")
    if mode == "r":
        q, r = _items(ctx, "linalg.qr", ctx.inputs[0])
        bars: dict[int, Node] = {1: ctx.cotangent}
    else:
        q, r = _own_items(ctx)
        bars = ctx.items
    m: Node | None = None
    if 1 in bars:
        m = ctx.call("matmul", r, _swap(ctx, bars[1]))
    if 0 in bars:
        product = ctx.call("matmul", _swap(ctx, bars[0]), q)
        m = ctx.call("negative", product) if m is None else ctx.call("subtract", m, product)
    assert m is not None
    lower = ctx.call("tril", m)
    symmetric = ctx.call("add", lower, _swap(ctx, ctx.call("tril", m, k=-1)))
    b = ctx.call("matmul", q, symmetric)
    if 0 in bars:
        b = ctx.call("add", b, bars[0])
    # B R^-T = (R^-1 B^T)^T
    return [_swap(ctx, ctx.call("solve", r, _swap(ctx, b)))]


@register_vjp(get_op("linalg.slogdet"))
def _slogdet_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # d log|det A| = tr(A^-1 dA): A_bar = logabsdet_bar * A^-T; the sign carries none.
    if 1 not in ctx.items:
        return [None]
    scale = ctx.call("expand_dims", ctx.items[1], axis=(-2, -1))
    return [ctx.call("multiply", scale, _swap(ctx, ctx.call("inv", ctx.inputs[0])))]
