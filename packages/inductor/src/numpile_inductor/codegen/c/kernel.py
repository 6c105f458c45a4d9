"""C code generation for one fused kernel: a loop nest over runtime sizes and strides.

A kernel takes its loop sizes, then for each buffer a pointer and its element
strides, then its scalar inputs, all as arguments (nothing about shapes is
baked in but reshape divisors). Strides that are 0 or 1 in the example inputs
are specialized in a fast copy of the loop nest, chosen by one runtime test,
so contiguous inner loops vectorize; the generic copy takes any strides
(negative, zero, non-contiguous). The outer loops run in an OpenMP parallel
region taken when `work >= threshold`; each thread's floating-point flags join the
call's (NumPy's warnings come from them, see `errstate.py`). A row group (see
`scheduler.fuse_rows`) is one parallel loop over rows holding each part's own
loops, with its scratch buffers as per-thread row arrays. Reduction nests are
in `codegen/c/reduction.py`.

    >>> print(kernel_source(fused, buffers, parallel_threshold=65536))  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from numpile_capture import contiguous_strides
from numpile_guards import is_size_symbol

from ...index import free_symbols, index_int, is_integer, size_symbol
from ...loop_ir import AccumulateStore, Apply, Buffer, Expr, Load, ScalarArg, Store
from ...scheduler import FusedKernel
from ..common import CodeBuffer, KernelContext
from ..memory_order import memory_order
from .accumulate import scatter_nest
from .loop import LoopBody, loops, parallel, size_names
from .ops import c_type
from .reduction import (
    VECTOR_TYPEDEFS,
    outer_reduction_nest,
    reduction_nest,
)

if TYPE_CHECKING:
    import sympy
else:
    from ...light_lowering import sympy  # imported on first use (see light_lowering)


@attrs.frozen
class KernelSignature:
    """What the wrapper passes: sizes, then the graph's size symbols its indices read
    (`symbols`), then (pointer, strides) per buffer, then scalars."""

    name: str
    sizes: tuple[int, ...]
    buffers: tuple[str, ...]
    scalars: tuple[str, ...]
    symbols: tuple[sympy.Symbol, ...] = ()


def _stride_symbol(buffer: str, dim: int) -> sympy.Symbol:
    return size_symbol(f"{buffer}_s{dim}")


def kernel_signature(fused: FusedKernel, buffers: dict[str, Buffer]) -> KernelSignature:
    """The argument list of `fused`'s C function.

    >>> kernel_signature(fused, buffers).buffers  # doctest: +SKIP
    ('a', 'b', 'v2')
    """
    names: dict[str, None] = {}
    scalars: dict[str, None] = {}
    for kernel in fused.kernels:
        for store in kernel.stores:
            values = [store.value]
            if isinstance(store, AccumulateStore):
                values = [store.init, *(bound.value for bound in store.indirect), store.value]
            for value in values:
                for name in _buffer_reads(value, scalars):
                    names.setdefault(name, None)
            names.setdefault(store.buffer, None)
    used = tuple(name for name in names if name not in fused.internal)
    sizes = fused.ranges + fused.reduction_ranges
    for store in fused.stores:
        if isinstance(store, AccumulateStore):
            sizes += store.target_shape  # the init loop's
    rows = fused.row_dims
    for part in fused.parts:
        sizes += part.ranges[rows:] + part.reduction_ranges
    # An index may read a size the loops do not run over: a view's start (`x[::-1]` starts
    # at `s0 - 1`). The kernel takes each such symbol as an argument of its own name.
    symbols: dict[sympy.Symbol, None] = {}
    for store in [*fused.stores, *(store for part in fused.parts for store in part.stores)]:
        _store_symbols(store, symbols)
    ordered = tuple(sorted(symbols, key=str))
    return KernelSignature(fused.name, sizes, used, tuple(scalars), ordered)


def _store_symbols(store: Any, found: dict[sympy.Symbol, None]) -> None:
    _index_symbols(getattr(store, "index", ()), found)
    for part in ("value", "init"):
        value = getattr(store, part, None)
        if value is not None:
            _expr_symbols(value, found)
    for bound in getattr(store, "indirect", ()):
        _expr_symbols(bound.value, found)


def _expr_symbols(expr: Expr, found: dict[sympy.Symbol, None]) -> None:
    if isinstance(expr, Load):
        _index_symbols(expr.index, found)
        for bound in expr.indirect:
            _expr_symbols(bound.value, found)
    elif isinstance(expr, Apply):
        for arg in expr.args:
            _expr_symbols(arg, found)


def _index_symbols(index: tuple[Any, ...], found: dict[sympy.Symbol, None]) -> None:
    for item in index:
        for symbol in free_symbols(item):
            if is_size_symbol(symbol):
                found.setdefault(symbol, None)


def _buffer_reads(expr: Expr, scalars: dict[str, None]) -> list[str]:
    if isinstance(expr, Load):
        gathers = [name for bound in expr.indirect for name in _buffer_reads(bound.value, scalars)]
        return [*gathers, expr.buffer]
    if isinstance(expr, ScalarArg):
        scalars[expr.name] = None
        return []
    if isinstance(expr, Apply):
        return [name for arg in expr.args for name in _buffer_reads(arg, scalars)]
    return []


def kernel_source(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    *,
    parallel_threshold: int,
    aliased: frozenset[str] = frozenset(),
) -> str:
    """The C definition of `fused`: a `static int` function returning the floating-point
    flags (NP_FE_* bits) its threads raised.

    Buffers in `aliased` may share memory (an in-place epilogue): no `restrict` on them.

    >>> "#pragma omp parallel" in kernel_source(fused, buffers, parallel_threshold=1)
    ... # doctest: +SKIP
    """
    sig = kernel_signature(fused, buffers)
    params = [f"const int64_t n{i}" for i in range(len(sig.sizes))]
    params += [f"const int64_t {symbol}" for symbol in sig.symbols]
    header: list[str] = []
    fast: dict[tuple[str, int], Any] = {}
    generic: dict[tuple[str, int], Any] = {}
    checks: list[str] = []
    for name in sig.buffers:
        buf = buffers[name]
        ct = c_type(buf.dtype)
        qualifier = "" if name in fused.writes() else "const "
        restrict = "" if name in aliased else "restrict "
        params.append(f"{qualifier}{ct} *{restrict}{name}")
        params.append(f"const int64_t *restrict {name}_st")
        example = buf.example_strides
        if example is None and buf.kind == "extern":
            # Extern results (matmul, ...) are nearly always C-contiguous: specialize for it.
            example = tuple(contiguous_strides(buf.shape))
        for dim in range(len(buf.shape)):
            symbol = _stride_symbol(name, dim)
            header.append(f"const int64_t {symbol} = {name}_st[{dim}];")
            generic[(name, dim)] = symbol
            fast[(name, dim)] = symbol
            if example is not None and example[dim] in (0, 1) and buf.shape[dim] != 1:
                fast[(name, dim)] = index_int(example[dim])
                checks.append(f"{symbol} == {example[dim]}")
            elif buf.shape[dim] == 1:
                fast[(name, dim)] = index_int(0)
                generic[(name, dim)] = index_int(0)
    for name in sorted(fused.scratch):
        buf = buffers[name]
        inner = contiguous_strides(buf.shape[fused.row_dims :])
        for dim in range(len(buf.shape)):
            row_stride = 0 if dim < fused.row_dims else inner[dim - fused.row_dims]
            generic[(name, dim)] = fast[(name, dim)] = index_int(row_stride)
    for name in sig.scalars:
        params.append(f"const {c_type(buffers[name].dtype)} {name}")
    param_text = ", ".join(params) or "void"
    work_sizes = len(sig.sizes)
    if fused.parts:
        first = fused.parts[0]
        work_sizes = len(first.ranges) + len(first.reduction_ranges)
    work = " * ".join(f"n{i}" for i in range(work_sizes)) or "1"
    work_dims = sig.sizes[:work_sizes]
    static = all(is_integer(dim) for dim in work_dims)
    # Each kernel returns the floating-point flags its threads raised (see `parallel`);
    # the wrapper checks them after the call.
    prologue = [
        *header,
        f"const int64_t work = {work};",
        "(void)work;",
        "NP_FP_CLEAR();",
        "int np_fp = 0;",
    ]
    # Without aliasing, every buffer is `restrict` and each pointwise iteration reads and
    # writes only its own elements, so the inner loop may be marked independent.
    ctx = KernelContext(
        fused,
        buffers,
        generic,
        size_names(len(sig.sizes)),
        parallel_threshold=parallel_threshold,
        ivdep=not aliased,
        static_work=math.prod(int(dim) for dim in work_dims) if static else None,
    )
    nest = _nest_of(ctx)
    out = CodeBuffer()
    out.splice(["#ifdef _OPENMP", "#include <omp.h>", "#endif", VECTOR_TYPEDEFS])
    if checks:
        # The generic copy is built at -O1: strided gathers cost GCC most of its compile
        # time and gain little, and -O3's other passes on it cost a cold build of a loop of
        # kernels a quarter of its compiler time; the fast copy (unit and zero strides) is
        # what vectorizes. (The command line's -ffp-contract=off, -fwrapv and -fno-math-errno
        # still hold under the attribute.)
        out.writeline(_GENERIC)
        _function(out, f"static int {fused.name}_generic({param_text})", prologue, nest, ctx)
        call_args = [p.rsplit(" ", 1)[-1].lstrip("*") for p in params]
        guard = [
            f"if (!({' && '.join(checks)})) {{",
            f"    return {fused.name}_generic({', '.join(call_args)});",
            "}",
        ]
        ctx = attrs.evolve(ctx, strides=fast)
        prologue = [*prologue, *guard]
    out.writeline(_OWN_FUNCTION)
    _function(out, f"static int {fused.name}({param_text})", prologue, nest, ctx)
    return out.getvalue()


# NOTE: a kernel stays a function of its own, never inlined into the graph's `call` (as loop
# functions, `loop_function.OUT_OF_LINE`): there GCC's guessed profile gives its loops the
# call site's low frequency (the chain of error branches before it), so they are not
# vectorized, and `call`'s many live values spill the hot loop's registers to the stack (a
# CSR product's gather-accumulate reloaded its pointers from the stack every element).
_OWN_FUNCTION = "__attribute__((noinline))"
_GENERIC = '__attribute__((optimize("O1", "no-tree-vectorize", "no-unroll-loops")))'

Nest = Callable[[KernelContext, CodeBuffer], None]


def _function(
    out: CodeBuffer, head: str, prologue: list[str], nest: Nest, ctx: KernelContext
) -> None:
    out.writelines([head, "{"])
    with out.indent():
        out.writelines(prologue)
        nest(ctx, out)
        out.writeline("return np_fp | NP_FP_TEST();")
    out.writeline("}")


def _nest_of(ctx: KernelContext) -> Nest:
    if ctx.fused.is_scatter:
        return scatter_nest
    if ctx.fused.parts:
        return _row_nest
    if not ctx.fused.is_reduction:
        return _pointwise_nest
    columns = any(getattr(store, "accumulates_columns", False) for store in ctx.fused.stores)
    # An empty reduced axis (sizes 0 are static) has no rows to set the columns up: the row
    # nest stores the identity.
    empty = any(size == 0 for size in ctx.fused.reduction_ranges)
    return outer_reduction_nest if columns and not empty else reduction_nest


def _pointwise_nest(ctx: KernelContext, buf: CodeBuffer) -> None:
    # The loops run in the memory order of the arrays (`memory_order`), the outermost one
    # parallel and chunked; a row group's part keeps the order of its enclosing rows.
    fused, skip = ctx.fused, ctx.skip
    ndim = len(fused.ranges)
    innermost_parallel = ndim == 1 and not skip
    order = memory_order(fused, ctx.buffers) if not skip else tuple(range(skip, ndim))
    outer = order[0] if order else 0
    region = parallel(
        buf,
        max(1, ndim - 1),
        ctx.parallel_threshold,
        simd=ctx.ivdep and ndim == 1,
        enabled=bool(ndim) and not skip,
        chunk=ctx.sizes[outer] if ndim and not skip else None,
        chunk_dim=outer,
        work=ctx.static_work,
    )
    ivdep = ctx.ivdep and not innermost_parallel
    chunked = bool(ndim) and not skip
    sizes = ctx.sizes[:ndim]
    with region, loops(buf, "x", sizes, ivdep=ivdep, chunked=chunked, order=order):
        body = LoopBody(ctx, buf)
        for kernel in fused.kernels:
            for store in kernel.stores:
                assert isinstance(store, Store)
                body.store(store, store.buffer in fused.internal)


def _row_nest(ctx: KernelContext, buf: CodeBuffer) -> None:
    # One parallel loop over the rows; inside, each part's own loops, one after the other,
    # in a block of its own (their temporaries share names). Scratch rows are locals.
    fused, names = ctx.fused, ctx.sizes
    rows = fused.row_dims
    chunk = names[0] if rows else None
    region = parallel(buf, rows, ctx.parallel_threshold, chunk=chunk, work=ctx.static_work)
    with region, loops(buf, "x", names[:rows], chunked=rows > 0):
        for name in sorted(fused.scratch):
            scratch = ctx.buffers[name]
            size = max(1, math.prod(scratch.shape[rows:]))
            buf.writeline(f"{c_type(scratch.dtype)} {name}[{size}];")
        offset = rows
        for part in fused.parts:
            count = len(part.ranges) - rows + len(part.reduction_ranges)
            part_names = names[:rows] + names[offset : offset + count]
            offset += count
            buf.writeline(f"{{  /* {part.name}: {', '.join(part.writes())} */")
            # Only whole pointwise kernels and outer reductions mark their loops `ivdep`.
            part_ctx = attrs.evolve(ctx.part(part, part_names, skip=rows), ivdep=False)
            with buf.indent():
                (reduction_nest if part.is_reduction else _pointwise_nest)(part_ctx, buf)
            buf.writeline("}")
