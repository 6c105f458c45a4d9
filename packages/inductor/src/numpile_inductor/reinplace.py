"""Reinplacing: a `view_scatter` whose base nothing reads afterwards stores into the base.

Functionalization turns `E[:, 1:] -= c * dH` on an input into a pure `view_scatter`: a copy
of all of `E` with the region replaced, written back into `E` by the epilogue (two
whole-array copies for a region update). After scheduling, `reinplace_scatters` turns such
a step into `view_scatter_`, which assigns into the base's own memory, when

- the base is a mutated input (the epilogue overwrites it anyway) or the result of an
  earlier reinplaced scatter into one (a chain of updates of one array), and
- no later step reads the base and the base is no output: every read of its old contents
  has run (the steps run in order; a kernel that inlines a read of it counts as reading).

The value is a materialized buffer or constant evaluated before the store, and the store
is NumPy's assignment, which reads an overlapping value in full first: NumPy's semantics
when the right-hand side reads the target (`x[1:] = x[:-1]`). The epilogue skips the
write-back of an input that is already its own new value (`launcher.with_epilogue`).

    >>> reinplace_scatters(sched, frozenset({"x"})).steps  # doctest: +SKIP
"""

from __future__ import annotations

import attrs

from numpile_capture import get_op

from .loop_ir import BufferRef, ExternCall
from .scheduler import FusedKernel, Schedule

__all__ = ["reinplace_scatters"]


def _reads(step: FusedKernel | ExternCall) -> list[str]:
    return step.reads()


def reinplace_scatters(sched: Schedule, mutated: frozenset[str]) -> Schedule:
    """`sched` with each `view_scatter` step that may store into its base made in place.

    `mutated` names the input buffers the epilogue writes back (the graph's mutated inputs).
    """
    if not mutated:
        return sched
    steps = list(sched.steps)
    outputs = set(sched.program.outputs.values())
    in_place = get_op("view_scatter_")
    storages = set(mutated)
    changed = False
    for position, step in enumerate(steps):
        if not isinstance(step, ExternCall) or step.op_name != "view_scatter":
            continue
        base = step.args[0] if step.args else None
        if not isinstance(base, BufferRef) or base.name not in storages:
            continue
        if base.name in outputs:
            continue
        if any(base.name in _reads(later) for later in steps[position + 1 :]):
            continue
        steps[position] = attrs.evolve(step, op_name=in_place.name, impl=in_place.impl)
        storages.add(step.buffer)
        changed = True
    return attrs.evolve(sched, steps=steps) if changed else sched
