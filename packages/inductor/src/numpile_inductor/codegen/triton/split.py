"""Split reductions: few long rows reduced by many programs, in two kernels.

A reduction kernel runs one program per `XBLOCK` rows, so `x.sum()` of a large
array (one row) would run on one multiprocessor of the GPU. When the rows are
too few to fill the device (`TritonOptions.split_programs`) and long enough to share out
(`max_rblock` elements per chunk at least), each row is cut into `chunks`
contiguous chunks of its flattened reduction index:

1. `<kernel>_split` reduces every (row, chunk) to one partial result, stored in
   the accumulator's dtype in a scratch buffer `<kernel>_partial<i>` (one per
   reduction the kernel holds), row-major; for an outer reduction (a sum over
   axis 0 of a C array with few columns) chunk-major, with the outer tiles:
   neighbouring lanes read neighbouring columns;
2. `<kernel>` reduces each row's partials (persistent: `chunks` fits in one tile)
   and finishes as an unsplit kernel would: any/all as bools, means divided,
   the cast and the store.

Every reduction of the table splits this way (sum, prod, max, min with NaNs
propagated, any, all); a float sum is summed in another tree order, within the
rounding bound the unsplit kernel already has. The row count must be known at
compile time; a row length known only at run time gets the most chunks, each
program working out its share. Torch's inductor makes the same transformation
("split reductions").

    >>> kernels = split_reduction(fused, buffers, TritonOptions())  # doctest: +SKIP
    >>> [k.name for k in kernels]  # doctest: +SKIP
    ['kernel0_split', 'kernel0']
"""

from __future__ import annotations

from typing import Any

from ...config import TritonOptions
from ...loop_ir import Buffer, ReductionStore
from ...scheduler import FusedKernel
from ..common import CodeBuffer
from .kernel import (
    REDUCTION_CONSTEXPRS,
    SplitPlan,
    TritonKernel,
    _acc_dtype,
    _next_pow2,
    _outer_blocks,
    _outer_reduction,
    _param,
    _product,
    _reduce,
    _reduce_kind,
    _reduction_body,
    _signature,
    _size_symbols,
    _unflatten,
    buffer_params,
    jit_decorator,
    looped_warps,
    scalar_params,
    write_results,
    write_xoffset,
)
from .ops import reduction_identity, triton_literal


