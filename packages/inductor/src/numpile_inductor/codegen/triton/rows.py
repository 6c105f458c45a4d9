"""Triton row kernels: a scheduler row group (softmax, layernorm) as one kernel.

`scheduler.fuse_rows` groups kernels that work row by row: e.g. softmax's
max, exp, sum and divide. When every part of the group spans the same inner
extent (the columns of a row), the group becomes a single `@triton.jit`
function over `[XBLOCK, RBLOCK]` tiles: each pointwise part's inner loop
variables are renamed to the reduction variables (`x1 -> r0`), so every part
reads and writes the same elements of a row.

- Persistent, when a row fits in one tile (`max_rblock`): each input row is
  loaded once and values passed between parts stay in registers (the scratch
  rows of the C backend cost no memory here). A program takes `row_tile`
  elements: one row of 1024 or more (one row per program was the faster on a
  GPU; figures in docs/performance_notes.md).
- Looped, over longer rows: one program per row and one loop over the row per
  reduction part, which accumulates it and recomputes the pointwise parts
  before it; a last loop computes and stores the parts after the last
  reduction (softmax: max, sum of exp, store; three reads of a row the
  program has just read, mostly from L2, against four passes over the whole
  array part by part). Loads ask L2 to keep the row (`evict_last`) until the
  last loop (`evict_first`). Torch's inductor generates the same loops. With
  `online_softmax=True`, a max followed by a sum of `exp(v - max)` (softmax,
  log-softmax) shares one loop as an online softmax: per lane a running max and
  a running sum of exp, rescaled by `exp(old max - new max)` when the max grows,
  so a softmax reads its row twice. The sum then rounds differently (each term
  rescaled once more), within the tolerance fused reductions already have;
  NumPy's NaN for a row of -inf, and NaN and +inf propagation, are kept. The
  online loop wins in short tiles (2048) and loses in the long tiles looped rows
  launch with (`looped_row_blocks`): its two exps per element then cost more
  than the third read of a row from L2 (figures in docs/performance_notes.md).
- Both, over a run-time row length: the source branches on a `PERSISTENT`
  constexpr (`if PERSISTENT: <persistent body> else: <looped body>`; Triton
  compiles the branch each launch takes, one binary per specialization), and
  `kernel.fit_blocks` chooses per launch: persistent where the row fits in a
  tile, with the tiles and warps of the static persistent kernel for that
  length (`persistent_row_blocks`), looped over longer rows in the static looped
  kernel's tiles (`looped_row_blocks`) with the online loop (with the sizes as
  arguments, a loop each took 0.251 ms against 0.201 online on a 2048 x 32768
  softmax on an H200; `online_softmax=False` forces a loop each). A persistent launch
  keeps RBLOCK >= the row length whatever tunes it afterwards
  (`kernel.is_persistent`, `autotune.py`), or it would drop elements.

Sizes known only at run time are kernel arguments: a dynamic row count
(batch), and a dynamic row length (with both bodies, as above). Groups that
do not qualify run part by part (`codegen/triton/backend.py`): parts of different
extents, or rows too few to fill the device (`split_chunks`), whose
reductions are split instead; their pointwise parts whose results stay in the
group are computed where they are read (`inline_pointwise_parts`).

    >>> row_kernel_source(group, buffers, TritonOptions()) is None  # doctest: +SKIP
    False
"""

from __future__ import annotations

from typing import Any

import attrs
import sympy

from ...config import TritonOptions
from ...index import loop_var
from ...loop_ir import (
    AccumulateStore,
    Apply,
    Buffer,
    Expr,
    Load,
    ReductionStore,
    Store,
    loads_of,
)
from ...scheduler import FusedKernel
from ..common import CodeBuffer
from .kernel import (
    REDUCTION_CONSTEXPRS,
    TritonKernel,
    _acc_dtype,
    _Body,
    _combine,
    _next_pow2,
    _param,
    _product,
    _reduce,
    _reduce_kind,
    _signature,
    _size_symbols,
    _unflatten,
    buffer_params,
    jit_decorator,
    looped_row_blocks,
    looped_warps,
    memory_scalars,
    persistent_row_blocks,
    scalar_params,
    write_scalar_loads,
    write_widen,
    write_xoffset,
)
from .ops import reduction_identity, tl_type, triton_expr, triton_literal
from .split import split_chunks

