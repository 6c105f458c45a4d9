"""The locals of a loop body: which it carries, which are its temporaries, which it reads.

A local the body assigns is carried when its value before the body matters (the body
reads it before assigning it) or its value after the loop does (some path from the exit
reads it before storing it); else it is a temporary of one iteration. The scan also
refuses bodies that cannot be kept (a yield, a raise, a jump out of the loop, a rebound
cell or global) with `LoopFallback`. A loop inside a `try` block is kept when nothing its
body traces may raise (`Frame.step` checks each instruction of the block).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .bytecode import Instruction
from .loop_exit import LoopFallback, exit_targets

if TYPE_CHECKING:
    from .frame import Frame


def body_names(
    frame: Frame,
    head: int,
    low: int,
    high: int,
    exit_at: int,
    *,
    exit_from: int = -1,
    span_end: int | None = None,
    else_at: int | None = None,
    entered: bool = False,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The carried locals and the temporaries of a loop body [low, high) whose loop spans
    [head, exit_at) (or [head, span_end) where the code after it, at `exit_at`, is a copy
    inside the body: a `while True:` on 3.12+); only instruction `exit_from` may jump to
    `exit_at` (a while loop's bottom test). `LoopFallback` for a body that leaves early or
    rebinds cells. `else_at`: where an `else:` clause a break skips ends (a jump there is a
    break too). `entered`: the body runs at least once (`while True:`), so a local first
    bound in it and read after it is carried too (see `while_capture.late_seeds`)."""
    instructions = frame.instructions
    span = exit_at if span_end is None else span_end
    stored: list[str] = []
    for position in range(low, high):
        body_inst = instructions[position]
        name = body_inst.opname
        target = body_inst.target
        # A jump to the exit is a break and a return may copy the code after the loop
        # (3.12+): the trace tells them apart (see loop_exit).
        breaks_to = target in exit_targets(instructions, exit_at) or (
            target is not None and target == else_at
        )
        if target is not None and not head <= target <= span and not breaks_to:
            raise LoopFallback("it leaves the loop early (a jump past its exit)")
        if name in ("YIELD_VALUE", "RAISE_VARARGS"):
            raise LoopFallback("it leaves the loop early (yield or raise)")
        if name in ("DELETE_FAST", "STORE_DEREF", "DELETE_DEREF", "STORE_GLOBAL"):
            raise LoopFallback(f"{name} inside the loop")
        if name == "STORE_FAST" and body_inst.argval not in stored:
            stored.append(body_inst.argval)
    starts = (exit_at,) if else_at is None else (exit_at, else_at)  # after a break too
    read_outside = {
        name
        for name in stored
        if any(read_after(instructions, start, name, head, span) for start in starts)
    }
    state = frame.state
    carried: list[str] = []
    temporaries: list[str] = []
    for name in stored:
        # Some path through the body reads it before storing it (not the first mention in
        # the code's order: `if c: t = x[i]` then `y[i] = t` reads the last iteration's t).
        if name in read_outside or read_after(instructions, low, name, head, span):
            if not state.has_local(name) and not (entered and name in read_outside):
                raise LoopFallback(f"{name!r} is assigned in the loop and read after it")
            carried.append(name)
        else:
            temporaries.append(name)
    return tuple(carried), tuple(temporaries)


# NOTE: instructions after which execution does not go on to the next one.
_NO_FALL_THROUGH = ("JUMP", "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE")


def read_after(
    instructions: Sequence[Instruction], start: int, name: str, head: int, exit_at: int
) -> bool:
    """Whether some path from instruction `start` reads local `name` before storing it (so
    its value after the loop [head, exit_at) matters). Exception edges count, from code
    outside the loop only: a kept body raises nothing inside a try block (see Frame.step)."""
    seen: set[int] = set()
    pending = [start]
    while pending:
        position = pending.pop()
        if position in seen or not 0 <= position < len(instructions):
            continue
        seen.add(position)
        inst = instructions[position]
        if inst.argval == name and inst.opname in ("LOAD_FAST", "DELETE_FAST"):
            return True
        if inst.handler is not None and not head <= position < exit_at:
            pending.append(inst.handler)
        if inst.argval == name and inst.opname == "STORE_FAST":
            continue
        if inst.target is not None:
            pending.append(inst.target)
        if inst.opname not in _NO_FALL_THROUGH:
            pending.append(position + 1)
    return False


def loaded_names(frame: Frame, low: int, high: int) -> list[str]:
    """The locals instructions [low, high) read, in order."""
    names: list[str] = []
    for position in range(low, high):
        inst = frame.instructions[position]
        if inst.opname == "LOAD_FAST" and inst.argval not in names:
            names.append(inst.argval)
    return names


def read_lazy_locals(frame: Frame, low: int, high: int) -> None:
    """Build the root arguments instructions [low, high) read that are not built yet:
    once, outside the traces of the body those instructions are."""
    state = frame.state
    for name in loaded_names(frame, low, high):
        if name in state.lazy:
            state.read_local(name)
