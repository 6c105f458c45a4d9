"""Loop tiers: how a backend runs each kept loop, and why not faster, for `explain`.

A backend that compiles a graph with `for_loop` / `while_loop` nodes decides, per loop,
how it runs: as one C loop nest, as C calling the body's kernels, as a host loop calling
the body compiled, or op by op with NumPy (and parts of it apart: a first iteration, a
run again with NumPy after a check). It says so with one `LoopTier` per decision,
`record_loop_tier(...)`; the dispatcher collects the records of each backend compile
(`collecting_loop_tiers`) and `explain` prints them under the graph. Run-time fallbacks
(a C loop handing a call to NumPy) are recorded the same way while the call runs.

    >>> with collecting_loop_tiers() as tiers:
    ...     record_loop_tier(LoopTier("for", "f.py", 3, OP_BY_OP, "shapes follow the index"))
    >>> print(tiers[0])
    for loop (f.py:3) runs op by op with NumPy because shapes follow the index

Outside a collecting block a record goes nowhere (backends log their reasons on the
`numpile.perf_hints` channel too).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import attrs

# The tiers a loop may get, fastest first (a backend may name others).
C_LOOP = "one C loop nest"
C_KERNEL_LOOP = "a C loop calling its body's kernels"
HOST_LOOP = "a host loop calling its body compiled"
OP_BY_OP = "op by op with NumPy"
DEVICE_PROGRAM = "one Triton program"
FIRST_ITERATION_APART = "C, its first iteration emitted apart"
NUMPY_RERUN = "C, run again with NumPy where a run-time flag is clear"
NUMPY_AT_RUN_TIME = "with NumPy, handed over by its C loop"

_state = threading.local()


@attrs.frozen
class LoopTier:
    """One backend decision about a loop: where it is, its kind, the tier, and why.

    `kind` is "for" or "while"; `reason` says why not a faster tier (None when the loop
    got the fastest one); `count` is how many times a run-time record happened.

        >>> str(LoopTier("while", None, None, C_LOOP))
        'while loop (an unknown line) runs as one C loop nest'
    """

    kind: str
    filename: str | None
    lineno: int | None
    tier: str
    reason: str | None = None
    count: int = 1

    def __str__(self) -> str:
        where = "an unknown line" if self.filename is None else f"{self.filename}:{self.lineno}"
        verb = {OP_BY_OP: "runs", NUMPY_AT_RUN_TIME: "ran"}.get(self.tier, "runs as")
        text = f"{self.kind} loop ({where}) {verb} {self.tier}"
        if self.reason:
            text += f" because {self.reason}"
        if self.count > 1:
            text += f" ({self.count} times)"
        return text


@contextlib.contextmanager
def collecting_loop_tiers() -> Iterator[list[LoopTier]]:
    """Collect the `LoopTier` records made on this thread inside the block (innermost block).

    >>> with collecting_loop_tiers() as tiers:
    ...     pass
    >>> tiers
    []
    """
    tiers: list[LoopTier] = []
    stack: list[list[LoopTier]] = getattr(_state, "stack", [])
    _state.stack = [*stack, tiers]
    try:
        yield tiers
    finally:
        _state.stack = stack


def record_loop_tier(tier: LoopTier) -> None:
    """Append `tier` to the innermost `collecting_loop_tiers` block of this thread, if any.

    >>> record_loop_tier(LoopTier("for", None, None, C_LOOP))
    """
    stack: list[list[LoopTier]] = getattr(_state, "stack", [])
    if stack:
        stack[-1].append(tier)


def merged_loop_tiers(tiers: list[LoopTier]) -> tuple[LoopTier, ...]:
    """`tiers` without repeats, in order; repeated run-time records counted.

    >>> rerun = LoopTier("for", None, None, NUMPY_AT_RUN_TIME)
    >>> [tier.count for tier in merged_loop_tiers([rerun, rerun])]
    [2]
    """
    counts: dict[LoopTier, int] = {}
    for tier in tiers:
        counts[tier] = counts.get(tier, 0) + 1
    return tuple(
        attrs.evolve(tier, count=count) if tier.tier == NUMPY_AT_RUN_TIME else tier
        for tier, count in counts.items()
    )


@contextlib.contextmanager
def synchronous_compiles() -> Iterator[None]:
    """Inside the block, backends finish a compile before they return (no background tier),
    so what they decided is known when the first call returns (`explain` uses it).

    >>> with synchronous_compiles():
    ...     compiles_synchronously()
    True
    """
    depth = getattr(_state, "synchronous", 0)
    _state.synchronous = depth + 1
    try:
        yield
    finally:
        _state.synchronous = depth


def compiles_synchronously() -> bool:
    """Whether a `synchronous_compiles` block is open on this thread.

    >>> compiles_synchronously()
    False
    """
    return bool(getattr(_state, "synchronous", 0))
