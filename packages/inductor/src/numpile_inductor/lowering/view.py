"""Lowering of views: every view op whose result is a strided view of its input.

A view is index arithmetic, never a copy: the op runs once on a stride probe (a
C-contiguous array of bytes of the input's shape), and the probe's offset and strides
give the map from output to input indices (`_affine_remap`). A basic index (`getitem`)
of symbolic shape is index arithmetic too (`lower_symbolic_getitem`): each slice starts
where capture resolved it (`ArrayMeta.starts`, its clamps decided under its guards).
Other views of symbolic shape, and ops that copy, run as externs. A roll (`np.roll`) copies,
but it is index arithmetic too: a load at a rotated index (`lower_roll`), so a stencil
written with rolls fuses into one kernel.

    >>> unflatten_static(5, (2, 3))
    (1, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from numpile_capture import Node, OpKind, contiguous_strides
from numpile_capture import ops as capture_ops

from .. import index as index_module
from ..index import as_index, index_int, unflatten_index
from ..loop_ir import Expr
from .context import (
    CannotLower,
    Lowered,
    LoweringContext,
    is_static,
    out_shape,
    readable_source,
    register_kind_lowering,
    register_lowering,
)

if TYPE_CHECKING:
    pass
else:
    pass  # imported on first use (see light_lowering)


@register_kind_lowering(OpKind.VIEW)
def lower_view(ctx: LoweringContext, node: Node) -> Lowered:
    """Any view op without a lowering of its own, as index arithmetic found by running the
    op on a stride probe.

    >>> lower_view(ctx, transpose_node).shape  # doctest: +SKIP
    (4, 3)
    """
    assert node.op is not None
    if any(isinstance(value, Node) for value in node.inputs[1:]):
        raise CannotLower("view with array operands")
    source, loader = readable_source(ctx, node)
    shape = out_shape(node)
    in_shape = source.shape
    if not (is_static(shape) and is_static(in_shape)):
        raise CannotLower("a view of symbolic shape (the stride probe needs sizes)")
    base = np.zeros(max(1, math.prod(in_shape)), np.uint8)
    probe = np.lib.stride_tricks.as_strided(base, in_shape, contiguous_strides(in_shape))
    result = node.op.impl(probe, *node.inputs[1:], **node.kwargs)
    if not isinstance(result, np.ndarray) or result.shape != shape or result.itemsize != 1:
        raise CannotLower("the probe did not give a view of the right shape")
    if result.size and not np.shares_memory(result, base):
        raise CannotLower("the op copies")
    offset = result.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    remap = _affine_remap(offset, tuple(result.strides), shape, in_shape)

    def load(idx: tuple[Any, ...]) -> Expr:
        return loader(remap(idx))

    return Lowered(
        shape, source.dtype, load, source.ops, pure_view=source.pure_view, heavy=source.heavy
    )


@register_lowering("getitem")
def lower_getitem(ctx: LoweringContext, node: Node) -> Lowered:
    """A basic index: the stride probe where sizes are static, else symbolic index
    arithmetic (`x[1:-1]` of `float64[s0]` loads `x[i + 1]`).

    >>> lower_getitem(ctx, getitem_node).shape  # doctest: +SKIP
    (s0 - 2,)
    """
    source = ctx.values[node.inputs[0]] if isinstance(node.inputs[0], Node) else None
    if source is not None and is_static(source.shape) and is_static(out_shape(node)):
        return lower_view(ctx, node)
    return lower_symbolic_getitem(ctx, node)


def lower_symbolic_getitem(ctx: LoweringContext, node: Node) -> Lowered:
    """A basic index of symbolic shape as a map from output to input indices."""
    if len(node.inputs) != 1:
        raise CannotLower("getitem with array operands")
    source, loader = readable_source(ctx, node)
    shape = out_shape(node)
    starts = getattr(node.meta, "starts", None)
    if starts is None:
        raise CannotLower("a view whose start capture did not record")
    maps = index_map(node.kwargs["index"], source.shape, shape, starts=starts)

    def load(idx: tuple[Any, ...]) -> Expr:
        return loader(
            tuple(start if dim is None else start + step * idx[dim] for start, step, dim in maps)
        )

    return Lowered(
        shape, source.dtype, load, source.ops, pure_view=source.pure_view, heavy=source.heavy
    )


IndexMap = tuple[tuple[Any, int, "int | None"], ...]


def index_map(
    index: Any,
    in_shape: tuple[Any, ...],
    shape: tuple[Any, ...],
    *,
    starts: tuple[Any, ...] | None = None,
) -> IndexMap:
    """For a basic index of an array of `in_shape` giving a view of `shape`: per input dim,
    `(start, step, view dim)` (the input index is `start + step * i` at view index `i` of
    that dim), or `(index, 0, None)` for a dim an int picks.

    `starts`: where capture resolved the view to start, per input dim (the
    `ArrayMeta.starts` of a getitem node, or of a setitem node for the view it writes).
    Without them a slice starts where Python starts it on a static size, and a slice of a
    symbolic size raises CannotLower: which clamp Python takes depends on the size, and
    only capture's guards decided it.

        >>> import sympy
        >>> s0 = sympy.Symbol("s0", integer=True, positive=True)
        >>> index_map((slice(1, -1), 2), (s0, 4), (s0 - 2,), starts=(1, 2))
        ((1, 1, 0), (2, 0, None))
        >>> index_map((slice(1, 2, 2),), (s0,), (1,), starts=(1,))
        ((1, 2, 0),)
        >>> index_map((slice(-6, -4, 3),), (5,), (1,))
        ((0, 3, 0),)
    """
    if starts is not None and len(starts) != len(in_shape):
        raise CannotLower("a view whose starts do not match its input")
    items = capture_ops.view.normalize_index(
        index if isinstance(index, tuple) else (index,), in_shape
    )
    maps: list[tuple[Any, int, int | None]] = []
    out_dim = 0
    for item in items:
        if item is Ellipsis:
            continue
        if item is None:
            out_dim += 1
            continue
        if out_dim > len(shape) or len(maps) >= len(in_shape):
            raise CannotLower("an index the lowering does not follow")
        size = in_shape[len(maps)]
        if isinstance(item, slice):
            if out_dim >= len(shape):
                raise CannotLower("an index the lowering does not follow")
            if starts is not None:
                start, step = as_index(starts[len(maps)]), _step(item)
            elif isinstance(size, int):
                first, _, step = item.indices(size)
                start = index_int(first)
            else:
                raise CannotLower(f"the start of {item} on an axis of {size} (none recorded)")
            maps.append((start, step, out_dim))
            out_dim += 1
        else:
            value = int(item)
            maps.append((index_int(value) if value >= 0 else size + value, 0, None))
    for _ in range(len(maps), len(in_shape)):
        maps.append((index_int(0), 1, out_dim))
        out_dim += 1
    if out_dim != len(shape):
        raise CannotLower("an index the lowering does not follow")
    return tuple(maps)


def _step(item: slice) -> int:
    return 1 if item.step is None else int(item.step)


def _affine_remap(
    offset: int, strides: tuple[int, ...], shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    # Output index -> input index, given the view's element offset and strides over a
    # C-contiguous input. Each output dim is matched to one input dim when that keeps every
    # input index in bounds; otherwise the flat position is unflattened (floor div / mod).
    in_strides = contiguous_strides(in_shape)
    start = list(unflatten_static(offset, in_shape))
    terms: list[list[tuple[int, int]]] = [[] for _ in in_shape]
    direct = True
    for d, (size, stride) in enumerate(zip(shape, strides, strict=True)):
        if size == 1 or stride == 0:
            continue
        # The outermost input dim whose stride divides the output stride: a step of a slice
        # along dim j is a multiple of dim j's stride, and every inner stride divides it too.
        target = None
        for j in range(len(in_shape)):
            # (an input with an empty dim has zero strides: nothing to match there)
            if in_shape[j] > 1 and in_strides[j] != 0 and stride % in_strides[j] == 0:
                target = j
                break
        if target is None:
            direct = False
            break
        terms[target].append((d, stride // in_strides[target]))
    if direct:
        for j, dim_terms in enumerate(terms):
            low = start[j] + sum(min(0, (shape[d] - 1) * m) for d, m in dim_terms)
            high = start[j] + sum(max(0, (shape[d] - 1) * m) for d, m in dim_terms)
            if low < 0 or high >= max(in_shape[j], 1):
                direct = False
                break
    if direct:

        def remap(idx: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(
                start[j] + sum((idx[d] * m for d, m in terms[j]), index_int(0))
                for j in range(len(in_shape))
            )

        return remap

    def remap_flat(idx: tuple[Any, ...]) -> tuple[Any, ...]:
        flat = offset + sum(
            (idx[d] * s for d, s in enumerate(strides) if shape[d] != 1), index_int(0)
        )
        return unflatten_index(flat, in_shape)

    return remap_flat


def unflatten_static(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of flat C-order position `flat` in `shape` (plain ints).

    >>> unflatten_static(5, (2, 3))
    (1, 2)
    """
    result = []
    for size in reversed(shape):
        result.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(result))


