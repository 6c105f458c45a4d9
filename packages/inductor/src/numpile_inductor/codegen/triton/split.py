"""Split reductions: few long rows reduced by many programs, in one kernel or two.

A reduction kernel runs one program per `XBLOCK` rows, so `x.sum()` of a large
array (one row) would run on one multiprocessor of the GPU. When the rows are
too few to fill the device (`TritonOptions.split_programs`) and long enough to share out
(`max_rblock` elements per chunk at least), each row is cut into `chunks`
contiguous chunks of its flattened reduction index:

1. every program reduces its (row, chunk) pairs to one partial result each, stored
   in the accumulator's dtype in a scratch buffer `<kernel>_partial<i>` (one per
   reduction the kernel holds), row-major; for an outer reduction (a sum over
   axis 0 of a C array with few columns) chunk-major, with the outer tiles:
   neighbouring lanes read neighbouring columns;
2. each row's partials are reduced (persistent: `chunks` fits in one tile) and
   finished as an unsplit kernel would: any/all as bools, means divided, the cast
   and the store.

By default (`TritonOptions.split_in_one_kernel`) both stages are one kernel,
`<kernel>_split`, with a last-block finish: after storing its partials, each
program adds one to a counter (an int32 the runner keeps per kernel and stream,
zero between launches); the program that sees the last count runs stage 2
(`<kernel>_finish`, a `@triton.jit` helper) over every row, in a fixed order,
then sets the counter back to zero. The partials are combined in the same order
on every run, so a result is the same from run to run for the same input
(float atomic adds would not be), and the reset in the kernel itself keeps the
counter right under CUDA-graph replay. Otherwise stage 2 is a second kernel,
`<kernel>`.

Every reduction of the table splits this way (sum, prod, max, min with NaNs
propagated, any, all, mean; argmin/argmax are extern calls on this backend); a
float sum is summed in another tree order, within the rounding bound the unsplit
kernel already has. The row count must be known at compile time; a row length
known only at run time gets the most chunks, each program working out its share.
Torch's inductor makes the same transformation ("split reductions").

    >>> kernels = split_reduction(fused, buffers, TritonOptions())  # doctest: +SKIP
    >>> [k.name for k in kernels]  # doctest: +SKIP
    ['kernel0_split']
"""

from __future__ import annotations

from typing import Any

import attrs

