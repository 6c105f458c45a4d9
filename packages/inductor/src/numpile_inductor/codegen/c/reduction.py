"""C loop nests of reduction kernels: row reductions, column reductions, lanes.

A reduction over the innermost (contiguous) axis keeps 8 lanes: float sums
are NumPy's blocked pairwise summation (lanes over blocks of 128, block sums
merged as a binary counter), max/min compare lane by lane with a separate
lane of the NaNs seen. A row of sums shorter than the lanes (a sum over a short
axis: the coordinates of points) is its block's tail alone, added in order
without the lanes and the block stack (the same adds, so the same bits). Lanes
live in GCC vector types, which compile to SIMD where arrays of lanes often
stay scalar. A reduction over an outer axis of a
row-major input (`sum(axis=0)`) accumulates whole rows into the output, one
block of columns per thread, in NumPy's row order (bit-identical).

    >>> reduction_nest(KernelContext(fused, buffers, strides, ["n0", "n1"]), buf)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np

from ...index import loop_var, replace_symbols
from ...loop_ir import Expr, ReductionStore, map_indices
from ..common import CodeBuffer, KernelContext
from ..memory_order import reduction_loops
from .loop import LoopBody, loops, parallel, sequential_chunks
from .ops import c_expr, c_literal, c_type

if TYPE_CHECKING:
    pass
else:
    pass  # imported on first use (see light_lowering)

_BLOCK = 128
_LANES = 8

_INIT = {"sum": "0", "prod": "1", "any": "0", "all": "1"}


def _init(store: ReductionStore) -> str:
    ct = c_type(store.dtype)
    if store.reduction_type in _INIT:
        return f"(({ct}){_INIT[store.reduction_type]})"
    high = store.reduction_type == "min"
    if store.dtype.kind == "f":
        return f"(({ct}){'' if high else '-'}INFINITY)"
    if store.dtype.kind == "b":
        return "1" if high else "0"
    info = np.iinfo(store.dtype)
    return c_literal(info.max if high else info.min, store.dtype)


def _combine(store: ReductionStore, acc: str, value: str) -> str:
    ct = c_type(store.dtype)
    kind = store.reduction_type
    if kind == "sum":
        return (
            f"{acc} = {acc} + {value};" if store.dtype.kind != "b" else f"{acc} = {acc} || {value};"
        )
    if kind == "prod":
        if store.dtype.kind == "b":
            return f"{acc} = {acc} && {value};"
        return f"{acc} = ({ct})({acc} * {value});"
    if kind == "any":
        return f"{acc} = {acc} || {value};"
    if kind == "all":
        return f"{acc} = {acc} && {value};"
    fn = "maximum" if kind == "max" else "minimum"
    return f"{acc} = {c_expr(fn, [acc, value], [store.dtype] * 2, store.dtype)};"


def _is_pairwise(store: ReductionStore) -> bool:
    return store.reduction_type == "sum" and store.dtype.kind in "fc"


def _is_lanes(store: ReductionStore) -> bool:
    # max/min reduce in _LANES independent lanes (vectorizable); floats keep NumPy's NaN
    # propagation through a separate lane of the NaNs seen.
    return store.reduction_type in ("max", "min") and store.dtype.kind in "fiu"


def _finalize(store: ReductionStore, acc: str) -> str:
    if store.divisor is None:
        return acc
    ct = c_type(store.dtype)
    divisor = repr(float(store.divisor))
    if store.dtype.kind == "f":
        return f"(({ct})((double){acc} / {divisor}))"
    return f"(({ct})({acc} / {divisor}))"


def reduction_nest(ctx: KernelContext, buf: CodeBuffer) -> None:
    """Loops over the kept dims (the first `ctx.skip` already open), reduced dims inside.

    >>> reduction_nest(KernelContext(fused, buffers, strides, ["n0", "n1"]), buf)
    ... # doctest: +SKIP
    """
    fused, names = ctx.fused, ctx.sizes
    rstores = [store for store in fused.stores if isinstance(store, ReductionStore)]
    assert len(rstores) == len(fused.stores)
    ndim, rdim = len(fused.ranges), len(fused.reduction_ranges)
    top = bool(ndim) and not ctx.skip
    # Kept loops in memory order, the outermost parallel and chunked (a row group's part
    # keeps its rows' order); reduced loops in NumPy's order of the additions.
    kept, reduced = reduction_loops(fused)
    if ctx.skip:
        kept = tuple(range(ctx.skip, ndim))
    chunk = names[kept[0]] if top else None
    threshold = ctx.parallel_threshold
    region = parallel(
        buf,
        ndim,
        threshold,
        enabled=top,
        chunk=chunk,
        chunk_dim=kept[0] if top else 0,
        work=ctx.static_work,
    )
    with region, loops(buf, "x", names[:ndim], chunked=top, order=kept):
        accs = [f"acc{i}" for i in range(len(rstores))]
        for acc, store in zip(accs, rstores, strict=True):
            buf.writeline(f"{c_type(store.dtype)} {acc} = {_init(store)};")
        pairwise = rdim > 0 and any(_is_pairwise(s) or _is_lanes(s) for s in rstores)
        # A reduction over every element has no kept loop to chunk: its outermost reduced
        # loop runs in chunks instead (Ctrl-C, see `sequential_chunks`).
        chunked = ndim == 0 and rdim > 0
        rnames = names[ndim:]
        if pairwise:
            _pairwise_rows(ctx, buf, rstores, accs, rnames, reduced, chunked=chunked)
        else:
            first = reduced[0] if rdim else 0
            chunks = (
                sequential_chunks(buf, loop_var(first, "r"), rnames[first]) if chunked else None
            )
            with (
                chunks or contextlib.nullcontext(),
                loops(buf, "r", rnames, chunked=chunked, order=reduced),
            ):
                body = LoopBody(ctx, buf)
                for acc, store in zip(accs, rstores, strict=True):
                    buf.writeline(_combine(store, acc, body.emit(store.value)))
        for acc, store in zip(accs, rstores, strict=True):
            addr = LoopBody(ctx, buf).address(store.buffer, store.index)
            buf.writeline(f"{store.buffer}[{addr}] = {_finalize(store, acc)};")


# GCC vector types of _LANES elements (and their comparison masks): lane arithmetic on
# them compiles to SIMD reliably, where arrays of lanes often stay scalar.
# Lanes are held as _LANES // width vectors of 32 bytes (wider GCC vectors spill on AVX2).
_VECTOR_TYPES: dict[str, tuple[str, str]] = {
    "float32": ("np_f32x8", "np_i32x8"),
    "float64": ("np_f64x4", "np_i64x4"),
    "int32": ("np_i32x8", "np_i32x8"),
    "int64": ("np_i64x4", "np_i64x4"),
}
VECTOR_TYPEDEFS = """\
#ifndef NUMPILE_VECTOR_TYPES
#define NUMPILE_VECTOR_TYPES
typedef float np_f32x8 __attribute__((vector_size(32)));
typedef double np_f64x4 __attribute__((vector_size(32)));
typedef int32_t np_i32x8 __attribute__((vector_size(32)));
typedef int64_t np_i64x4 __attribute__((vector_size(32)));
#endif"""


