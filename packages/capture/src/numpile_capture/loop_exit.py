"""`break` and `continue` inside a loop body traced once: where an iteration ends early.

A body is traced to its iteration's end (`stop`: a `for` loop's FOR_ITER, a `while`
loop's bottom test). `continue` is a jump to that end. `break` leaves the loop: a
`for_loop` body returns one more value, a bool that stops the loop when true (the
node's `breaks=True`); a `while_loop` body returns a next test that fails. An `if`
whose block breaks or continues is traced, both ways, to the iteration's end rather
than to its join (the statements after the `if` run only on the way that did not
leave), so every way through the body ends in the same place with the same values.

CPython spells `break` differently per version: 3.11 pops a `for` loop's iterator and
jumps past the loop; 3.12 and 3.13 copy a short exit block (`return s` after the
loop) into the body instead of jumping to it. A break is recognized by both: the
iterator popped then a jump to the loop's exit or a copy of the code there, or (for
`while`) a jump to the exit or a copy of its code. A `return` whose code differs from
what follows the loop, and a break that skips an `else:` clause, are not breaks: the
loop is not kept (`LoopFallback`).

    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         if x[i] > 4:
    ...             break
    ...         s += x[i]
    ...     return s
    >>> print(capture_function(f, (np.ones(3),), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .bytecode import Instruction
from .variables import ConstantVar, Variable

if TYPE_CHECKING:
    from .frame import Frame

# NOTE: the pseudo-local a `for` body's trace keeps its stop flag in: not a valid Python
# name, so no user local collides; branches merge it as they merge locals.
BROKE = ".broke"

# NOTE: the pseudo-locals a `for` body that returns early carries (see loop_return): whether
# it returned, and the value it returned.
RETURNED = ".returned"
RETVAL = ".retval"

# NOTE: the pseudo-local a `for` body whose break skips an `else:` clause carries: whether
# it left by that break (see loop_else).
LEFT = ".left"

# NOTE: the longest exit block CPython copies into a body that is looked for (3.12+ copy
# blocks of a few instructions without a line of their own).
_MAX_EXIT_BLOCK = 8

_RETURNS = ("RETURN_VALUE", "RETURN_CONST")

# NOTE: what may load a returned value between the iterator's POP_TOP and the return.
_RETURN_VALUE_LOADS = ("LOAD_CONST", "LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF")


class LoopFallback(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The loop's body cannot be kept as one body: `reason` says why."""


class Escape(LoopFallback):
    """A block traced to its `if`'s join breaks or continues: trace it to the iteration's end."""


