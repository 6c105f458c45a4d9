"""The fusion scheduler: kernels with the same loop nest become one kernel.

Steps arrive in topological order. A kernel joins an earlier fused kernel
when both have the same ranges and reduction ranges and kind, every buffer it
reads is ready there (written before that kernel, or written by it at the
same index for pointwise kernels), and no extern mutation lies in between.
This fuses pointwise chains that were realized (several users) and puts
reductions over the same ranges side by side. A buffer written and read only
inside one fused kernel gets no memory: it becomes a local of the loop body.
Then `fuse_rows` merges runs of kernels that share leading loops and read
each other only row by row (softmax, layernorm) into one row group, parallel
over rows, whose intermediates live in a per-thread scratch row.

    >>> [str(k) for k in schedule(program).steps]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
from typing import Any

import attrs

from .index import loop_var
from .loop_ir import AccumulateStore, ExternCall, Kernel, ReductionStore, Store, loads_of
from .lowering import Program

log = logging.getLogger("numpile.inductor.scheduler")

_MAX_FUSED_STORES = 32


@attrs.frozen
class FusedKernel:
    """Kernels fused into one loop nest; `internal` buffers live in registers only.

    A *row group* (`parts` non-empty) runs several fused kernels one after the
    other inside one parallel loop over their common leading `ranges` (the
    rows): e.g. softmax's max, exp, sum and divide per row while the row is in
    cache. Its `scratch` buffers hold one row per thread instead of an array;
    `internal` includes them and the parts' register-only buffers.
    """

    name: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    kernels: tuple[Kernel, ...]
    internal: frozenset[str] = frozenset()
    parts: tuple[FusedKernel, ...] = ()
    scratch: frozenset[str] = frozenset()

    @property
    def is_reduction(self) -> bool:
        return self.kernels[0].is_reduction

    @property
    def is_scatter(self) -> bool:
        """Whether the kernel scatter-accumulates (`loop_ir.AccumulateStore`)."""
        return self.kernels[0].is_scatter

    @property
    def row_dims(self) -> int:
        """How many leading loops a row group shares (0 for a plain fused kernel)."""
        return len(self.ranges) if self.parts else 0

    @property
    def stores(self) -> list[Store | ReductionStore | AccumulateStore]:
        return [store for kernel in self.kernels for store in kernel.stores]

    @property
    def origins(self) -> tuple[str, ...]:
        """The graph nodes this kernel computes, by name, in order."""
        return tuple(o for kernel in self.kernels for o in kernel.origins)

    def reads(self) -> list[str]:
        written = set(self.writes())
        names: dict[str, None] = {}
        for kernel in self.kernels:
            for name in kernel.reads():
                if name not in written:
                    names[name] = None
        return list(names)

    def writes(self) -> list[str]:
        return [name for kernel in self.kernels for name in kernel.writes()]

    def __str__(self) -> str:
        if self.parts:
            head = f"{self.name}: rows over {list(self.ranges)}"
            lines = [head, *(f"  {line}" for part in self.parts for line in str(part).split("\n"))]
            lines += [f"  scratch row: {name}" for name in sorted(self.scratch)]
            return "\n".join(lines)
        origins = ", ".join(self.origins)
        kind = "reduction" if self.is_reduction else "pointwise"
        kind = "scatter" if self.is_scatter else kind
        loops = f"{list(self.ranges)}"
        if self.reduction_ranges:
            loops += f" x {list(self.reduction_ranges)}"
        lines = [f"{self.name}: {kind} over {loops}  # fuses {origins}"]
        for store in self.stores:
            note = "  # register only" if store.buffer in self.internal else ""
            lines.append(f"  {store}{note}")
        return "\n".join(lines)


@attrs.define
class Schedule:
    """The program's steps after fusion, in execution order."""

    program: Program
    steps: list[FusedKernel | ExternCall]

    @property
    def kernels(self) -> list[FusedKernel]:
        return [step for step in self.steps if isinstance(step, FusedKernel)]

    def __str__(self) -> str:
        return "\n".join(str(step) for step in self.steps)


def _reads_at_store_index(kernel: Kernel, group: list[Kernel]) -> bool:
    # Every load by `kernel` of a buffer written in `group` must read the element the
    # same loop iteration wrote (pointwise kernels only).
    index_of = {store.buffer: store.index for member in group for store in member.stores}
    for store in kernel.stores:
        for load in loads_of(store.value):
            if load.buffer in index_of and load.index != index_of[load.buffer]:
                return False
    return True