# Pointwise results computed where read: buffer -> (its store index, its value).
_Defs = dict[str, tuple[tuple[Any, ...], Expr]]


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


def inline_pointwise_parts(group: FusedKernel) -> tuple[FusedKernel, ...]:
    """The parts of row group `group` to run one by one, the pointwise parts whose results
    stay inside the group computed where they are read instead (softmax's `exp(x - max)`
    inside the sum's and the divide's kernels: never stored, never read back).

    >>> [part.name for part in inline_pointwise_parts(group)]  # doctest: +SKIP
    ['kernel0', 'kernel2', 'kernel3']
    """
    defs: _Defs = {}
    kept: list[FusedKernel] = []
    for part in group.parts:
        if defs:
            kernels = tuple(
                attrs.evolve(kernel, stores=tuple(_inline_store(s, defs) for s in kernel.stores))
                for kernel in part.kernels
            )
            part = attrs.evolve(part, kernels=kernels)
        stores = part.stores
        if not part.is_reduction and all(
            store.buffer in group.internal and _plain_index(store.index) for store in stores
        ):
            for store in stores:  # in order: a store may read one before it in the part
                defs[store.buffer] = (tuple(store.index), _inline(store.value, defs))
            continue
        kept.append(part)
    return tuple(kept)


def _plain_index(index: tuple[Any, ...]) -> bool:
    # An element index made of distinct loop variables (and 0 for size-1 dims): a load's
    # index then says what each variable is at the reader.
    names = [sympy.sympify(i) for i in index]
    symbols = [n for n in names if n != 0]
    return all(n.is_Symbol for n in symbols) and len(set(symbols)) == len(symbols)


def _inline_store(
    store: Store | ReductionStore | AccumulateStore, defs: _Defs
) -> Store | ReductionStore | AccumulateStore:
    return attrs.evolve(store, value=_inline(store.value, defs))


def _inline(expr: Expr, defs: _Defs) -> Expr:
    # Loads of pointwise results replaced by their values at the loaded element.
    if isinstance(expr, Load) and expr.buffer in defs:
        index, value = defs[expr.buffer]
        mapping = {
            sympy.sympify(var): sympy.sympify(at)
            for var, at in zip(index, expr.index, strict=True)
            if sympy.sympify(var) != 0
        }
        return _rename(value, mapping)
    if isinstance(expr, Apply):
        return Apply(expr.fn, tuple(_inline(arg, defs) for arg in expr.args), expr.dtype)
    return expr


