"""The fusion scheduler: kernels with the same loop nest become one kernel.

Steps arrive in topological order. A kernel joins an earlier fused kernel
when both have the same ranges and reduction ranges and kind, every buffer it
reads is ready there (written before that kernel, or written by it at the
same index for pointwise kernels), and no extern mutation lies in between.
This fuses pointwise chains that were realized (several users) and puts
reductions over the same ranges side by side. A buffer written and read only
inside one fused kernel gets no memory: it becomes a local of the loop body.

    >>> [str(k) for k in schedule(program).steps]  # doctest: +SKIP
"""

from __future__ import annotations

import logging

import attrs

from .loop_ir import ExternCall, Kernel, ReductionStore, Store, loads_of
from .lowering import Program

log = logging.getLogger("numpile.inductor.scheduler")

_MAX_FUSED_STORES = 32


@attrs.frozen
class FusedKernel:
    """Kernels fused into one loop nest; `internal` buffers live in registers only."""

    name: str
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    kernels: tuple[Kernel, ...]
    internal: frozenset[str] = frozenset()

    @property
    def is_reduction(self) -> bool:
        return self.kernels[0].is_reduction

    @property
    def stores(self) -> list[Store | ReductionStore]:
        return [store for kernel in self.kernels for store in kernel.stores]

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
        origins = ", ".join(o for kernel in self.kernels for o in kernel.origins)
        kind = "reduction" if self.is_reduction else "pointwise"
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


def schedule(program: Program) -> Schedule:
    """Fuse the program's kernels; returns the fused steps in execution order.

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
        for position in range(len(groups) - 1, max(ready, 0) - 1, -1):
            group = groups[position]
            if isinstance(group, ExternCall) or position < ready:
                continue
            head = group[0]
            if (head.ranges, head.reduction_ranges, head.is_reduction) != (
                step.ranges,
                step.reduction_ranges,
                step.is_reduction,
            ):
                continue
            if sum(len(k.stores) for k in group) + len(step.stores) > _MAX_FUSED_STORES:
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
    return Schedule(program, _finish(program, groups))


def _finish(
    program: Program, groups: list[list[Kernel] | ExternCall]
) -> list[FusedKernel | ExternCall]:
    readers: dict[str, set[int]] = {}
    for position, group in enumerate(groups):
        members = [group] if isinstance(group, ExternCall) else group
        for member in members:
            for name in member.reads():
                readers.setdefault(name, set()).add(position)
    outputs = set(program.outputs.values())
    steps: list[FusedKernel | ExternCall] = []
    count = 0
    for position, group in enumerate(groups):
        if isinstance(group, ExternCall):
            steps.append(group)
            continue
        internal: set[str] = set()
        if not group[0].is_reduction:
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
