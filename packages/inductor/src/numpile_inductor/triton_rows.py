"""Persistent Triton row kernels: a scheduler row group (softmax, layernorm) as one kernel.

`scheduler.fuse_rows` groups kernels that work row by row: e.g. softmax's
max, exp, sum and divide. When every part of the group spans the same inner
extent (the columns of a row) and a row fits in one tile (`max_rblock`),
the group becomes a single `@triton.jit` function over `[XBLOCK, RBLOCK]`
tiles: each pointwise part's inner loop variables are renamed to the
reduction variables (`x1 -> r0`), so every part reads and writes the same
tile; values passed between parts stay in registers (the scratch rows of the
C backend cost no memory here) and each input row is loaded once. Groups
that do not qualify run part by part (`triton_backend`).

    >>> row_kernel_source(group, buffers, TritonOptions()) is None  # doctest: +SKIP
    False
"""

from __future__ import annotations

import math
from typing import Any

import sympy

from .index import loop_var
from .loop_ir import Apply, Buffer, Expr, Load, ReductionStore, Store, loads_of
from .scheduler import FusedKernel
from .triton_kernel import (
    REDUCTION_CONSTEXPRS,
    TritonKernel,
    TritonOptions,
    _acc_dtype,
    _Body,
    _next_pow2,
    _param,
    _reduce,
    _reduce_kind,
    _signature,
    _unflatten,
    buffer_params,
    jit_decorator,
    scalar_params,
    widen_lines,
    xoffset_lines,
)
from .triton_ops import reduction_identity, tl_type, triton_literal


def _rename(expr: Expr, mapping: dict[Any, Any]) -> Expr:
    if isinstance(expr, Load):
        index = tuple(sympy.sympify(i).xreplace(mapping) for i in expr.index)
        return Load(expr.buffer, index, expr.dtype)
    if isinstance(expr, Apply):
        return Apply(expr.fn, tuple(_rename(arg, mapping) for arg in expr.args), expr.dtype)
    return expr


def _inner_extent(part: FusedKernel, rows: int) -> tuple[int, ...] | None:
    # The sizes a part spans inside a row, size-1 dims dropped (keepdims results are
    # indexed by 0 there); None when a reduction part keeps a dim of its own.
    if part.is_reduction:
        if any(d != 1 for d in part.ranges[rows:]):
            return None
        inner = part.reduction_ranges
    else:
        inner = part.ranges[rows:]
    return tuple(d for d in inner if d != 1)


def _row_mapping(part: FusedKernel, rows: int, extent: tuple[Any, ...]) -> dict[Any, Any]:
    # Loop variables of `part` inside a row -> the kernel's reduction variables over `extent`.
    if part.is_reduction:
        sizes = part.reduction_ranges
        mapping = {loop_var(d, "r"): loop_var(d, "r") for d in range(len(sizes))}
        source = [(loop_var(d, "r"), size) for d, size in enumerate(sizes)]
    else:
        sizes = part.ranges[rows:]
        source = [(loop_var(rows + d), size) for d, size in enumerate(sizes)]
        mapping = {}
    target = iter(range(len(extent)))
    for var, size in source:
        mapping[var] = sympy.Integer(0) if size == 1 else loop_var(next(target), "r")
    for d in range(rows, len(part.ranges)):
        mapping.setdefault(loop_var(d), sympy.Integer(0))
    return mapping


def _aligned_stores(group: FusedKernel) -> list[tuple[bool, list[Store | ReductionStore]]] | None:
    # Each part's stores with pointwise inner variables renamed to the reduction variables,
    # or None when a part reads a buffer of the group at another element than was written.
    rows = group.row_dims
    parts: list[tuple[bool, list[Store | ReductionStore]]] = []
    written: dict[str, tuple[Any, ...]] = {}
    for part in group.parts:
        extent = _inner_extent(part, rows) or ()
        mapping = _row_mapping(part, rows, extent)
        stores: list[Store | ReductionStore] = []
        for store in part.stores:
            value = _rename(store.value, mapping)
            for load in loads_of(value):
                if load.buffer in written and tuple(load.index) != written[load.buffer]:
                    return None
            index = tuple(sympy.sympify(i).xreplace(mapping) for i in store.index)
            written[store.buffer] = index
            if isinstance(store, ReductionStore):
                stores.append(
                    ReductionStore(
                        store.buffer,
                        index,
                        store.reduction_type,
                        value,
                        store.dtype,
                        store.divisor,
                    )
                )
            else:
                stores.append(Store(store.buffer, index, value))
        parts.append((part.is_reduction, stores))
    return parts