def row_kernel_source(
    group: FusedKernel, buffers: dict[str, Buffer], options: TritonOptions
) -> TritonKernel | None:
    """One kernel for row group `group` (persistent, looped over long rows, or both over
    a run-time row length), or None when it does not qualify.

    >>> row_kernel_source(group, buffers, TritonOptions()).is_reduction  # doctest: +SKIP
    True
    """
    rows = group.row_dims
    extents = {_inner_extent(part, rows) for part in group.parts}
    if len(extents) != 1:
        return None
    (extent,) = extents
    if extent is None:
        return None
    # Sizes known only at run time are sympy expressions: a run-time row count is an
    # argument; over a run-time row length the kernel holds both bodies, one chosen per
    # launch (`PERSISTENT`, set by `fit_blocks`).
    rnumel = _product(extent)
    xnumel = _product(group.ranges)
    branches = not isinstance(rnumel, int)
    persistent = not branches and _next_pow2(rnumel) <= options.max_rblock
    if not persistent and split_chunks(xnumel, rnumel, options) > 1:
        return None  # rows too few to fill the device: part by part, each reduction split
    aligned = _aligned_stores(group)
    if aligned is None:
        return None
    used, scalars = _signature(group, buffers)
    stride_dims, params = buffer_params(used, buffers)
    in_memory = memory_scalars(scalars, options)
    params += scalar_params(scalars, buffers, in_memory=in_memory)
    symbols = sorted({name for part in group.parts for name in _size_symbols(part)})
    params += [*symbols, "xnumel", "rnumel", *REDUCTION_CONSTEXPRS]
    if branches:
        params.append("PERSISTENT: tl.constexpr")
    if persistent:
        xblock, rblock, num_warps = persistent_row_blocks(xnumel, rnumel, options)
    else:  # looped, also the launch of a branching kernel until `fit_blocks` chooses
        xblock = 1
        rblock, num_warps = _looped_launch(rnumel, options)
    origins = group.origins
    kind = "persistent" if persistent else "looped"
    if branches:
        kind = "persistent-or-looped (PERSISTENT, per launch)"
    code = CodeBuffer()
    code.writelines(
        [jit_decorator(scalars, in_memory=in_memory), f"def {group.name}({', '.join(params)}):"]
    )
    with code.indent():
        code.writeline(
            f"# {kind} rows over {list(group.ranges)} x {list(extent)}; "
            f"{len(group.parts)} parts; fuses {', '.join(origins)}"
        )
        write_scalar_loads(code, scalars, in_memory=in_memory)
        _static_sizes(code, xnumel, rnumel)
        write_xoffset(code)
        code.writeline("xindex = xoffset + tl.arange(0, XBLOCK)[:, None]")
        _xmask_lines(code, xnumel)
        _unflatten(code, "x", "xindex", group.ranges)
        # The online loop over a run-time row length, a loop each over a static one: the
        # faster form of each on an H200 (docs/performance_notes.md, 2026-11-28).
        online = branches if options.online_softmax is None else options.online_softmax
        if branches:
            code.writeline("if PERSISTENT:")
            with code.indent():
                _persistent_body(code, aligned, group, buffers, extent)
            code.writeline("else:")
            with code.indent():
                _looped_body(code, aligned, group, buffers, extent, online)
        elif persistent:
            _persistent_body(code, aligned, group, buffers, extent)
        else:
            _looped_body(code, aligned, group, buffers, extent, online)
    return TritonKernel(
        name=group.name,
        source=code.getvalue() + "\n",
        buffers=tuple(used),
        stride_dims=stride_dims,
        scalars=tuple(scalars),
        in_memory=in_memory,
        xnumel=xnumel,
        rnumel=rnumel,
        xblock=xblock,
        rblock=rblock,
        num_warps=num_warps,
        is_reduction=True,
        origins=origins,
        size_symbols=tuple(symbols),
        rows=True,
        persistent=False if branches else None,
    )


def _looped_launch(rnumel: Any, options: TritonOptions) -> tuple[int, int]:
    # (RBLOCK, warps) of a looped row kernel; over a run-time row length, until `fit_blocks`
    # fits them to the length at each launch.
    if not isinstance(rnumel, int):
        return options.max_rblock, looped_warps(1, options.max_rblock, options)
    return looped_row_blocks(rnumel, options)


def _static_sizes(buf: CodeBuffer, xnumel: Any, rnumel: Any) -> None:
    # Sizes known at compile time as constants of the body (the launch passes them still):
    # Triton then knows a loop's trip count and the row's alignment, which makes looped
    # row kernels faster (docs/performance_notes.md).
    sizes = (("xnumel", xnumel), ("rnumel", rnumel))
    buf.writelines(f"{name} = {value}" for name, value in sizes if isinstance(value, int))