def _vector(store: ReductionStore) -> tuple[str, str] | None:
    if not (_is_pairwise(store) or _is_lanes(store)):
        return None
    return _VECTOR_TYPES.get(store.dtype.name)


def _width(store: ReductionStore) -> int:
    return 32 // store.dtype.itemsize


def _lane(store: ReductionStore, name: str, index: str | int) -> str:
    # Lane `index` of lane set `name` (vectors when the dtype has a vector type).
    if not _vector(store):
        return f"{name}[{index}]"
    width = _width(store)
    if isinstance(index, int):
        return f"{name}[{index // width}][{index % width}]"
    return f"{name}[{index} / {width}][{index} % {width}]"


def _lanes_decl(store: ReductionStore, name: str, init: str) -> str:
    vector = _vector(store)
    if not vector:
        return f"{c_type(store.dtype)} {name}[{_LANES}] = {{{', '.join([init] * _LANES)}}};"
    width = _width(store)
    one = "{" + ", ".join([init] * width) + "}"
    return f"{vector[0]} {name}[{_LANES // width}] = {{{', '.join([one] * (_LANES // width))}}};"


def _pairwise_rows(
    ctx: KernelContext,
    buf: CodeBuffer,
    stores: list[ReductionStore],
    accs: list[str],
    rnames: list[str],
    order: tuple[int, ...],
    *,
    chunked: bool = False,
) -> None:
    # Outer reduction loops run in `order`; the innermost one is summed blockwise: 8 lanes
    # over blocks of 128, block sums merged as a binary counter (a pairwise tree), as
    # NumPy's pairwise summation does. max/min stores keep 8 lanes for the whole row, and
    # floats a lane of the NaNs seen (NumPy propagates NaN). `chunked` runs the outermost
    # reduced loop (the blocks' loop of a 1-d reduction) in `sequential_chunks`.
    pw = [i for i, store in enumerate(stores) if _is_pairwise(store)]
    ln = [i for i, store in enumerate(stores) if _is_lanes(store)]
    for i in ln:
        buf.writeline(_lanes_decl(stores[i], f"m{i}", _init(stores[i])))
        if stores[i].dtype.kind == "f":
            buf.writeline(_lanes_decl(stores[i], f"nan{i}", "0"))
    rdim = len(rnames)
    last = loop_var(order[-1], "r")
    size = rnames[order[-1]]
    outer = chunked and rdim > 1
    chunks = sequential_chunks(buf, loop_var(order[0], "r"), rnames[order[0]]) if outer else None
    with (
        chunks or contextlib.nullcontext(),
        loops(buf, "r", rnames, chunked=outer, order=order[:-1]),
    ):
        for i in pw:
            buf.writeline(f"{c_type(stores[i].dtype)} stk{i}[64];")
        if pw:
            buf.writelines(["int sp = 0;", "int64_t blocks = 0;"])
        whole = chunked and rdim == 1
        short = not whole and len(pw) == len(stores)
        if short:
            buf.writeline(f"if ({size} < {_LANES}) {{")
            with buf.indent():
                _short_row(ctx, buf, stores, accs, last, size)
            buf.writeline("} else {")
        blocks = sequential_chunks(buf, "rb", size, align=_BLOCK) if whole else None
        with blocks or contextlib.nullcontext(), buf.indent(1 if short else 0):
            low, high = ("rb_lo", "rb_hi") if blocks else ("0", size)
            buf.writeline(f"for (int64_t rb = {low}; rb < {high}; rb += {_BLOCK}) {{")
            with buf.indent():
                _pairwise_block(ctx, buf, stores, accs, pw, last, size)
            buf.writeline("}")
        if short:
            buf.writeline("}")
        for i in pw:
            ct = c_type(stores[i].dtype)
            buf.writeline("if (sp > 0) {")
            with buf.indent():
                buf.writeline(f"{ct} row{i} = stk{i}[sp - 1];")
                buf.writeline(
                    f"for (int q = sp - 2; q >= 0; q--) {{ row{i} = stk{i}[q] + row{i}; }}"
                )
                buf.writeline(f"{accs[i]} = {accs[i]} + row{i};")
            buf.writeline("}")
    for i in ln:
        store, acc = stores[i], accs[i]
        lane = _lane(store, f"m{i}", "j")
        buf.writeline(f"for (int j = 0; j < {_LANES}; j++) {{")
        if store.dtype.kind == "f":
            # The lanes hold no NaN (_vector_update) and a NaN acc (from the tail) stays:
            # the compare never sees a NaN, so raises no flag.
            op = ">" if store.reduction_type == "max" else "<"
            keep = f"{acc} != {acc} || {acc} {op} {lane}"
            buf.writeline(f"    {acc} = {keep} ? {acc} : {lane};")
            buf.writeline("}")
            nan = _lane(store, f"nan{i}", "j")
            buf.writeline(f"for (int j = 0; j < {_LANES}; j++) {{")
            buf.writeline(f"    if ({nan} != {nan}) {{ {acc} = {nan}; }}")
        else:
            buf.writeline(f"    {_combine(store, acc, lane)}")
        buf.writeline("}")