@attrs.define(eq=False)
class LoopExit:
    """The loop whose body is being traced: its iteration's end `stop`, its instructions
    [low, high), the code after it at `exit`, its iterator on the stack (a `for` loop),
    the carried locals and, for a `while` loop, the test's truth that repeats it."""

    stop: int
    low: int
    high: int
    exit: int
    iterator: Variable | None
    carried: tuple[str, ...]
    again_if: bool = True
    after: tuple[tuple[str, Any], ...] = ()
    # A loop that may return early (see loop_return): the returned value's variable from
    # the trace that found one, and whether the trace carries RETURNED / RETVAL.
    returns: ReturnSlot | None = None
    # A `while True:` loop (see forever_loop): no test in the bytecode, its body's end
    # tests True; `depth` is the stack's depth in its body.
    forever: bool = False
    depth: int = 0
    # Where the loop's `else:` clause ends, for a break that skips it (see loop_else).
    else_end: int | None = None
    # Locals first bound in a `while True:` body and read after it, with the variable each
    # starts an iteration as (None: unbound): a break must come after the iteration binds them.
    unbound: dict[str, Variable | None] = attrs.field(factory=dict)

    def is_break(self, frame: Frame) -> bool:
        """Whether the instruction at the frame's pc starts a `break` (`LoopFallback` when it
        leaves the loop otherwise: a `return` of other code, a `for ... else`)."""
        instructions = frame.instructions
        inst = instructions[frame.pc]
        if self.iterator is not None:
            if inst.opname != "POP_TOP" or frame.state.peek() is not self.iterator:
                return False
            if self._continues_after(frame, frame.pc + 1):
                return True
            if self.returns is not None and self._returns_at(frame, frame.pc + 1):
                return True
            raise LoopFallback("it returns from inside the loop (a return other than a break)")
        if inst.opname == "JUMP" and inst.target in exit_targets(instructions, self.exit):
            return True
        return bool(self.after) and self._copies_exit(frame, frame.pc)

    def ends_forever(self, frame: Frame, stop: int) -> bool:
        """Whether a trace of this `while True:` body reached its end at `stop` without a
        test on the stack (not by a break, which pushes a failing one)."""
        return self.forever and stop == self.stop and len(frame.state.stack) == self.depth

    def _continues_after(self, frame: Frame, position: int) -> bool:
        inst = frame.instructions[position]
        if inst.opname == "JUMP" and inst.target in exit_targets(frame.instructions, self.exit):
            return True
        if inst.opname == "JUMP" and self.else_end is not None and inst.target == self.else_end:
            return True
        return bool(self.after) and self._copies_exit(frame, position)

    def _returns_at(self, frame: Frame, position: int) -> bool:
        # After the iterator's POP_TOP: a return, maybe after loads of its value (3.11
        # loads a constant it returns there).
        if self._continues_after(frame, position):
            return False
        for inst in frame.instructions[position : position + _MAX_EXIT_BLOCK]:
            if inst.opname in _RETURNS:
                return True
            if inst.opname not in _RETURN_VALUE_LOADS:
                return False
        return False

    def _copies_exit(self, frame: Frame, position: int) -> bool:
        code = frame.instructions[position : position + len(self.after)]
        return tuple((inst.opname, inst.argval) for inst in code) == self.after

    def take_break(self, frame: Frame) -> None:
        """End the iteration at a break: the stop flag set (`for`) or a failing test pushed
        (`while`); the frame's pc at the iteration's end."""
        if self.iterator is not None:
            if self.returns is not None and self._returns_at(frame, frame.pc + 1):
                self._take_return(frame)
            after = frame.instructions[frame.pc + 1]
            if self.else_end is not None and after.target == self.else_end:
                frame.state.locals[LEFT] = ConstantVar(True)  # the `else:` clause is skipped
            frame.state.locals[BROKE] = ConstantVar(True)
        else:
            for name, start in self.unbound.items():
                if frame.state.locals.get(name) is start:
                    reason = f"{name!r} may be unbound after the loop (a break before it)"
                    raise LoopFallback(reason)
            frame.state.push(ConstantVar(not self.again_if))
        frame.pc = self.stop

    def _take_return(self, frame: Frame) -> None:
        # `return value` inside the body (the iterator popped, then a return): the loop
        # stops, and with RETURNED set the code after it is not run (see loop_return).
        assert self.returns is not None
        state = frame.state
        iterator = state.pop()
        pc = frame.pc + 1
        while frame.instructions[pc].opname not in _RETURNS:
            frame.step(frame.instructions[pc])
            pc += 1
        inst = frame.instructions[pc]
        value = ConstantVar(inst.argval) if inst.opname == "RETURN_CONST" else state.pop()
        state.push(iterator)
        self.returns.found = value
        if self.returns.carried:
            state.locals[RETURNED] = ConstantVar(True)
            state.locals[RETVAL] = value


@attrs.define(eq=False)
class ReturnSlot:
    """What a `for` body that may return early found: the value of a return its trace
    reached (`found`), and whether the trace carries RETURNED and RETVAL."""

    found: Variable | None = None
    carried: bool = False


def exit_targets(instructions: Sequence[Instruction], exit_at: int) -> tuple[int, ...]:
    """Where a break out of the loop whose code after it is at `exit_at` may jump: there,
    or where a jump there goes (3.12+ thread a break through the jump ending an inner
    loop's enclosing body)."""
    inst = instructions[exit_at] if exit_at < len(instructions) else None
    if inst is not None and inst.opname == "JUMP" and inst.target is not None:
        return (exit_at, inst.target)
    return (exit_at,)


def exit_block(frame: Frame, exit_at: int) -> tuple[tuple[str, Any], ...]:
    """The code after a loop up to its return, as (opname, argval) pairs, when short and
    without jumps (the block CPython may copy into the body at a break), else ()."""
    block: list[tuple[str, Any]] = []
    for inst in frame.instructions[exit_at : exit_at + _MAX_EXIT_BLOCK]:
        if inst.target is not None:
            return ()
        block.append((inst.opname, inst.argval))
        if inst.opname in _RETURNS:
            return tuple(block)
    return ()


# NOTE: per frame, the loops whose bodies are being traced, innermost last.
_ACTIVE: weakref.WeakKeyDictionary[Frame, list[LoopExit]] = weakref.WeakKeyDictionary()


def innermost(frame: Frame) -> LoopExit | None:
    """The innermost loop whose body `frame` is tracing, or None."""
    loops = _ACTIVE.get(frame)
    return loops[-1] if loops else None


class tracing_body:  # noqa: N801 - used as a `with` statement, like contextlib's helpers
    """`with tracing_body(frame, loop):` makes `loop` the innermost loop while its body is
    traced."""

    def __init__(self, frame: Frame, loop: LoopExit) -> None:
        self.frame = frame
        self.loop = loop

    def __enter__(self) -> LoopExit:
        _ACTIVE.setdefault(self.frame, []).append(self.loop)
        return self.loop

    def __exit__(self, *exc: object) -> None:
        _ACTIVE[self.frame].pop()
