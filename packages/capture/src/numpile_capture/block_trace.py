"""A block of a kept loop's body (or of a branch in it) traced instruction by instruction.

`run_until` steps the frame from a block's first instruction to its end: one iteration
of a body, one side of an `if`, or the code after a loop up to the frame's return. On
the way, a branch on a run-time value becomes a `cond` (`branch_capture`), a `while` on
one a `while_loop` (`while_capture`), a `while True:` that breaks on one is kept
(`forever_loop`), and `break`, `continue` and `return` end the iteration (`loop_exit`).
Whatever the tracer cannot do there is a `LoopFallback` with the reason.

    >>> is_run_time(ConstantVar(1.0))
    False
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .capture_result import Unsupported
from .forever_loop import keep_forever
from .loop_exit import BodyBreaks, Escape, LoopExit, LoopFallback, innermost
from .variables import ArrayVar, ConstantVar, NotConstantError, ScalarNodeVar, Variable

if TYPE_CHECKING:
    from .frame import Frame

# NOTE: the jumps a branch on a run-time value (a loop body's `if x[i] > 0:`) starts with.
_BRANCHES = ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE")

# NOTE: the `stop` of `run_until` for code traced to the frame's return (no instruction).
TO_RETURN = -1


def run_until(frame: Frame, stop: int, low: int, high: int) -> None:
    """Step `frame` until it reaches instruction `stop`, staying in [low, high): one loop
    iteration or one branch of an `if`. A branch on a run-time value becomes a `cond`;
    a `break` or `continue` ends the iteration (see `loop_exit`), or raises `Escape` in a
    block traced only to its `if`'s join."""
    loop = innermost(frame)
    stepped = False  # whether `frame.current` is an instruction of this block's trace
    while frame.pc != stop:
        if loop is not None and loop.forever and frame.pc == loop.low and frame.pc != low:
            frame.pc = loop.stop  # a `while True:` body's back jump (or `continue`)
            continue
        if loop is not None and loop.retest is not None and _retests(frame, loop, stepped):
            # A `continue` back to a `while` loop's entry test: its bottom copy ends the
            # iteration; a part of that copy known now (`i > 0 or ...` on a probe's
            # known `i`) that jumps back into the body: the test repeats the loop.
            if stop != loop.stop:
                raise Escape("a continue inside an if")
            if frame.pc == loop.retest[0]:
                frame.pc = loop.retest[1]
            else:
                frame.state.push(ConstantVar(loop.again_if))
                frame.pc = stop
            continue
        if frame.pc != low and keep_forever(frame):
            continue  # a `while True:` loop that breaks on run-time values, kept
        if loop is not None and loop.is_break(frame):
            if stop != loop.stop:
                raise Escape("a break inside an if")
            loop.take_break(frame)
            return
        if loop is not None and loop.returns_here(frame):
            if stop != loop.stop:
                raise Escape("a return inside an if")
            loop.take_return(frame)
            return
        if not low <= frame.pc < high:
            if loop is not None and frame.pc == loop.stop:
                raise Escape("a continue inside an if")
            raise LoopFallback("it leaves the loop early (break, continue or return)")
        inst = frame.instructions[frame.pc]
        frame.current = inst
        stepped = True
        frame.pc += 1
        nodes_before = len(frame.tracer.graph.nodes)
        try:
            if inst.opname in _BRANCHES and is_run_time(frame.state.peek()):
                # Late imports: branches and while loops trace their blocks with this function.
                from .branch_capture import capture_branch
                from .short_circuit import fold_condition
                from .while_capture import keep_while, while_shape

                folded = fold_condition(frame, inst, high)
                if folded is not None:
                    inst = folded
                    if frame.pc - 1 == stop:
                        frame.pc = stop  # a while loop's bottom test: its value is the result
                        continue
                shape = while_shape(frame, inst)
                if shape is not None:
                    keep_while(frame, inst, shape)
                else:
                    capture_branch(frame, inst, stop, high)
            else:
                frame.step(inst)
        except LoopFallback:
            raise
        except Unsupported as exc:
            raise BodyBreaks(exc.reason) from None
        except NotConstantError as exc:
            raise LoopFallback(f"it needs the value of {exc} at capture time") from None
        except Exception as exc:
            raise LoopFallback(f"{type(exc).__name__}: {exc}") from None
        frame.locate(nodes_before, inst)
        if frame.result is not None or frame.yielded is not None:
            raise LoopFallback("it leaves the loop early (break or return)")
    if loop is not None and loop.ends_forever(frame, stop):
        frame.state.push(ConstantVar(True))  # a `while True:` body's test: go on


def _retests(frame: Frame, loop: LoopExit, stepped: bool) -> bool:
    # Whether the frame is at the entry test of `loop` (a `continue`), or back at its body
    # from a jump in the bottom copy of that test this trace just took (`stepped`: the
    # frame's current instruction is this trace's; see `LoopExit.retest`).
    assert loop.retest is not None
    if frame.pc == loop.retest[0]:
        return True
    if not stepped or frame.pc != loop.low:
        return False
    return any(inst is frame.current for inst in frame.instructions[loop.retest[1] : loop.stop])


def is_run_time(var: Variable) -> bool:
    """Whether `var`'s value exists only at run time: a run-time scalar or a 0-d array."""
    if isinstance(var, ScalarNodeVar):
        return True
    return isinstance(var, ArrayVar) and var.meta.shape == ()