def split_chunks(xnumel: Any, rnumel: Any, options: TritonOptions) -> int:
    """How many chunks each row is cut into (1: the reduction is not split).

    >>> split_chunks(1, 10_000_000, TritonOptions()), split_chunks(4096, 4096, TritonOptions())
    (512, 1)
    >>> import sympy
    >>> split_chunks(2, sympy.Symbol("s0"), TritonOptions())
    256
    """
    if not options.split_reductions or not isinstance(xnumel, int):
        return 1
    most = options.split_programs // max(xnumel, 1)
    if not isinstance(rnumel, int):  # known at run time: chunks that may hold little
        return max(1, most)
    return max(1, min(most, rnumel // options.max_rblock))


def split_reduction(
    fused: FusedKernel, buffers: dict[str, Buffer], options: TritonOptions
) -> tuple[TritonKernel, TritonKernel] | None:
    """The two kernels of `fused` split (see the module docstring), or None when it should
    not be. Adds the scratch buffers of partial results to `buffers`.

    >>> split_reduction(pointwise, buffers, TritonOptions()) is None  # doctest: +SKIP
    True
    """
    if not fused.is_reduction or fused.parts:
        return None
    xnumel = _product(fused.ranges)
    rnumel = _product(fused.reduction_ranges)
    chunks = split_chunks(xnumel, rnumel, options)
    if chunks < 2:
        return None
    outer = _outer_reduction(fused, buffers)
    xblock, rblock = _outer_blocks(xnumel, rnumel, options) if outer else (1, options.max_rblock)
    chunk = 0  # a run-time row length: the kernel works out its chunk
    if isinstance(rnumel, int):
        chunk = -(-rnumel // chunks)
        chunk = -(-chunk // rblock) * rblock  # whole tiles per chunk
        chunks = -(-rnumel // chunk)  # no chunk left empty
    stores = [store for store in fused.stores if isinstance(store, ReductionStore)]
    plan = SplitPlan(
        chunks,
        chunk,
        tuple(f"{fused.name}_partial{i}" for i in range(len(stores))),
        xnumel if outer else 0,
    )
    for name, store in zip(plan.partials, stores, strict=True):
        dtype = _acc_dtype(_reduce_kind(store), store.dtype)
        buffers[name] = Buffer(name, (xnumel * chunks,), dtype, "kernel")
    first = _first_stage(fused, buffers, plan, (xnumel, rnumel, xblock, rblock), options)
    return first, _second_stage(fused, buffers, stores, plan, xnumel, options)


def _first_stage(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    plan: SplitPlan,
    sizes: tuple[int, int, int, int],
    options: TritonOptions,
) -> TritonKernel:
    xnumel, rnumel, xblock, rblock = sizes
    partials = plan.partials
    used, scalars = _signature(fused, buffers)
    outputs = {store.buffer for store in fused.stores}
    inputs = [name for name in used if name not in outputs]
    stride_dims, params = buffer_params(inputs, buffers)
    params += [_param(name) for name in partials]
    params += scalar_params(scalars, buffers)
    symbols = _size_symbols(fused)
    params += [*symbols, "xnumel", "rnumel", *REDUCTION_CONSTEXPRS]
    name = f"{fused.name}_split"
    note = (
        f"    # split reduction, stage 1 of 2: {list(fused.ranges)} x "
        f"{list(fused.reduction_ranges)} in {plan.chunks} chunks of "
        f"{plan.chunk or 'rnumel / ' + str(plan.chunks)} per row"
        + (", chunk-major" if plan.rows else "")
    )
    body = CodeBuffer(level=1)
    _reduction_body(fused, buffers, body, persistent=False, split=plan)
    head = [jit_decorator(scalars), f"def {name}({', '.join(params)}):", note]
    source = "\n".join([*head, *body.lines])
    return TritonKernel(
        name,
        source + "\n",
        (*inputs, *partials),
        (*stride_dims, *(() for _ in partials)),
        tuple(scalars),
        xnumel * plan.chunks,
        rnumel,
        xblock,
        rblock,
        options.num_warps if plan.rows else looped_warps(xblock, rblock, options),
        True,
        fused.origins,
        tuple(symbols),
        outer=bool(plan.rows),
        split=plan.chunks,
    )


def _second_stage(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    stores: list[ReductionStore],
    plan: SplitPlan,
    xnumel: int,
    options: TritonOptions,
) -> TritonKernel:
    partials, chunks = plan.partials, plan.chunks
    outputs = list(dict.fromkeys(store.buffer for store in stores))
    stride_dims, output_params = buffer_params(outputs, buffers)
    params = [*(_param(name) for name in partials), *output_params]
    params += ["xnumel", "rnumel", *REDUCTION_CONSTEXPRS]
    code = CodeBuffer()
    code.writeline("@triton.jit")
    code.writeline(f"def {fused.name}({', '.join(params)}):")
    with code.indent():
        code.writeline(
            f"# split reduction, stage 2 of 2: combines the {chunks} partial results of a row"
        )
        write_xoffset(code)
        code.writeline("xindex = xoffset + tl.arange(0, XBLOCK)[:, None]")
        code.writeline("xmask = xindex < xnumel")
        _unflatten(code, "x", "xindex", fused.ranges)
        code.writeline("rindex = tl.arange(0, RBLOCK)[None, :]")
        code.writeline("mask = xmask & (rindex < rnumel)")
        results = []
        for i, (partial, store) in enumerate(zip(partials, stores, strict=True)):
            kind = _reduce_kind(store)
            dtype = _acc_dtype(kind, store.dtype)
            identity = triton_literal(reduction_identity(kind, dtype), dtype, "[XBLOCK, RBLOCK]")
            at = f"rindex * {plan.rows} + xindex" if plan.rows else f"xindex * {chunks} + rindex"
            load = f"tl.load({_param(partial)} + ({at}), mask=mask, other=0)"
            code.writeline(f"val{i} = tl.where(mask, {load}, {identity})")
            results.append(_reduce(kind, dtype, f"val{i}"))
        write_results(code, stores, results, buffers)
    rblock = _next_pow2(chunks)
    xblock = max(1, min(_next_pow2(xnumel), options.max_tile // rblock))
    return TritonKernel(
        fused.name,
        code.getvalue() + "\n",
        (*partials, *outputs),
        (*(() for _ in partials), *stride_dims),
        (),
        xnumel,
        chunks,
        xblock,
        rblock,
        options.num_warps,
        True,
        fused.origins,
    )
