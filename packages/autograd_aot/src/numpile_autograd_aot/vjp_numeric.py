"""VJP rules of the extern table's numeric rows: `pad`, `convolve`, `correlate`, `interp`.

All four are linear in the differentiated arrays. `pad` is a gather of its input (plus
constants) for the modes `constant`, `edge`, `reflect`, `symmetric` and `wrap`: its
transpose cuts the cotangent (constant) or adds it back onto the elements each border
copied (the others); the modes that compute their borders (`linear_ramp`, `mean`,
`maximum`, ...) have no rule yet. `convolve` and `correlate` in every mode are a window
of the full convolution (the window found on probes of the same lengths, so NumPy's own
centring is used): the transpose zero-pads the cotangent back to the full length and
convolves it with the other operand reversed. `interp` is differentiated with respect to
`fp` only (the weights of the two neighbours of each point; `x` and `xp` move where the
kinks are). Complex inputs follow the convention of `vjp_table`.

    >>> from numpile_capture import get_op
    >>> get_vjp(get_op("convolve")) is not None
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numpile_capture import IndexArray, Node, extern_row, get_op
from numpile_capture.ops.scatter import index_add

from .vjp_table import VjpContext, get_vjp, register_vjp

__all__ = ["get_vjp"]

# NOTE: the pad modes whose border elements are copies of input elements.
_GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")


def _static_shape(ctx: VjpContext, position: int, what: str) -> tuple[int, ...]:
    shape = ctx.input_meta(position).shape
    if not all(isinstance(dim, int) for dim in shape):
        raise NotImplementedError(f"the gradient of {what} of a symbolic shape")
    return tuple(int(dim) for dim in shape)


def _as_input(ctx: VjpContext, grad: Node, position: int) -> Node:
    # The gradient in its input's dtype (a real input of a complex product: the real part).
    dtype = ctx.input_meta(position).dtype
    if grad.meta.dtype.kind == "c" and dtype.kind != "c":  # type: ignore[union-attr]
        grad = ctx.call("real", grad)
    if grad.meta.dtype != dtype:  # type: ignore[union-attr]
        grad = ctx.call("astype", grad, dtype=dtype)
    return grad


@register_vjp(get_op("pad"))
def _pad_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    shape = _static_shape(ctx, 0, "np.pad")
    widths = np.broadcast_to(np.asarray(ctx.params["pad_width"], np.intp), (len(shape), 2))
    mode = ctx.params.get("mode", "constant")
    if mode == "constant":
        index = tuple(
            slice(int(w[0]), int(w[0]) + dim) for w, dim in zip(widths, shape, strict=True)
        )
        return [ctx.call("getitem", ctx.cotangent, index=index)]
    if mode not in _GATHER_MODES:
        raise NotImplementedError(f"the gradient of np.pad with mode={mode!r}")
    # Which input element each output element copies: pad the flat positions themselves.
    options = {"reflect_type": ctx.params["reflect_type"]} if "reflect_type" in ctx.params else {}
    source = np.pad(np.arange(int(np.prod(shape))).reshape(shape), widths, mode, **options)
    positions = ctx.call("array", value=tuple(source.ravel().tolist()), dtype=np.dtype(np.intp))
    flat = ctx.call("reshape", ctx.cotangent, shape=(source.size,))
    zeros = ctx.call("zeros", shape=(int(np.prod(shape)),), dtype=ctx.meta.dtype)
    summed = ctx.graph.call(index_add, zeros, flat, positions, index=(IndexArray(0),))
    return [ctx.call("reshape", summed, shape=shape)]


def _reversed(ctx: VjpContext, value: Node) -> Node:
    return ctx.call("getitem", value, index=(slice(None, None, -1),))


def _window(function: Any, mode: str, sizes: tuple[int, int]) -> int:
    # Where NumPy's `mode` result starts inside the full result (probes of the same lengths).
    rng = np.random.default_rng(0)
    a, v = (rng.standard_normal(n) for n in sizes)
    full, part = function(a, v, "full"), function(a, v, mode)
    for start in range(full.size - part.size + 1):
        if np.allclose(full[start : start + part.size], part):
            return start
    raise AssertionError(f"np.{function.__name__} mode={mode!r} is no window of 'full'")


@register_vjp(get_op("convolve"), get_op("correlate"))
def _convolution_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    name = ctx.node.op.name  # type: ignore[union-attr]
    correlate = name == "correlate"
    (na,), (nv,) = _static_shape(ctx, 0, name), _static_shape(ctx, 1, name)
    if na == 0 or nv == 0:
        raise NotImplementedError(f"the gradient of np.{name} of an empty operand")
    mode = ctx.params.get("mode", "valid" if correlate else "full")
    function = np.correlate if correlate else np.convolve
    start = _window(function, mode, (na, nv))
    length = ctx.node.meta.shape[0]  # type: ignore[union-attr]
    cotangent = ctx.cotangent
    if (start, length) != (0, na + nv - 1):
        cotangent = ctx.call("pad", cotangent, pad_width=((start, na + nv - 1 - start - length),))
    a, v = ctx.inputs[0], ctx.inputs[1]
    # correlate(a, v) is convolve(a, w) with w = conj(v reversed).
    complex_v = ctx.input_meta(1).dtype.kind == "c"
    kernel = v if not correlate else _reversed(ctx, v)
    if correlate and complex_v:
        kernel = ctx.call("conjugate", kernel)
    grads: list[Node | None] = [None, None]
    if ctx.wants(0):
        grad = ctx.call("convolve", cotangent, _reversed(ctx, kernel), mode="valid")
        grads[0] = _as_input(ctx, grad, 0)
    if ctx.wants(1):
        grad = ctx.call("convolve", cotangent, _reversed(ctx, a), mode="valid")
        if correlate:
            grad = _reversed(ctx, ctx.call("conjugate", grad) if complex_v else grad)
        grads[1] = _as_input(ctx, grad, 1)
    return grads


def _call_row(ctx: VjpContext, name: str, *inputs: Any, **params: Any) -> Node:
    return ctx.graph.call(extern_row(name).op, *inputs, **params)


@register_vjp(get_op("interp"))
def _interp_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # y = (1 - t) fp[j] + t fp[j + 1] with j the interval of x and t its place in it (t
    # clipped to [0, 1]: outside xp, fp's end value, or `left` / `right` with weight 0).
    if ctx.params.get("period") is not None:
        raise NotImplementedError("the gradient of np.interp with period=")
    if ctx.wants(1):
        raise NotImplementedError("the gradient of np.interp with respect to xp")
    x, xp, fp, left, right = ctx.inputs[:5]
    (points,) = _static_shape(ctx, 2, "np.interp")
    if not isinstance(x, Node):
        return [None, None, None, None, None]
    shape = x.meta.shape  # type: ignore[union-attr]
    count = int(np.prod(shape)) if all(isinstance(d, int) for d in shape) else None
    if count is None:
        raise NotImplementedError("the gradient of np.interp of a symbolic shape")
    flat_x = ctx.call("reshape", x, shape=(count,))
    cotangent = ctx.call("reshape", ctx.cotangent, shape=(count,))
    first = ctx.call("getitem", xp, index=(0,))
    last = ctx.call("getitem", xp, index=(-1,))
    if left is not None:
        cotangent = ctx.call("multiply", cotangent, ctx.call("greater_equal", flat_x, first))
    if right is not None:
        cotangent = ctx.call("multiply", cotangent, ctx.call("less_equal", flat_x, last))
    grads: list[Node | None] = [None] * len(ctx.inputs)
    if points == 1:
        if ctx.wants(2):
            total = ctx.call("sum", cotangent, keepdims=True)
            grads[2] = _as_input(ctx, total, 2)
        return grads
    after = _call_row(ctx, "searchsorted", xp, flat_x, None, side="right")
    interval = ctx.call("clip", ctx.call("subtract", after, 1), 0, points - 2)

    def at(values: Any, where: Node) -> Node:
        return ctx.graph.call(get_op("index"), values, where, index=(IndexArray(0),))

    following = ctx.call("add", interval, 1)
    low, high = at(xp, interval), at(xp, following)
    width = ctx.call("subtract", high, low)
    if ctx.wants(2):
        place = ctx.call("clip", ctx.call("divide", ctx.call("subtract", flat_x, low), width), 0, 1)
        columns = ctx.call("arange", start=0, stop=points, step=1, dtype=np.dtype(np.intp))
        on_low = ctx.call("equal", ctx.call("expand_dims", interval, axis=(1,)), columns)
        on_high = ctx.call("equal", ctx.call("expand_dims", following, axis=(1,)), columns)
        flat_share = ctx.call("multiply", cotangent, place)
        rest = ctx.call("expand_dims", ctx.call("subtract", cotangent, flat_share), axis=(1,))
        share = ctx.call("expand_dims", flat_share, axis=(1,))
        weights = ctx.call(
            "add", ctx.call("multiply", on_low, rest), ctx.call("multiply", on_high, share)
        )
        grads[2] = _as_input(ctx, ctx.call("sum", weights, axis=(0,)), 2)
    if ctx.wants(0):
        slope = ctx.call("divide", ctx.call("subtract", at(fp, following), at(fp, interval)), width)
        inside = ctx.call(
            "logical_and", ctx.call("greater", flat_x, first), ctx.call("less", flat_x, last)
        )
        grad = ctx.call("multiply", ctx.call("multiply", cotangent, slope), inside)
        grads[0] = _as_input(ctx, ctx.call("reshape", grad, shape=shape), 0)
    return grads


@register_vjp(get_op("diff"))
def _diff_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # y[i] = c[i + 1] - c[i] along `axis`, n times, where c is `a` joined with its prepend=
    # and append= ends: each step's transpose pads the cotangent by one on either side and
    # subtracts, c_bar[i] = g[i - 1] - g[i] (0 past the ends); c_bar is then cut back into
    # a's part and the ends' (a 0-d end was broadcast: its part is summed).
    meta = ctx.input_meta(0)
    axis = ctx.params.get("axis", -1) % meta.ndim
    grad = ctx.cotangent
    for _ in range(int(ctx.params.get("n", 1))):
        before = tuple((1, 0) if d == axis else (0, 0) for d in range(meta.ndim))
        after = tuple((0, 1) if d == axis else (0, 0) for d in range(meta.ndim))
        padded = ctx.call("pad", grad, pad_width=before)
        grad = ctx.call("subtract", padded, ctx.call("pad", grad, pad_width=after))
    lengths = [_end_length(ctx, position, axis) for position in (1, 2)]
    if lengths == [0, 0]:
        return [grad, None, None][: len(ctx.inputs)]
    start = lengths[0]
    parts = [(start, start + meta.shape[axis]), (0, start)]
    parts.append((start + meta.shape[axis], start + meta.shape[axis] + lengths[1]))
    grads: list[Node | None] = []
    for position, (low, high) in enumerate(parts):
        if position and not (lengths[position - 1] and ctx.wants(position)):
            grads.append(None)
            continue
        index = (slice(None),) * axis + (slice(low, high),)
        part = ctx.call("getitem", grad, index=index)
        if position and ctx.input_meta(position).ndim == 0:
            part = ctx.call("sum", part)
        grads.append(part)
    return grads


def _end_length(ctx: VjpContext, position: int, axis: int) -> int:
    # How many items the diff's prepend= (1) or append= (2) end adds; 0 when absent.
    if position >= len(ctx.inputs):
        return 0
    end = ctx.inputs[position]
    if isinstance(end, Node):
        meta = ctx.input_meta(position)
        return 1 if meta.ndim == 0 else int(meta.shape[axis])
    if end is np._NoValue:
        return 0
    shape = np.shape(end)
    return 1 if not shape else int(shape[axis])


def _powers(ctx: VjpContext, x: Node, top: int) -> Node:
    # x[..., None] ** (top, top - 1, ..., 0): the Vandermonde columns of polyval's terms.
    dtype = x.meta.dtype  # type: ignore[union-attr]
    exponents = ctx.call("array", value=tuple(float(k) for k in range(top, -1, -1)), dtype=dtype)
    return ctx.call("power", ctx.call("expand_dims", x, axis=(-1,)), exponents)


@register_vjp(get_op("polyval"))
def _polyval_vjp(ctx: VjpContext) -> Sequence[Node | None]:
    # y = sum_k p[k] x ** (N - 1 - k): p_bar[k] = sum(g x ** (N - 1 - k)) over x's elements,
    # x_bar = g polyval(p', x) with p' the derivative's coefficients.
    p, x = ctx.inputs
    (count,) = _static_shape(ctx, 0, "np.polyval") if isinstance(p, Node) else (len(p),)
    grads: list[Node | None] = [None, None]
    if not isinstance(x, Node):
        x = ctx.call("array", value=x, dtype=None)
    x = ctx.call("astype", x, dtype=ctx.meta.dtype) if x.meta.dtype != ctx.meta.dtype else x  # type: ignore[union-attr]
    ndim = x.meta.ndim  # type: ignore[union-attr]
    if ctx.wants(0) and isinstance(p, Node):
        terms = ctx.call(
            "multiply",
            ctx.call("expand_dims", ctx.cotangent, axis=(-1,)),
            _powers(ctx, x, count - 1),
        )
        grads[0] = ctx.call("sum", terms, axis=tuple(range(ndim))) if ndim else terms
    if ctx.wants(1):
        if count < 2:
            grads[1] = ctx.call("multiply", ctx.cotangent, 0.0)
        else:
            p_node = p if isinstance(p, Node) else ctx.call("array", value=tuple(p), dtype=None)
            head = ctx.call("getitem", p_node, index=(slice(0, count - 1),))
            scale = ctx.call("array", value=tuple(float(k) for k in range(count - 1, 0, -1)))
            slope = ctx.graph.call(get_op("polyval"), ctx.call("multiply", head, scale), x)
            grads[1] = ctx.call("multiply", ctx.cotangent, slope)
    return grads
