"""Reinplacing: a `view_scatter` (or `setitem_at_scatter`) whose base nothing reads afterwards
stores into the base.

Functionalization turns `E[:, 1:] -= c * dH` on an input into a pure `view_scatter`: a copy
of all of `E` with the region replaced, written back into `E` by the epilogue (two
whole-array copies for a region update). After scheduling, `reinplace_scatters` turns such
a step into `view_scatter_`, which assigns into the base's own memory, when

- the base is a mutated input (the epilogue overwrites it anyway) or the result of an
  earlier scatter (a fresh copy, or a mutated input it stored into), and
- no later step reads the base and the base is no output: every read of its old contents
  has run (the steps run in order; a kernel that inlines a read of it counts as reading),
- and no step but another such scatter reads its result, so the in-place scatters can all
  run last. Before the first of them the module fails the call if the kernels raised a
  floating-point flag NumPy would report (`errstate`): the graph then runs again op by op
  with NumPy on inputs still untouched, as for any functionalized graph.

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

# NOTE: each pure scatter (functionalization's form) -> the op that stores into its base (the
# same operands; its result is the base itself). `setitem_at_scatter` is a resumed loop's
# `out[i] = v`: made in place, a store into a mutated input copies no array per iteration.
_IN_PLACE_FORMS = {"view_scatter": "view_scatter_", "setitem_at_scatter": "setitem_at"}


def _reinplaceable(
    steps: list[FusedKernel | ExternCall], mutated: frozenset[str], outputs: set[str]
) -> set[int]:
    # The positions of the scatters that may store in place, moved to the end of the steps.
    chosen = {
        i
        for i, step in enumerate(steps)
        if isinstance(step, ExternCall)
        and step.op_name in _IN_PLACE_FORMS
        and step.args
        and isinstance(step.args[0], BufferRef)
    }
    # A scatter's result is a fresh array (a copy, or an input it stored into in place).
    fresh = {name for i in chosen for name in steps[i].writes()}
    while True:
        storages = set(mutated) | fresh
        keep = set()
        for i in chosen:
            step = steps[i]
            assert isinstance(step, ExternCall) and isinstance(step.args[0], BufferRef)
            base = step.args[0].name
            later = [steps[j] for j in range(i + 1, len(steps))]
            others = [steps[j] for j in range(i + 1, len(steps)) if j not in chosen]
            if (
                base in storages
                and base not in outputs
                and not any(base in other.reads() for other in later)
                and not any(step.buffer in other.reads() for other in others)
            ):
                keep.add(i)
        if keep == chosen:
            return chosen
        chosen = keep


def reinplace_scatters(sched: Schedule, mutated: frozenset[str]) -> Schedule:
    """`sched` with each `view_scatter` step that may store into its base made in place,
    and moved after every other step.

    `mutated` names the input buffers the epilogue writes back (the graph's mutated inputs).
    """
    if not mutated:
        return sched
    steps = list(sched.steps)
    chosen = _reinplaceable(steps, mutated, set(sched.program.outputs.values()))
    if not chosen:
        return sched
    moved = []
    for i in sorted(chosen):
        step = steps[i]
        assert isinstance(step, ExternCall)
        in_place = get_op(_IN_PLACE_FORMS[step.op_name])
        moved.append(attrs.evolve(step, op_name=in_place.name, impl=in_place.impl))
    rest = [step for i, step in enumerate(steps) if i not in chosen]
    return attrs.evolve(sched, steps=[*rest, *moved])