@register_lowering("roll")
def lower_roll(ctx: LoweringContext, node: Node) -> Lowered:
    """`np.roll` as a load at a rotated index: `out[i] = x[(i + n - shift % n) % n]` along
    each rolled axis of length `n` (static lengths; a symbolic one runs as NumPy).

    >>> lower_roll(ctx, roll_node).shape  # doctest: +SKIP
    (4, 5)
    """
    source, loader = readable_source(ctx, node)
    shape = out_shape(node)
    rotations: dict[int, tuple[int, int]] = {}
    for axis, shift in zip(node.kwargs["axis"], node.kwargs["shift"], strict=True):
        length = shape[axis]
        if not isinstance(length, int):
            raise CannotLower("a roll along an axis of symbolic length")
        if length and shift % length:
            rotations[axis] = ((-shift) % length, length)

    def load(idx: tuple[Any, ...]) -> Expr:
        # (`ModularIndexing` is sympy's: read on use, so a light lowering lowers again)
        return loader(
            tuple(
                index_module.ModularIndexing(i + rotations[d][0], 1, rotations[d][1])
                if d in rotations
                else i
                for d, i in enumerate(idx)
            )
        )

    return Lowered(
        shape, source.dtype, load, source.ops, pure_view=source.pure_view, heavy=source.heavy
    )


@register_lowering("view_scatter")
def lower_repeated_view_scatter(ctx: LoweringContext, node: Node) -> Lowered:
    """A `view_scatter` of the value another one just scattered into the same region of its
    result is that result: `x[i] -= y` functionalizes into two (the in-place op's, then
    `setitem`'s), and each runs as a whole-array copy. Any other runs as NumPy.

    >>> lower_repeated_view_scatter(ctx, twice_node) is ctx.values[once_node]  # doctest: +SKIP
    True
    """
    base = node.inputs[0] if node.inputs else None
    if (
        isinstance(base, Node)
        and base.op is node.op
        and len(node.inputs) == len(base.inputs) == 2
        and node.inputs[1] is base.inputs[1]
        and node.kwargs == base.kwargs
        and base in ctx.values
    ):
        return ctx.values[base]
    raise CannotLower("a view_scatter runs as NumPy")