def schedule(
    program: Program, *, scratch_rows: bool = True, keep: frozenset[str] = frozenset()
) -> Schedule:
    """Fuse the program's kernels; returns the fused steps in execution order.

    `scratch_rows`: a row group's intermediates live in a per-thread scratch row (the C
    backend), so only rows of known size up to `_MAX_SCRATCH_BYTES` leave memory; False
    when intermediates are recomputed where read or kept in registers (Triton), so any
    intermediate read only inside its group leaves memory. `keep`: buffers stored to memory
    though no step reads them and no output names them (a loop body's stores through a row
    view of an input, `loop_stores`).

    >>> len(schedule(lower_graph(graph)).kernels)  # doctest: +SKIP
    1
    """
    groups: list[list[Kernel] | ExternCall] = []
    writer: dict[str, int] = {}
    barrier = -1
    for step in program.steps:
        if isinstance(step, ExternCall):
            groups.append(step)
            position = len(groups) - 1
            if step.is_barrier:
                barrier = position
            for name in step.writes():
                writer[name] = position
            continue
        reads = step.reads()
        ready = max([writer.get(name, -1) for name in reads] + [barrier])
        chosen = None
        # A scatter-accumulate runs alone (sequential, in index order): nothing joins it.
        for position in range(len(groups) - 1, max(ready, 0) - 1, -1):
            if step.is_scatter:
                break
            group = groups[position]
            if isinstance(group, ExternCall) or position < ready:
                continue
            head = group[0]
            if head.is_scatter:
                continue
            if (head.ranges, head.reduction_ranges, head.is_reduction) != (
                step.ranges,
                step.reduction_ranges,
                step.is_reduction,
            ):
                continue
            if sum(len(k.stores) for k in group) + len(step.stores) > _MAX_FUSED_STORES:
                continue
            if _addition_order(head) != _addition_order(step):
                continue
            reads_group = any(writer.get(n) == position for n in reads)
            if reads_group and (step.is_reduction or not _reads_at_store_index(step, group)):
                continue
            chosen = position
            break
        if chosen is None:
            groups.append([step])
            chosen = len(groups) - 1
        else:
            group = groups[chosen]
            assert isinstance(group, list)
            group.append(step)
            log.debug("fused %s into group %d", step.name, chosen)
        for name in step.writes():
            writer[name] = chosen
    finished = _finish(program, groups, keep)
    steps = fuse_rows(program, finished, scratch_rows=scratch_rows, keep=keep)
    return Schedule(program, _rename(steps))


def _finish(
    program: Program, groups: list[list[Kernel] | ExternCall], keep: frozenset[str]
) -> list[FusedKernel | ExternCall]:
    readers: dict[str, set[int]] = {}
    for position, group in enumerate(groups):
        members = [group] if isinstance(group, ExternCall) else group
        for member in members:
            for name in member.reads():
                readers.setdefault(name, set()).add(position)
    outputs = set(program.outputs.values()) | keep
    steps: list[FusedKernel | ExternCall] = []
    count = 0
    for position, group in enumerate(groups):
        if isinstance(group, ExternCall):
            steps.append(group)
            continue
        internal: set[str] = set()
        if not group[0].is_reduction and not group[0].is_scatter:
            for kernel in group:
                for name in kernel.writes():
                    if name not in outputs and readers.get(name, set()) <= {position}:
                        internal.add(name)
        head = group[0]
        steps.append(
            FusedKernel(
                f"kernel{count}",
                head.ranges,
                head.reduction_ranges,
                tuple(group),
                frozenset(internal),
            )
        )
        count += 1
    return steps


# Scratch rows larger than this stay arrays in memory (they live on each thread's stack).
_MAX_SCRATCH_BYTES = 65536


def _addition_order(kernel: Kernel) -> tuple[Any, ...]:
    # The loop order a reduction kernel adds in (`ReductionStore.order`): reductions fuse
    # only where they add in the same order, each as NumPy does.
    orders = [store.order for store in kernel.stores if isinstance(store, ReductionStore)]
    return orders[0] if orders else ()


def _row_prefix(step: FusedKernel | ExternCall) -> tuple[int, ...]:
    if not isinstance(step, FusedKernel) or step.parts or step.is_scatter:
        return ()
    if step.is_reduction and len(step.ranges) == 0:
        return ()
    # A reduction NumPy adds column by column (a kept axis innermost in memory: a
    # Fortran-order row sum) is no row's work: its kernel accumulates whole columns.
    if any(isinstance(s, ReductionStore) and s.accumulates_columns for s in step.stores):
        return ()
    return step.ranges


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    count = 0
    while count < min(len(a), len(b)) and a[count] == b[count]:
        count += 1
    return a[:count]