def row_kernel_source(
    group: FusedKernel, buffers: dict[str, Buffer], options: TritonOptions
) -> TritonKernel | None:
    """One persistent kernel for row group `group`, or None when it does not qualify.

    >>> row_kernel_source(group, buffers, TritonOptions()).is_reduction  # doctest: +SKIP
    True
    """
    rows = group.row_dims
    extents = {_inner_extent(part, rows) for part in group.parts}
    if len(extents) != 1:
        return None
    (extent,) = extents
    if extent is None or not all(isinstance(d, int) for d in (*group.ranges, *extent)):
        return None
    rnumel = math.prod(extent)
    if _next_pow2(rnumel) > options.max_rblock:
        return None
    aligned = _aligned_stores(group)
    if aligned is None:
        return None
    used, scalars = _signature(group, buffers)
    stride_dims, params = buffer_params(used, buffers)
    params += scalar_params(scalars, buffers)
    params += ["xnumel", "rnumel", *REDUCTION_CONSTEXPRS]
    xnumel = math.prod(group.ranges)
    rblock = _next_pow2(rnumel)
    xblock = max(1, min(_next_pow2(xnumel), options.max_tile // rblock))
    origins = group.origins
    indent = "    "
    lines = [
        jit_decorator(scalars),
        f"def {group.name}({', '.join(params)}):",
        f"{indent}# persistent rows over {list(group.ranges)} x {list(extent)}; "
        f"{len(group.parts)} parts; fuses {', '.join(origins)}",
        *xoffset_lines(indent),
        f"{indent}xindex = xoffset + tl.arange(0, XBLOCK)[:, None]",
        f"{indent}xmask = xindex < xnumel",
        *_unflatten("x", "xindex", group.ranges, indent),
        f"{indent}rindex = tl.arange(0, RBLOCK)[None, :]",
        *widen_lines("rindex", indent),
        f"{indent}rmask = rindex < rnumel",
        f"{indent}mask = xmask & rmask",
        *_unflatten("r", "rindex", extent, indent),
    ]
    body = _Body(buffers, "[XBLOCK, RBLOCK]", "mask", indent)
    count = 0
    for is_reduction, stores in aligned:
        for store in stores:
            if not is_reduction:
                assert isinstance(store, Store)
                body.store(store, store.buffer in group.internal)
                continue
            assert isinstance(store, ReductionStore)
            _emit_reduction(body, store, count, store.buffer in group.internal)
            count += 1
    source = "\n".join([*lines, *body.lines]) + "\n"
    return TritonKernel(
        group.name,
        source,
        tuple(used),
        stride_dims,
        tuple(scalars),
        xnumel,
        rnumel,
        xblock,
        rblock,
        8 if rblock >= 2048 else options.num_warps,
        True,
        origins,
    )


def _emit_reduction(body: _Body, store: ReductionStore, i: int, internal: bool) -> None:
    # Reduce the part's value tile along the row; the result stays a [XBLOCK, 1] local.
    kind = _reduce_kind(store)
    dtype = _acc_dtype(kind, store.dtype)
    ty = tl_type(dtype)
    value = body.emit(store.value)
    value = f"({value} != 0).to({ty})" if kind in ("any", "all") else f"{value}.to({ty})"
    identity = triton_literal(reduction_identity(kind, dtype), dtype, "[XBLOCK, RBLOCK]")
    indent = body.indent
    body.lines.append(f"{indent}rval{i} = tl.where(mask, {value}, {identity})")
    body.lines.append(f"{indent}rres{i} = {_reduce(kind, dtype, f'rval{i}')}[:, None]")
    result = f"rres{i}"
    if kind in ("any", "all"):
        result = f"({result} != 0)"
    elif store.divisor is not None:
        divisor = f"tl.full([XBLOCK, 1], {float(store.divisor)!r}, tl.float64)"
        result = f"({result}.to(tl.float64) / {divisor})"
    body.lines.append(f"{indent}rout{i} = {result}.to({tl_type(store.dtype)})")
    if not internal:
        addr = body.address(store.buffer, store.index, tile=True)
        body.lines.append(
            f"{indent}tl.store({_param(store.buffer)} + ({addr}), rout{i}, mask=xmask)"
        )
    body.locals[store.buffer] = f"rout{i}"
