"""Scratch memory of split reductions finished in one kernel, kept per kernel and stream.

A split reduction finished by its last program (`codegen/triton/split.py`) uses, within
one launch, a buffer of partial results per reduction (`TritonKernel.scratch`) and an
int32 counter that is zero before the launch and after it (the finishing program resets
it). Nothing outside the launch reads either, and a stream runs its work in order: the
next launch of the kernel on the same stream starts after this one ended. So both are
allocated once per kernel, stream and device and reused by every later call, instead of a
partials buffer allocated per call; launches on two streams at once each get their own, and
so does each device (CuPy's default stream has the handle 0 on every device).

A CUDA graph capture gets scratch of its own, allocated inside the capture (from the
graph's pool) and kept alive with the runner: a capture's side stream is gone after it,
and its address may come back as another graph's stream, which may replay at the same
time as this graph.

    >>> scratch = KernelScratch()
    >>> partials, counter = scratch.take(np, "k_split", (((8,), np.dtype("float64")),), None, 0)
    >>> scratch.take(np, "k_split", (((8,), np.dtype("float64")),), None, 0)[1] is counter
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

Shape = tuple[tuple[int, ...], np.dtype[Any]]  # a scratch buffer's shape and dtype


class KernelScratch:
    """The scratch buffers and counter of each split kernel, per stream and device; see the
    module docstring. `take` gives `(*partials, counter)`; the arrays are the same for every
    launch of one kernel on one stream.

    >>> len(KernelScratch().take(np, "k_split", (), None, 0))
    1
    """

    def __init__(self) -> None:
        self._kept: dict[tuple[str, int | None, int], tuple[Any, ...]] = {}
        self._recorded: list[tuple[Any, ...]] = []  # those of CUDA graph captures, kept alive

    def take(
        self,
        xp: Any,
        kernel: str,
        shapes: tuple[Shape, ...],
        stream: int | None,
        device: int,
        *,
        capturing: bool = False,
    ) -> tuple[Any, ...]:
        """The partial buffers (of `shapes`) and the zeroed counter of `kernel` on `stream`
        (None: the interpreter) of `device`, allocated on the current device (`device`);
        fresh ones, kept alive, while a CUDA graph is `capturing`."""
        if capturing:
            recorded = _allocate(xp, shapes)
            self._recorded.append(recorded)
            return recorded
        key = (kernel, stream, device)
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = _allocate(xp, shapes)
        return kept

    def held(self) -> dict[tuple[str, int | None, int], tuple[Any, ...]]:
        """The scratch kept for launches outside captures, by (kernel, stream, device).

        >>> KernelScratch().held()
        {}
        """
        return dict(self._kept)

    def recorded(self) -> int:
        """How many scratch sets CUDA graph captures took (kept alive with the runner).

        >>> KernelScratch().recorded()
        0
        """
        return len(self._recorded)


def _allocate(xp: Any, shapes: tuple[Shape, ...]) -> tuple[Any, ...]:
    partials = tuple(xp.empty(shape, dtype=dtype) for shape, dtype in shapes)
    return (*partials, xp.zeros(1, dtype=np.int32))