def _short_row(
    ctx: KernelContext,
    buf: CodeBuffer,
    stores: list[ReductionStore],
    accs: list[str],
    last: Any,
    size: str,
) -> None:
    # A row shorter than one group of lanes, as the blocked code sums it: its one block's
    # lanes hold zeros (their tree is +0), the elements go to the block sum in order, and
    # the block sum to the accumulator; without the lanes, the tree and the block stack,
    # which cost a sum over a short axis (`(d * d).sum(axis=2)` of 2-d points) several
    # times its adds. The stack stays empty, so the merge after the blocks adds nothing.
    for i, store in enumerate(stores):
        buf.writeline(f"{c_type(store.dtype)} bs{i} = 0;")
    buf.writeline(f"for (int64_t rk = 0; rk < {size}; rk++) {{")
    with buf.indent():
        buf.writeline(f"const int64_t {last} = rk;")
        _accumulate(ctx, buf, stores, accs, lambda i: f"bs{i}", None)
    buf.writeline("}")
    for i, acc in enumerate(accs):
        buf.writeline(f"{acc} = {acc} + bs{i};")


def _pairwise_block(
    ctx: KernelContext,
    buf: CodeBuffer,
    stores: list[ReductionStore],
    accs: list[str],
    pw: list[int],
    last: Any,
    size: str,
) -> None:
    # One block of _BLOCK elements of the innermost reduced loop: _LANES at a time, then
    # the tail one by one, then the block sums merged into the stack of partial sums.
    buf.writeline(f"const int64_t re = rb + {_BLOCK} < {size} ? rb + {_BLOCK} : {size};")
    for i in pw:
        buf.writeline(_lanes_decl(stores[i], f"p{i}", "0"))
    buf.writeline("int64_t rk = rb;")
    buf.writeline(f"for (; rk + {_LANES} <= re; rk += {_LANES}) {{")
    with buf.indent():
        for i, store in enumerate(stores):
            vector = _vector(store)
            if vector:
                buf.writeline(f"{vector[0]} tv{i}[{_LANES // _width(store)}];")
        buf.writeline(f"for (int j = 0; j < {_LANES}; j++) {{")
        with buf.indent():
            buf.writeline(f"const int64_t {last} = rk + j;")
            _accumulate(ctx, buf, stores, accs, lambda i: f"p{i}[j]", "j")
        buf.writeline("}")
        for i, store in enumerate(stores):
            vector = _vector(store)
            if vector:
                buf.writelines(_vector_update(store, i, vector))
    buf.writeline("}")
    for i in pw:
        ct = c_type(stores[i].dtype)
        p = [_lane(stores[i], f"p{i}", k) for k in range(_LANES)]
        tree = f"(({p[0]} + {p[1]}) + ({p[2]} + {p[3]})) + (({p[4]} + {p[5]}) + ({p[6]} + {p[7]}))"
        buf.writeline(f"{ct} bs{i} = {tree};")
    buf.writeline("for (; rk < re; rk++) {")
    with buf.indent():
        buf.writeline(f"const int64_t {last} = rk;")
        _accumulate(ctx, buf, stores, accs, lambda i: f"bs{i}", None)
    buf.writeline("}")
    if pw:
        buf.writelines(["int64_t carry = blocks;", "int depth = sp;", "while (carry & 1) {"])
        with buf.indent():
            buf.writeline("depth--;")
            for i in pw:
                buf.writeline(f"bs{i} = stk{i}[depth] + bs{i};")
            buf.writeline("carry >>= 1;")
        buf.writeline("}")
        for i in pw:
            buf.writeline(f"stk{i}[depth] = bs{i};")
        buf.writelines(["sp = depth + 1;", "blocks++;"])