def _xmask_lines(buf: CodeBuffer, xnumel: Any) -> None:
    # The rows mask, all true when every program's rows exist (the grid is
    # ceil(xnumel / XBLOCK); a kernel over no rows does not launch): one row per program,
    # or a static row count XBLOCK divides.
    # Triton then masks loads and stores by the row's mask alone (torch's persistent
    # reductions do the same): computing the rows mask costs a looped softmax about a
    # fifth of its time (docs/performance_notes.md).
    whole = f"{xnumel} % XBLOCK == 0" if isinstance(xnumel, int) else "XBLOCK == 1"
    buf.writelines(
        [
            f"if {whole}:",
            "    xmask = tl.full([XBLOCK, 1], True, tl.int1)",
            "else:",
            "    xmask = xindex < xnumel",
        ]
    )


_Aligned = list[tuple[bool, list[Store | ReductionStore]]]


def _row_lines(buf: CodeBuffer, rindex: str, extent: tuple[Any, ...]) -> None:
    # The tile's reduction indices, masks, and loop variables over the row's extent.
    buf.writeline(f"rindex = {rindex}")
    write_widen(buf, "rindex")
    buf.writeline("rmask = rindex < rnumel")
    buf.writeline("mask = xmask & rmask")
    _unflatten(buf, "r", "rindex", extent)


def _persistent_body(
    buf: CodeBuffer, aligned: _Aligned, group: FusedKernel, buffers: dict[str, Buffer], extent: Any
) -> None:
    # The whole row in one tile: every part reads and writes it in registers.
    _row_lines(buf, "tl.arange(0, RBLOCK)[None, :]", extent)
    body = _Body(buffers, "[XBLOCK, RBLOCK]", "mask", buf)
    count = 0
    for is_reduction, stores in aligned:
        for store in stores:
            if not is_reduction:
                assert isinstance(store, Store)
                body.store(store, store.buffer in group.internal)
                continue
            assert isinstance(store, ReductionStore)
            value = body.emit(store.value)
            buf.writeline(f"rval{count} = {_masked(store, value)}")
            reduced = f"{_reduce(*_kind(store), f'rval{count}')}[:, None]"
            _finish(body, store, count, reduced, store.buffer in group.internal)
            count += 1


def _looped_body(
    buf: CodeBuffer,
    aligned: _Aligned,
    group: FusedKernel,
    buffers: dict[str, Buffer],
    extent: Any,
    online: bool,
) -> None:
    # Rows longer than a tile: one loop over the row per reduction part, accumulating it and
    # computing the pointwise parts before it; a last loop for the parts after the last
    # reduction. Pointwise values are recomputed in each loop that reads them (inlined),
    # stored once, in their own part's loop; reduced values are [XBLOCK, 1] locals. A max
    # followed by a sum of exp(value - max) shares one loop (`_online_pair`).
    defs: _Defs = {}  # over the row's variables
    reduced: dict[str, str] = {}  # reduction buffer -> its local
    segments = _segments(aligned)
    for pointwise, _ in segments:
        for part_store in pointwise:
            value = _inline(part_store.value, defs)
            defs[part_store.buffer] = (tuple(part_store.index), value)
    count = 0
    counter = 0  # tmp names stay unique across loops
    loop = 0
    while loop < len(segments):
        pointwise, reductions = segments[loop]
        pair = _online_pair(segments, loop, defs, group) if online else None
        if pair is not None:
            reductions = [pair[0], pair[1]]
            loop += 1  # the sum's segment: its pointwise parts are all inside the group
        last = loop == len(segments) - 1
        loop += 1
        for i, store in enumerate(reductions, count):
            kind, dtype = _kind(store)
            identity = triton_literal(reduction_identity(kind, dtype), dtype, _TILE)
            buf.writeline(f"acc{i} = {identity}")
        buf.writeline("for roffset in range(0, rnumel, RBLOCK):")
        # The loop's body, then what follows the loop (`after`): the finish of its
        # reductions, written once the body is complete.
        row_loop = CodeBuffer(level=buf.level + 1)
        _row_lines(row_loop, "roffset + tl.arange(0, RBLOCK)[None, :]", extent)
        body = _Body(buffers, _TILE, "mask", row_loop)
        body.locals.update(reduced)
        body.counter = counter
        # The row stays in L2 for the loops after this one; the last loop reads it for good.
        body.eviction = "evict_first" if last else "evict_last"
        for part_store in pointwise:
            value = defs[part_store.buffer][1]
            internal = part_store.buffer in group.internal
            body.store(Store(part_store.buffer, part_store.index, value), internal)
        after = _Body(buffers, "[XBLOCK, 1]", "xmask", CodeBuffer(level=buf.level))
        if pair is not None:
            _online_softmax(body, after, pair, count, defs, group)
        else:
            for i, store in enumerate(reductions, count):
                tile = body.emit(_inline(store.value, defs))
                combined = _combine(*_kind(store), f"acc{i}", _masked(store, tile))
                row_loop.writeline(f"acc{i} = {combined}")
            for i, store in enumerate(reductions, count):
                result = f"{_reduce(*_kind(store), f'acc{i}')}[:, None]"
                _finish(after, store, i, result, store.buffer in group.internal)
        counter = body.counter
        buf.splice(row_loop.lines + after.buf.lines)
        for store in reductions:
            reduced[store.buffer] = after.locals[store.buffer]
        count += len(reductions)