def _same_row_reads(
    members: list[FusedKernel], step: FusedKernel, rows: int, program: Program
) -> bool:
    # Every load by `step` of a buffer a member wrote reads that buffer's row `rows` loops
    # deep (the first `rows` indices are the loop variables), so the row is complete.
    written = {store.buffer: store for member in members for store in member.stores}
    xs = tuple(loop_var(d) for d in range(rows))
    for store in step.stores:
        for load in loads_of(store.value):
            if load.buffer not in written:
                continue
            shape = program.buffers[load.buffer].shape
            if len(shape) < rows or tuple(load.index[:rows]) != xs:
                return False
            if tuple(written[load.buffer].index[:rows]) != xs:
                return False
    return True


def fuse_rows(
    program: Program,
    steps: list[FusedKernel | ExternCall],
    *,
    scratch_rows: bool = True,
    keep: frozenset[str] = frozenset(),
) -> list[FusedKernel | ExternCall]:
    """Merge consecutive kernels that work row by row into row groups.

    A run of kernels with a common non-empty prefix of loop ranges, containing a
    reduction, where each reads what the earlier ones wrote only in its own row,
    becomes one kernel parallel over the rows. Buffers read only inside the
    group get one row of scratch per thread instead of memory (`scratch_rows`, else they
    are internal to the group whatever their size); `keep` stays in memory, as `schedule`'s.

    >>> [str(s).split(":")[0] for s in fuse_rows(program, steps)]  # doctest: +SKIP
    ['kernel0']
    """
    runs: list[list[FusedKernel | ExternCall]] = []
    prefix: tuple[int, ...] = ()
    for step in steps:
        own = _row_prefix(step)
        if runs and prefix and own:
            candidate = _common_prefix(prefix, own)
            members = runs[-1]
            fused = [m for m in members if isinstance(m, FusedKernel)]
            assert isinstance(step, FusedKernel)
            # Size-1 dims indexed by 0 (keepdims results) end the row early: try shorter.
            rows = len(candidate)
            while rows and not _same_row_reads(fused, step, rows, program):
                rows -= 1
            if rows:
                members.append(step)
                prefix = candidate[:rows]
                continue
        runs.append([step])
        prefix = own
    readers: dict[str, set[int]] = {}
    for position, run in enumerate(runs):
        for member in run:
            for name in member.reads():
                readers.setdefault(name, set()).add(position)
    outputs = set(program.outputs.values()) | keep
    result: list[FusedKernel | ExternCall] = []
    for position, run in enumerate(runs):
        parts = [m for m in run if isinstance(m, FusedKernel)]
        if len(run) == 1 or not any(part.is_reduction for part in parts):
            result.extend(run)
            continue
        rows = len(_common_rows(parts))
        scratch: set[str] = set()
        for part in parts:
            for name in part.writes():
                buf = program.buffers[name]
                row_bytes = math.prod(buf.shape[rows:]) * buf.dtype.itemsize
                fits = not scratch_rows or (
                    isinstance(row_bytes, int)  # a row of symbolic size stays in memory
                    and row_bytes <= _MAX_SCRATCH_BYTES
                )
                if (
                    fits
                    and name not in outputs
                    and name not in part.internal
                    and readers.get(name, set()) <= {position}
                ):
                    scratch.add(name)
        internal = set(scratch)
        for part in parts:
            internal |= part.internal
        parts = [attrs.evolve(part, name=f"part{i}") for i, part in enumerate(parts)]
        result.append(
            FusedKernel(
                parts[0].name,
                _common_rows(parts),
                (),
                tuple(kernel for part in parts for kernel in part.kernels),
                frozenset(internal),
                tuple(parts),
                frozenset(scratch),
            )
        )
        log.debug("row group of %d kernels over %s", len(parts), _common_rows(parts))
    return result


def _common_rows(parts: list[FusedKernel]) -> tuple[int, ...]:
    prefix = parts[0].ranges
    for part in parts[1:]:
        prefix = _common_prefix(prefix, part.ranges)
    return prefix


def _rename(steps: list[FusedKernel | ExternCall]) -> list[FusedKernel | ExternCall]:
    result: list[FusedKernel | ExternCall] = []
    count = 0
    for step in steps:
        if isinstance(step, FusedKernel):
            step = attrs.evolve(step, name=f"kernel{count}")
            count += 1
        result.append(step)
    return result