def _vector_update(store: ReductionStore, i: int, vector: tuple[str, str]) -> list[str]:
    # Fold the lane vector tv{i} into the store's lanes: a vector add for sums; for
    # max/min a compare and a blend (and a blend that keeps NaNs for floats).
    lines: list[str] = []
    vt, mt = vector
    # Ties take the new element, as NumPy's maximum(acc, x) does (signed zeros).
    op = "<" if store.reduction_type == "max" else ">"
    for v in range(_LANES // _width(store)):
        t, m, nan = f"tv{i}[{v}]", f"m{i}[{v}]", f"nan{i}[{v}]"
        if _is_pairwise(store):
            lines.append(f"p{i}[{v}] += {t};")
        elif store.dtype.kind == "f":
            # NaNs go to their own lanes and, as the init value, to the compare, which so
            # never sees a NaN: no invalid flag, as NumPy's max raises none.
            lines.append(f"{{ const {mt} n = {t} != {t};")
            fill = f"(({mt})(({vt}){{0}} + {_init(store)}) & n)"
            lines.append(f"  const {vt} c = ({vt})((({mt}){t} & ~n) | {fill});")
            lines.append(f"  const {mt} k = c {op} {m};")
            lines.append(f"  {m} = ({vt})((({mt}){m} & k) | (({mt})c & ~k));")
            lines.append(f"  {nan} = ({vt})((({mt}){t} & n) | (({mt}){nan} & ~n)); }}")
        else:
            lines.append(f"{{ const {mt} k = {t} {op} {m};")
            lines.append(f"  {m} = ({m} & k) | ({t} & ~k); }}")
    return lines


def _lane_update(store: ReductionStore, i: int, value: str, lane: str) -> list[str]:
    # One lane step of a max/min without a vector type: a compare and a select per lane.
    op = ">" if store.reduction_type == "max" else "<"
    target = f"m{i}[{lane}]"
    if store.dtype.kind != "f":
        return [f"{target} = {target} {op} {value} ? {target} : {value};"]
    # The compare never sees a NaN (see _vector_update): no invalid flag.
    clean = f"({value} != {value} ? {_init(store)} : {value})"
    return [
        f"{target} = {target} {op} {clean} ? {target} : {clean};",
        f"nan{i}[{lane}] = {value} != {value} ? {value} : nan{i}[{lane}];",
    ]


def _accumulate(
    ctx: KernelContext,
    buf: CodeBuffer,
    stores: list[ReductionStore],
    accs: list[str],
    target: Any,
    lane: str | None,
) -> None:
    body = LoopBody(ctx, buf)
    for i, (acc, store) in enumerate(zip(accs, stores, strict=True)):
        value = body.emit(store.value)
        if lane is not None and _vector(store):
            buf.writeline(f"{_lane(store, f'tv{i}', lane)} = {value};")
        elif _is_pairwise(store):
            buf.writeline(f"{target(i)} += {value};")
        elif _is_lanes(store) and lane is not None:
            buf.writelines(_lane_update(store, i, value, lane))
        else:
            buf.writeline(_combine(store, acc, value))


_COLUMN_BYTES = 32768
_ROW_UNROLL = 4
_THREADS = [
    "#ifdef _OPENMP",
    "    const int64_t nthreads = omp_get_max_threads();",
    "#else",
    "    const int64_t nthreads = 1;",
    "#endif",
]


def outer_reduction_nest(ctx: KernelContext, buf: CodeBuffer) -> None:
    """Column blocks per thread; reduced dims outside the last kept dim (row order).

    `ctx.ivdep` marks the column loops independent (no buffer aliases another; see
    `loops`).

    >>> outer_reduction_nest(KernelContext(fused, buffers, strides, ["n0", "n1"]), buf)
    ... # doctest: +SKIP
    """
    # Accumulate straight into the output, a block of columns at a time, walking the
    # reduced axes outside the last output axis. Sums run in the reduced axes' order,
    # as NumPy's own outer-axis reductions do.
    fused, names = ctx.fused, ctx.sizes
    rstores = [store for store in fused.stores if isinstance(store, ReductionStore)]
    ndim, rdim = len(fused.ranges), len(fused.reduction_ranges)
    assert not ctx.skip
    # The columns are the innermost kept dim in memory order; the other kept dims and the
    # reduced ones loop in that order too (NumPy's order of the additions).
    kept, reduced = reduction_loops(fused)
    last = loop_var(kept[-1])
    size = names[kept[-1]]
    rnames = names[ndim:]
    # One block of columns per thread (at most _COLUMN_BYTES of accumulators), so each
    # thread streams long contiguous runs of every row rather than page-sized pieces.
    itemsize = max(store.dtype.itemsize for store in rstores)
    cap = max(16, _COLUMN_BYTES // itemsize)
    buf.splice(_THREADS)
    buf.writelines(
        [
            f"int64_t cb = ({size} + nthreads - 1) / nthreads;",
            "cb = (cb + 15) / 16 * 16;",
            f"if (cb > {cap}) {{ cb = {cap}; }}",
            f"const int64_t nblocks = ({size} + cb - 1) / cb;",
        ]
    )
    # Chunked along the first kept dim when it is not the column dim (see `parallel`); a 1-d
    # result has only the column dim, so its outermost reduced loop runs in chunks instead,
    # one region per chunk (`sequential_chunks`): the first chunk sets the outputs up, the
    # last one finalizes them, and each adds its rows in order (the same bits).
    chunk = names[kept[0]] if ndim > 1 else None
    by_rows = chunk is None
    r0, r0_size = loop_var(reduced[0], "r"), rnames[reduced[0]]
    rows = sequential_chunks(buf, r0, r0_size) if by_rows else contextlib.nullcontext()
    region = parallel(
        buf, ndim, ctx.parallel_threshold, chunk=chunk, chunk_dim=kept[0], work=ctx.static_work
    )
    with rows, region, loops(buf, "x", names, chunked=chunk is not None, order=kept[:-1]):
        buf.writeline("for (int64_t xbi = 0; xbi < nblocks; xbi++) {")
        with buf.indent():
            buf.writeline("const int64_t xb = xbi * cb;")
            buf.writeline(f"const int64_t xe = xb + cb < {size} ? xb + cb : {size};")
            addr = LoopBody(ctx, buf)
            targets = [f"{s.buffer}[{addr.address(s.buffer, s.index)}]" for s in rstores]
            column = f"for (int64_t {last} = xb; {last} < xe; {last}++) {{"
            buf.writeline(f"if ({r0}_lo == 0) {{" if by_rows else "{")
            buf.writeline(column)
            for target, store in zip(targets, rstores, strict=True):
                buf.writeline(f"    {target} = {_init(store)};")
            buf.writeline("}")
            buf.writeline("}")
            # The last reduced loop takes _ROW_UNROLL rows per pass: each output element is
            # loaded and stored once per pass (same order of additions) and more rows
            # stream at once.
            with loops(buf, "r", rnames, chunked=by_rows, order=reduced[:-1]):
                r_last = loop_var(reduced[-1], "r")
                first, r_size = ("0", rnames[reduced[-1]])
                if by_rows and rdim == 1:
                    first, r_size = f"{r0}_lo", f"{r0}_hi"
                buf.writeline(f"int64_t {r_last} = {first};")
                step = f"{r_last} += {_ROW_UNROLL}"
                buf.writeline(f"for (; {r_last} + {_ROW_UNROLL} <= {r_size}; {step}) {{")
                with buf.indent():
                    _row_pass(ctx, buf, rstores, targets, column, (r_last, _ROW_UNROLL))
                buf.writeline("}")
                buf.writeline(f"for (; {r_last} < {r_size}; {r_last}++) {{")
                with buf.indent():
                    _row_pass(ctx, buf, rstores, targets, column, (r_last, 1))
                buf.writeline("}")
            if any(store.divisor is not None for store in rstores):
                buf.writeline(f"if ({r0}_hi == {r0_size}) {{" if by_rows else "{")
                buf.writeline(column)
                for target, store in zip(targets, rstores, strict=True):
                    if store.divisor is not None:
                        buf.writeline(f"    {target} = {_finalize(store, target)};")
                buf.writeline("}")
                buf.writeline("}")
        buf.writeline("}")


def _row_pass(
    ctx: KernelContext,
    buf: CodeBuffer,
    stores: list[ReductionStore],
    targets: list[str],
    column: str,
    shift: tuple[Any, int],
) -> None:
    # acc = out[x]; acc = combine(acc, value at row r + u) for u < rows; out[x] = acc.
    symbol, rows = shift
    if ctx.ivdep:
        buf.writeline("#pragma GCC ivdep")
    buf.writeline(column)
    with buf.indent():
        body = LoopBody(ctx, buf)
        for i, (target, store) in enumerate(zip(targets, stores, strict=True)):
            acc = f"racc{i}"
            buf.writeline(f"{c_type(store.dtype)} {acc} = {target};")
            for u in range(rows):
                buf.writeline(_combine(store, acc, body.emit(_shift_rows(store.value, symbol, u))))
            buf.writeline(f"{target} = {acc};")
    buf.writeline("}")


def _shift_rows(expr: Expr, symbol: Any, offset: int) -> Expr:
    # `expr` with loop variable `symbol` advanced by `offset`.
    if offset == 0:
        return expr
    return map_indices(expr, lambda i: replace_symbols(i, {symbol: symbol + offset}))