def _segments(aligned: _Aligned) -> list[tuple[list[Store], list[ReductionStore]]]:
    # The group as (pointwise stores, then the reduction stores they lead to); the last
    # segment holds the pointwise stores after the last reduction, and no reduction.
    segments: list[tuple[list[Store], list[ReductionStore]]] = []
    pending: list[Store] = []
    for is_reduction, stores in aligned:
        if is_reduction:
            segments.append((pending, [s for s in stores if isinstance(s, ReductionStore)]))
            pending = []
        else:
            pending += [s for s in stores if isinstance(s, Store)]
    if pending:
        segments.append((pending, []))
    return segments


def _online_pair(
    segments: list[tuple[list[Store], list[ReductionStore]]],
    at: int,
    defs: _Defs,
    group: FusedKernel,
) -> tuple[ReductionStore, ReductionStore] | None:
    # (max, sum) when segment `at` reduces `max(v)` and the next one `sum(exp(v - max))`
    # (softmax, log-softmax) over floats, with nothing between them to store: both then run
    # in one loop as an online softmax (a running max, and a running sum rescaled by
    # exp(old max - new max) whenever the max grows).
    if at + 1 >= len(segments):
        return None
    (_, first), (between, second) = segments[at], segments[at + 1]
    if len(first) != 1 or len(second) != 1:
        return None
    peak, total = first[0], second[0]
    dtype = peak.dtype
    if dtype.kind != "f" or total.dtype != dtype or peak.divisor or total.divisor:
        return None
    if _reduce_kind(peak) != "max" or _reduce_kind(total) != "sum":
        return None
    if any(store.buffer not in group.internal for store in between):
        return None
    value = _inline(total.value, defs)
    if not (isinstance(value, Apply) and value.fn == "exp" and value.dtype == dtype):
        return None
    (diff,) = value.args
    if not (isinstance(diff, Apply) and diff.fn == "subtract" and diff.dtype == dtype):
        return None
    shifted, subtracted = diff.args
    is_peak = isinstance(subtracted, Load) and subtracted.buffer == peak.buffer
    if not is_peak or shifted != _inline(peak.value, defs):
        return None
    return peak, total


