"""The order of a pointwise kernel's loops: memory order, as NumPy's iterator walks.

A kernel's loop variables `x0, x1, ...` follow the logical axes of its result; in that
order a Fortran-order or transposed operand is read (and written) with its largest stride
innermost. `memory_order` orders the loops instead by the element steps of every array
the kernel touches (its stores' and loads' strides in the example layouts, the layout
the wrapper allocates its outputs with), by NumPy's order='K' rule (`k_order_axes`):
the smallest step innermost where all the operands that move along two axes agree, C
order where they disagree or tie. C-contiguous operands keep C order. A layout is a
choice of speed only: the kernel reads its strides at run time, so any order stays
correct for any strides.

A reduction kernel's loops follow its stores' order instead (`reduction_loops`: NumPy's
order of the additions, `ReductionStore.order`), and a kernel buffer allocated by a runner
takes its node's layout (`allocation_axes`: a C-ordered array of the permuted shape,
transposed back).

    >>> memory_order(fused, buffers)  # doctest: +SKIP
    (1, 0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from numpile_capture import contiguous_strides, k_order_axes

from ..index import coefficient, is_integer, loop_var, stride_rank
from ..loop_ir import Buffer, ReductionStore, Store, loads_of

if TYPE_CHECKING:
    # Annotation only: the scheduler imports the lowering.
    from ..scheduler import FusedKernel


def memory_order(fused: FusedKernel, buffers: Mapping[str, Buffer]) -> tuple[int, ...]:
    """The loop axes of pointwise kernel `fused`, outermost first, in the memory order of
    the arrays it stores and loads (C order, `(0, 1, ...)`, when they are C-contiguous or
    disagree).

    >>> memory_order(scale_of_fortran_input, buffers)  # doctest: +SKIP
    (1, 0)
    """
    ndim = len(fused.ranges)
    steps: list[tuple[int, ...]] = []
    for kernel in fused.kernels:
        for store in kernel.stores:
            assert isinstance(store, Store)
            if store.buffer not in fused.internal:
                _append_steps(steps, store.buffer, store.index, buffers, ndim)
            for load in loads_of(store.value):
                if load.buffer not in fused.internal:
                    _append_steps(steps, load.buffer, load.index, buffers, ndim)
    return k_order_axes(steps, ndim)


def _append_steps(
    steps: list[tuple[int, ...]],
    name: str,
    index: Sequence[Any],
    buffers: Mapping[str, Buffer],
    ndim: int,
) -> None:
    # The element steps of one access along each loop axis, where its layout is known and
    # its index affine in the loop variables (a reshape's FloorDiv, say, gives no step).
    buf = buffers[name]
    strides = buf.example_strides
    if strides is None and buf.kind in ("kernel", "extern"):
        # Kernel results are allocated C-contiguous; extern results nearly always are.
        strides = tuple(contiguous_strides(buf.shape))
    if strides is None or len(strides) != len(index):
        return
    ranks = [stride_rank(stride) for stride in strides]
    row: list[int] = []
    for axis in range(ndim):
        var = loop_var(axis)
        step = 0
        for item, size, rank in zip(index, buf.shape, ranks, strict=True):
            moves = coefficient(item, var)
            if not is_integer(moves):
                return
            if int(moves) != 0 and size != 1:
                if rank is None:
                    return
                step += int(moves) * rank
        row.append(step)
    steps.append(tuple(row))


def reduction_loops(fused: FusedKernel) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The kept dims and the reduced dims of reduction kernel `fused`, each outermost
    first, in the order of its stores' `ReductionStore.order` (the kept ones in C order,
    then the reduced ones in order, where a store gives none).

    >>> reduction_loops(column_sums_of_fortran_input)  # doctest: +SKIP
    ((0,), (0,))
    """
    ndim, rdim = len(fused.ranges), len(fused.reduction_ranges)
    order: tuple[Any, ...] = ()
    for store in fused.stores:
        if isinstance(store, ReductionStore) and store.order:
            order = store.order
            break
    names = [str(var) for var in order]
    kept = [int(name[1:]) for name in names if name.startswith("x")]
    reduced = [int(name[1:]) for name in names if name.startswith("r")]
    if sorted(kept) != list(range(ndim)) or sorted(reduced) != list(range(rdim)):
        return tuple(range(ndim)), tuple(range(rdim))
    return tuple(kept), tuple(reduced)


def allocation_axes(
    shape: tuple[Any, ...], strides: tuple[Any, ...] | None
) -> tuple[int, ...] | None:
    """The axes of a dense layout `strides` of `shape`, outermost first, for allocating it
    as a C-ordered array of the permuted shape, transposed back (any array library); None
    for C order or strides that cannot be ranked. A size-1 axis goes inside the axis whose
    stride it shares, which keeps its stride.

    >>> allocation_axes((3, 4), (1, 3)), allocation_axes((3, 4), (4, 1))
    ((1, 0), None)
    >>> allocation_axes((4, 1, 6), (1, 4, 4))  # a keepdims sum of a Fortran-order array
    (2, 1, 0)
    """
    if strides is None or tuple(strides) == tuple(contiguous_strides(shape)):
        return None
    ranks = [stride_rank(stride) for stride in strides]
    if any(rank is None for rank in ranks):
        return None
    keys = {d: (-int(ranks[d] or 0), shape[d] == 1, d) for d in range(len(shape))}
    return tuple(sorted(range(len(shape)), key=keys.__getitem__))
