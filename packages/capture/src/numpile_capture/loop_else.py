"""`for ... else` with a `break`: the `else:` clause runs only when the loop did not break.

On 3.11 a break that skips the clause pops the iterator and jumps past it (to the
clause's end); the loop is still one `for_loop` node. Its body carries one more value,
whether it left by such a break (LEFT, starting False; set where the break is taken,
see `loop_exit`). After the node, the clause is traced into the else branch of a `cond`
on LEFT whose then branch leaves everything as the loop did; the frame continues at the
clause's end. (3.12 and 3.13 copy the code after the clause into the break instead:
there the break is a return of that code, see `loop_return`.)

    >>> def first_big(x):
    ...     k = -1
    ...     for i in range(x.shape[0]):
    ...         if x[i] > 1.0:
    ...             k = i
    ...             break
    ...     else:
    ...         k = -7
    ...     return k
    >>> print(capture_function(first_big, (np.ones(3),), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .branch_capture import Block, emit_cond, trace_block
from .bytecode import Instruction
from .graph import Graph
from .loop_exit import LEFT, LoopExit
from .meta import ArrayMeta, ScalarMeta
from .variables import ConstantVar

if TYPE_CHECKING:
    from .frame import Frame


def else_end(instructions: Sequence[Instruction], head: int, exit_at: int) -> int | None:
    """Where the `else:` clause of the loop [head, exit_at) ends, when the loop has one
    that a break skips (every jump out of the body past the loop goes there), else None."""
    targets = {
        inst.target
        for inst in instructions[head + 1 : exit_at]
        if inst.opname == "JUMP" and inst.target is not None and inst.target > exit_at
    }
    if len(targets) != 1:
        return None
    (end,) = targets
    clause = instructions[exit_at:end]
    if not clause or any(
        inst.target is not None and not exit_at <= inst.target <= end for inst in clause
    ):
        return None  # not a clause that falls through to its end
    if any(inst.opname in ("RETURN_VALUE", "RETURN_CONST", "FOR_ITER") for inst in clause):
        return None
    return end


def carry_left(
    frame: Frame, loop: LoopExit, metas: dict[str, ArrayMeta | ScalarMeta], scalars: set[str]
) -> None:
    """Make the body's traces carry LEFT (a local bound before the loop, False)."""
    frame.state.locals[LEFT] = ConstantVar(False)
    metas[LEFT] = ScalarMeta(bool)
    scalars.add(LEFT)
    loop.carried = (*loop.carried, LEFT)


def run_else_clause(frame: Frame, start: int, end: int) -> None:
    """The frame stands after a kept loop whose break skips its `else:` clause [start,
    end): run the clause in a `cond` on LEFT (`LoopFallback` when it cannot)."""
    state = frame.state
    left = state.locals[LEFT]
    stay = Block(Graph(), dict(state.locals), list(state.stack))
    clause = trace_block(frame, start, end)
    emit_cond(frame, left, stay, clause, (start, end))
    frame.pc = end