def _online_softmax(
    body: _Body,
    after: _Body,
    pair: tuple[ReductionStore, ReductionStore],
    i: int,
    defs: _Defs,
    group: FusedKernel,
) -> None:
    # The loop body and the finish of an online (max, sum of exp) pair: per lane a running
    # max acc<i> and a running sum acc<i+1> of exp(v - running max). A lane whose max is
    # still -inf holds 0 (exp(-inf - -inf) would be NaN); a row whose max is -inf gets a NaN
    # sum, as NumPy's exp(-inf - -inf) gives; NaN and +inf propagate as in NumPy.
    peak, total = pair
    dtype = peak.dtype
    ty = tl_type(dtype)
    j = i + 1

    def exp(text: str) -> str:
        return triton_expr("exp", [text], [dtype], dtype)

    ninf = triton_literal(float("-inf"), dtype, _TILE)
    zero = triton_literal(0.0, dtype, _TILE)
    value = body.emit(_inline(peak.value, defs))
    body.buf.writelines(
        [
            f"val{i} = tl.where(mask, {value}.to({ty}), {ninf})",
            f"new{i} = _np_max_combine(acc{i}, val{i})",
            f"scale{i} = tl.where(new{i} == {ninf}, {zero}, {exp(f'acc{i} - new{i}')})",
            f"term{i} = tl.where(new{i} == {ninf}, {zero}, {exp(f'val{i} - new{i}')})",
            f"acc{j} = acc{j} * scale{i} + term{i}",
            f"acc{i} = new{i}",
        ]
    )
    _finish(
        after,
        peak,
        i,
        f"tl.reduce(acc{i}, 1, _np_max_combine)[:, None]",
        peak.buffer in group.internal,
    )
    row_ninf = triton_literal(float("-inf"), dtype, "[XBLOCK, 1]")
    after.buf.writeline(
        f"rescale{i} = tl.where(acc{i} == {ninf}, {zero}, {exp(f'acc{i} - rres{i}')})"
    )
    summed = f"tl.sum(acc{j} * rescale{i}, axis=1)[:, None]"
    nan = triton_literal(float("nan"), dtype, "[XBLOCK, 1]")
    _finish(
        after,
        total,
        j,
        f"tl.where(rres{i} == {row_ninf}, {nan}, {summed})",
        total.buffer in group.internal,
    )


_TILE = "[XBLOCK, RBLOCK]"


def _kind(store: ReductionStore) -> tuple[str, Any]:
    # The reduction's kind and its accumulator's dtype.
    kind = _reduce_kind(store)
    return kind, _acc_dtype(kind, store.dtype)


def _masked(store: ReductionStore, value: str) -> str:
    # The value tile in the accumulator's type, the reduction's identity where masked off.
    kind, dtype = _kind(store)
    ty = tl_type(dtype)
    value = f"({value} != 0).to({ty})" if kind in ("any", "all") else f"{value}.to({ty})"
    identity = triton_literal(reduction_identity(kind, dtype), dtype, _TILE)
    return f"tl.where(mask, {value}, {identity})"


def _finish(body: _Body, store: ReductionStore, i: int, reduced: str, internal: bool) -> None:
    # A reduced `[XBLOCK, 1]` value finished (any/all as bools, means divided, cast) into
    # the local `rout<i>`, stored unless the buffer is internal to the group.
    kind = _reduce_kind(store)
    body.buf.writeline(f"rres{i} = {reduced}")
    result = f"rres{i}"
    if kind in ("any", "all"):
        result = f"({result} != 0)"
    elif store.divisor is not None:
        divisor = f"tl.full([XBLOCK, 1], {float(store.divisor)!r}, tl.float64)"
        result = f"({result}.to(tl.float64) / {divisor})"
    body.buf.writeline(f"rout{i} = {result}.to({tl_type(store.dtype)})")
    if not internal:
        addr = body.address(store.buffer, store.index, tile=True)
        body.buf.writeline(f"tl.store({_param(store.buffer)} + ({addr}), rout{i}, mask=xmask)")
    body.locals[store.buffer] = f"rout{i}"
