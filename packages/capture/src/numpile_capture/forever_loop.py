"""`while True:` loops that break on run-time values, kept as one `while_loop` node.

CPython compiles `while True:` with no test at all: the body, then a jump back to its
first instruction. A break leaves it by a jump past that jump (3.11), or, on 3.12 and
3.13, by a copy of the code after the loop when that is a short block ending in a
return (then the loop has no code after it in the bytecode: the copies are its exit),
or, as the last statement of an enclosing loop's body, by that loop's jump back, which
3.12+ place inside this loop's code (its place is then this loop's exit).
The loop is found at its first instruction, and kept where it would otherwise be
unrolled into a graph break: when a probe trace of its body on the values known now
ends with a run-time test (a break taken on a run-time value, `if err < tol: break`).
It is then a `while_loop` entered on True whose body's end tests True and whose breaks
test False (see `loop_exit`); loops that break only on values known now run unrolled,
as before.

    >>> def converge(x):
    ...     while True:
    ...         y = 0.5 * (x + 2.0 / x)
    ...         if abs(y - x) < 1e-12:
    ...             break
    ...         x = y
    ...     return y
    >>> print(capture_function(converge, (np.float64(1.0),), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .bytecode import Instruction
from .capture_events import LoopNotKept, record_loop_not_kept
from .loop_exit import LoopFallback, NestedReturn, exit_block
from .variables import ConstantVar

if TYPE_CHECKING:
    from .frame import Frame
    from .while_capture import WhileShape

_CONDITIONAL = ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE")
_RETURNS = ("RETURN_VALUE", "RETURN_CONST")

# NOTE: per code object, where its `while True:` loops start and their shapes (None: not
# one), computed once.
_SHAPES: weakref.WeakKeyDictionary[object, dict[int, WhileShape]] = weakref.WeakKeyDictionary()

# NOTE: per frame, the heads of `while True:` loops already tried and not kept (unrolled:
# their head is reached again each iteration).
_TRIED: weakref.WeakKeyDictionary[Frame, set[int]] = weakref.WeakKeyDictionary()


def keep_forever(frame: Frame) -> bool:
    """At the head of a `while True:` loop that breaks on run-time values, capture it as
    one `while_loop` node (the frame continues after it) and return True; else False."""
    tracer = frame.tracer
    if not tracer.keep_loops:
        return False
    shape = _shapes(frame).get(frame.pc)
    if shape is None or frame.pc in _TRIED.get(frame, ()):
        return False
    # Late import: while_capture imports block_trace, which calls this module.
    from .while_capture import keep_while, tests_at_run_time

    head = frame.instructions[frame.pc]
    frame.state.push(ConstantVar(True))
    try:
        if not tests_at_run_time(frame, shape):
            frame.state.pop()
            _TRIED.setdefault(frame, set()).add(frame.pc)
            return False  # it breaks on values known now: it runs now, unrolled
        keep_while(frame, head, shape)
    except NestedReturn:
        frame.state.pop()
        raise  # the enclosing kept loop traces its body again (see loop_return)
    except LoopFallback as exc:
        frame.state.pop()
        _TRIED.setdefault(frame, set()).add(frame.pc)
        # Late import: loop_capture's log, as for the loops it does not keep (loop_capture
        # imports block_trace, which calls this module).
        from .loop_capture import log

        reason = f"loop not kept as a loop: {exc}"
        log.info("%s (%s:%s)", reason, frame.code.co_filename, head.lineno)
        record_loop_not_kept(LoopNotKept(reason, frame.code.co_filename, head.lineno))
        return False
    return True


def forever_heads(frame: Frame) -> dict[int, WhileShape]:
    """Where the `while True:` loops of `frame`'s code start, with their shapes."""
    return _shapes(frame)


def _shapes(frame: Frame) -> dict[int, WhileShape]:
    code = frame.code
    shapes = _SHAPES.get(code)
    if shapes is None:
        shapes = {}
        for back, inst in enumerate(frame.instructions):
            head = inst.target
            if inst.opname == "JUMP" and head is not None and head < back:
                shape = _forever_shape(frame, frame.instructions, head, back)
                if shape is not None:
                    shapes[head] = shape
        _SHAPES[code] = shapes
    return shapes


def _forever_shape(
    frame: Frame, instructions: Sequence[Instruction], head: int, back: int
) -> WhileShape | None:
    # The `while True:` loop [head, back] (back: its jump back), or None when the jump
    # closes a `for` or a `while` with a test, or the loop has no break.
    from .while_capture import WhileShape  # late import, as above

    if instructions[head].opname == "FOR_ITER" or head == 0:
        return None
    before = instructions[head - 1]
    if before.opname in _CONDITIONAL or before.opname == "FOR_ITER":
        return None  # a while loop's entry test, or a for loop's body
    bottom = instructions[back - 1]
    if bottom.opname in _CONDITIONAL and bottom.target == back + 1:
        return None  # a while loop's bottom test (3.12+)
    body = instructions[head:back]
    leaving = {inst.target for inst in body if inst.target is not None and inst.target > back}
    if len(leaving) == 1:
        (exit_at,) = leaving
        return WhileShape(head, back, exit_at, True, forever=True)
    if leaving:
        return None
    # 3.12+ inside a loop body that ends with this loop: a break is the enclosing loop's own
    # jump back, placed inside this one (`if a or b: break` jumps there): its place is the
    # exit, and a jump to the same head from elsewhere in the body is a break too.
    threaded = [
        position
        for position in range(head + 1, back)
        if instructions[position].opname == "JUMP" and _before(instructions[position], head)
    ]
    if threaded and len({instructions[position].target for position in threaded}) == 1:
        return WhileShape(head, back, threaded[0], True, forever=True)
    copies = [
        position
        for position in range(head + 1, back)
        if instructions[position - 1].opname in _CONDITIONAL and exit_block(frame, position)
    ]
    blocks = {exit_block(frame, position) for position in copies}
    if len(blocks) == 1:
        return WhileShape(head, back, copies[0], True, forever=True)
    if any(inst.opname in _RETURNS for inst in body):
        # No break, or returns of different code: it leaves by its returns only (see
        # loop_return; a break that is a copy of a return is that return), never to the
        # code after it.
        return WhileShape(head, back, back + 1, True, forever=True, exits=False)
    return None


def _before(inst: Instruction, head: int) -> bool:
    return inst.target is not None and inst.target < head