from ...config import TritonOptions
from ...loop_ir import Buffer, ReductionStore
from ...scheduler import FusedKernel
from ..common import CodeBuffer
from .kernel import (
    COUNTER_PARAM,
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
    memory_scalars,
    scalar_params,
    write_results,
    write_scalar_loads,
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
) -> tuple[TritonKernel, ...] | None:
    """The kernels of `fused` split (see the module docstring): one, or two when
    `options.split_in_one_kernel` is off; None when it should not be split. Adds the
    scratch buffers of partial results to `buffers`.

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
    sizes = (xnumel, rnumel, xblock, rblock)
    stage = _StageTwo(fused, buffers, stores, plan, xnumel, options)
    if options.split_in_one_kernel:
        return (_first_stage(fused, buffers, plan, sizes, options, finish=stage),)
    first = _first_stage(fused, buffers, plan, sizes, options, finish=None)
    return first, _second_stage(stage)


def _first_stage(
    fused: FusedKernel,
    buffers: dict[str, Buffer],
    plan: SplitPlan,
    sizes: tuple[int, int, int, int],
    options: TritonOptions,
    *,
    finish: _StageTwo | None,
) -> TritonKernel:
    # `finish`: stage 2, when this kernel runs it (a last-block finish).
    xnumel, rnumel, xblock, rblock = sizes
    partials = plan.partials
    used, scalars = _signature(fused, buffers)
    outputs = list(dict.fromkeys(store.buffer for store in fused.stores))
    inputs = [name for name in used if name not in outputs]
    stride_dims, params = buffer_params(inputs, buffers)
    params += [_param(name) for name in partials]
    names = (*inputs, *partials)
    dims = (*stride_dims, *(() for _ in partials))
    if finish is not None:
        output_dims, output_params = buffer_params(outputs, buffers)
        params += [*output_params, COUNTER_PARAM]
        names += tuple(outputs)
        dims += output_dims
    in_memory = memory_scalars(scalars, options)
    params += scalar_params(scalars, buffers, in_memory=in_memory)
    symbols = _size_symbols(fused)
    params += [*symbols, "xnumel", "rnumel", *REDUCTION_CONSTEXPRS]
    name = f"{fused.name}_split"
    stage = "stage 1 of 2" if finish is None else "in one kernel"
    note = (
        f"    # split reduction, {stage}: {list(fused.ranges)} x "
        f"{list(fused.reduction_ranges)} in {plan.chunks} chunks of "
        f"{plan.chunk or 'rnumel / ' + str(plan.chunks)} per row"
        + (", chunk-major" if plan.rows else "")
    )
    body = CodeBuffer(level=1)
    write_scalar_loads(body, scalars, in_memory=in_memory)
    _reduction_body(fused, buffers, body, persistent=False, split=plan)
    helper = ""
    if finish is not None:
        helper = _finish_helper(finish)
        _write_last_block_finish(body, finish)
    head = [jit_decorator(scalars, in_memory=in_memory), f"def {name}({', '.join(params)}):", note]
    source = "\n".join([*head, *body.lines])
    return TritonKernel(
        name,
        helper + source + "\n",
        names,
        dims,
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
        counter=finish is not None,
        in_memory=in_memory,
        scratch=partials if finish is not None else (),
    )


@attrs.frozen
class _StageTwo:
    # What stage 2 combines: the reductions `stores` of `fused` from the partials of
    # `plan`, over `xnumel` rows; read by the three writers of stage 2 (the second kernel,
    # the last-block finish's helper and its call).
    fused: FusedKernel
    buffers: dict[str, Buffer]
    stores: list[ReductionStore]
    plan: SplitPlan
    xnumel: int
    options: TritonOptions

    def outputs(self) -> list[str]:
        return list(dict.fromkeys(store.buffer for store in self.stores))

    def params(self) -> tuple[tuple[tuple[int, ...], ...], list[str]]:
        # The outputs' stride dims, and the parameters of the partials then the outputs.
        stride_dims, output_params = buffer_params(self.outputs(), self.buffers)
        return stride_dims, [*(_param(name) for name in self.plan.partials), *output_params]

    def blocks(self) -> tuple[int, int]:
        # Stage 2's tile: a row's partials in one tile (persistent), as many rows as fit.
        rblock = _next_pow2(self.plan.chunks)
        return max(1, min(_next_pow2(self.xnumel), self.options.max_tile // rblock)), rblock


def _write_last_block_finish(body: CodeBuffer, stage: _StageTwo) -> None:
    # Every thread's stores of partials come before the count (the barrier; the atomic's
    # release), and the finisher's loads after it (its acquire; `.cg` loads bypass L1).
    xblock, rblock = stage.blocks()
    _, args = stage.params()
    args += [str(stage.xnumel), str(stage.plan.chunks), f"XBLOCK={xblock}", f"RBLOCK={rblock}"]
    body.writeline("# the last program to count combines every row's partials, in a fixed order")
    body.writeline("tl.debug_barrier()")
    body.writeline(f'done = tl.atomic_add({COUNTER_PARAM}, 1, sem="acq_rel")')
    body.writeline("if done == tl.num_programs(0) - 1:")
    with body.indent():
        body.writeline(f"{stage.fused.name}_finish({', '.join(args)})")
        body.writeline(f"tl.atomic_xchg({COUNTER_PARAM}, 0)  # ready for the next launch")


def _finish_helper(stage: _StageTwo) -> str:
    # Stage 2 as a @triton.jit helper the last program calls: a loop over tiles of rows.
    constexprs = ("XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr")
    code = _stage_two_head(stage, f"{stage.fused.name}_finish", constexprs, "stage 2")
    with code.indent():
        code.writeline("for xoffset in range(0, xnumel, XBLOCK):")
        with code.indent():
            _write_combine(code, stage, modifier=".cg")
    return code.getvalue() + "\n\n"


def _second_stage(stage: _StageTwo) -> TritonKernel:
    fused, plan = stage.fused, stage.plan
    code = _stage_two_head(stage, fused.name, REDUCTION_CONSTEXPRS, "stage 2 of 2")
    with code.indent():
        write_xoffset(code)
        _write_combine(code, stage, modifier="")
    stride_dims, _ = stage.params()
    xblock, rblock = stage.blocks()
    return TritonKernel(
        fused.name,
        code.getvalue() + "\n",
        (*plan.partials, *stage.outputs()),
        (*(() for _ in plan.partials), *stride_dims),
        (),
        stage.xnumel,
        plan.chunks,
        xblock,
        rblock,
        stage.options.num_warps,
        True,
        fused.origins,
    )


def _stage_two_head(
    stage: _StageTwo, name: str, constexprs: tuple[str, ...], which: str
) -> CodeBuffer:
    # The `def` line of a stage-2 function and the comment that opens its body.
    _, params = stage.params()
    params += ["xnumel", "rnumel", *constexprs]
    code = CodeBuffer()
    code.writeline("@triton.jit")
    code.writeline(f"def {name}({', '.join(params)}):")
    with code.indent():
        code.writeline(
            f"# split reduction, {which}: combines the {stage.plan.chunks} partial results of a row"
        )
    return code


def _write_combine(code: CodeBuffer, stage: _StageTwo, *, modifier: str) -> None:
    # Stage 2 over the rows from `xoffset`: each row's partials reduced, finished, stored.
    fused, plan, stores = stage.fused, stage.plan, stage.stores
    code.writeline("xindex = xoffset + tl.arange(0, XBLOCK)[:, None]")
    code.writeline("xmask = xindex < xnumel")
    _unflatten(code, "x", "xindex", fused.ranges)
    code.writeline("rindex = tl.arange(0, RBLOCK)[None, :]")
    code.writeline("mask = xmask & (rindex < rnumel)")
    cache = f", cache_modifier={modifier!r}" if modifier else ""
    results = []
    for i, (partial, store) in enumerate(zip(plan.partials, stores, strict=True)):
        kind = _reduce_kind(store)
        dtype = _acc_dtype(kind, store.dtype)
        identity = triton_literal(reduction_identity(kind, dtype), dtype, "[XBLOCK, RBLOCK]")
        at = f"rindex * {plan.rows} + xindex" if plan.rows else f"xindex * {plan.chunks} + rindex"
        load = f"tl.load({_param(partial)} + ({at}), mask=mask, other=0{cache})"
        code.writeline(f"val{i} = tl.where(mask, {load}, {identity})")
        results.append(_reduce(kind, dtype, f"val{i}"))
    write_results(code, stores, results, stage.buffers)
