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
what follows the loop ends the iteration at its RETURN as a break does, recording the
value (see `loop_return`); a break that skips an `else:` clause sets LEFT (`loop_else`).

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
from .own_entries import OwnEntries
from .variables import ConstantVar, Variable

if TYPE_CHECKING:
    from .frame import Frame

# NOTE: the pseudo-local a `for` body's trace keeps its stop flag in: not a valid Python
# name, so no user local collides; branches merge it as they merge locals.
BROKE = ".broke"

# NOTE: the pseudo-locals a body that returns early carries (see loop_return): whether it
# returned, and the value it returned (one pseudo-local per leaf of a tuple: RETVAL + "0" ...).
RETURNED = ".returned"
RETVAL = ".retval"

# NOTE: the pseudo-local a `for` body whose break skips an `else:` clause carries: whether
# it left by that break (see loop_else).
LEFT = ".left"

# NOTE: the longest exit block CPython copies into a body that is looked for (3.12+ copy
# blocks of a few instructions without a line of their own).
_MAX_EXIT_BLOCK = 8

_RETURNS = ("RETURN_VALUE", "RETURN_CONST")

# NOTE: the longest code computing a returned value in a body that is looked for.
_MAX_RETURN_BLOCK = 32

# NOTE: what the code computing a returned value in a body does not hold (besides jumps,
# stores and deletes); it may pop loops' iterators (POP_TOP, after SWAPs on 3.11).
_NOT_IN_RETURN = ("FOR_ITER", "GET_ITER", "YIELD_VALUE", "RAISE_VARARGS")


class LoopFallback(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The loop's body cannot be kept as one body: `reason` says why."""


class BodyBreaks(LoopFallback):
    """The body has a graph break: unrolled, the loop would break in its first iteration and
    run the rest in Python all the same, so a symbolic trip count is not pinned to unroll it."""


class NestedReturn(LoopFallback):
    """A loop nested in a kept body found a `return`: the enclosing loops carry the
    returned values and trace their bodies again (see `ReturnSlot.parent`); never a
    reason to unroll the nested loop."""


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
    # The stack as an iteration starts (and ends).
    base: list[Variable] = attrs.field(factory=list)
    # Carried locals an inner loop of the body kept with its own types (see loop_entry):
    # right only where that inner loop ran.
    typed_if_ran: set[str] = attrs.field(factory=set)
    # Results of inner loops that may be the Python scalars the iteration gave them, and the
    # inner loops not to keep (see own_entries): shared by the loop's traces.
    own_entries: OwnEntries = attrs.field(factory=OwnEntries)
    # A `while` loop's entry test and the same test at its bottom (see
    # `while_capture.retest_points`): a `continue` jumps to the first, traced as the second.
    retest: tuple[int, int] | None = None

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
            if self.returns is not None and return_follows(frame, frame.pc + 1):
                return False  # a return: taken at its RETURN (see take_return)
            raise LoopFallback("it returns from inside the loop (a return other than a break)")
        if inst.opname == "JUMP" and inst.target in exit_targets(instructions, self.exit):
            return True
        if inst.opname == "JUMP" and self.else_end is not None and inst.target == self.else_end:
            return True  # a break that skips the `while ... else:` clause
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

    def _copies_exit(self, frame: Frame, position: int) -> bool:
        code = frame.instructions[position : position + len(self.after)]
        return tuple((inst.opname, inst.argval) for inst in code) == self.after

    def take_break(self, frame: Frame) -> None:
        """End the iteration at a break: the stop flag set (`for`) or a failing test pushed
        (`while`); the frame's pc at the iteration's end."""
        if self.iterator is not None:
            after = frame.instructions[frame.pc + 1]
            if self.else_end is not None and after.target == self.else_end:
                frame.state.locals[LEFT] = ConstantVar(True)  # the `else:` clause is skipped
            frame.state.locals[BROKE] = ConstantVar(True)
        else:
            inst = frame.instructions[frame.pc]
            if self.else_end is not None and inst.target == self.else_end:
                frame.state.locals[LEFT] = ConstantVar(True)  # the `else:` clause is skipped
            for name, start in self.unbound.items():
                if frame.state.locals.get(name) is start:
                    reason = f"{name!r} may be unbound after the loop (a break before it)"
                    raise LoopFallback(reason)
            frame.state.push(ConstantVar(not self.again_if))
        frame.pc = self.stop

    def returns_here(self, frame: Frame) -> bool:
        """Whether the frame stands at a `return` of this body, which may return."""
        inst = frame.instructions[frame.pc]
        return self.returns is not None and inst.opname in _RETURNS

    def take_return(self, frame: Frame) -> None:
        """End the iteration at a `return` in the body: the value recorded (see
        loop_return), the stop flag set (`for`) or a failing test pushed (`while`), the
        frame's pc at the iteration's end, its stack as the iteration started (CPython pops
        every loop's iterator before a return)."""
        assert self.returns is not None
        inst = frame.instructions[frame.pc]
        value = ConstantVar(inst.argval) if inst.opname == "RETURN_CONST" else frame.state.pop()
        frame.state.stack[:] = self.base  # the loops' iterators CPython popped before it
        self.returns.record(frame, value)
        if self.iterator is not None:
            frame.state.locals[BROKE] = ConstantVar(True)
        else:
            frame.state.push(ConstantVar(not self.again_if))
        frame.pc = self.stop


@attrs.define(eq=False)
class ReturnSlot:
    """What a body that may return early found: the value of a return its trace reached
    (`found`), and whether the trace carries RETURNED and the RETVAL leaves (`names`, the
    value's tuple structure `spec`). A loop nested in a body that may return has the
    enclosing loop's slot as `parent`: its return leaves both loops (see loop_return)."""

    found: Variable | None = None
    carried: bool = False
    parent: ReturnSlot | None = None
    names: tuple[str, ...] = ()
    spec: Any = None

    def record(self, frame: Frame, value: Variable) -> None:
        """A return of `value` taken in the trace: RETURNED and the leaves set when carried."""
        if self.found is None:
            self.found = value
        if not self.carried:
            return
        # Late import: loop_return imports carried_values, which imports this module.
        from .loop_return import flatten_value

        leaves, spec = flatten_value(value)
        if spec != self.spec:
            raise LoopFallback("it returns values of different structures from inside the loop")
        frame.state.locals[RETURNED] = ConstantVar(True)
        for name, leaf in zip(self.names, leaves, strict=True):
            frame.state.locals[name] = leaf


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
    return return_block(frame.instructions, exit_at)


def return_block(instructions: Sequence[Instruction], position: int) -> tuple[tuple[str, Any], ...]:
    """The code from `position` up to a return, as (opname, argval) pairs, when short and
    without jumps (a block CPython 3.12+ may copy to each place that goes there), else ().

        >>> return_block((), 0)
        ()
    """
    block: list[tuple[str, Any]] = []
    for inst in instructions[position : position + _MAX_EXIT_BLOCK]:
        if inst.target is not None:
            return ()
        block.append((inst.opname, inst.argval))
        if inst.opname in _RETURNS:
            return tuple(block)
    return ()


# NOTE: per frame, the loops whose bodies are being traced, innermost last.
_ACTIVE: weakref.WeakKeyDictionary[Frame, list[LoopExit]] = weakref.WeakKeyDictionary()


def return_follows(frame: Frame, position: int) -> bool:
    """Whether straight code from `position` (no jump, store or delete) reaches a return."""
    for inst in frame.instructions[position : position + _MAX_RETURN_BLOCK]:
        if inst.opname in _RETURNS:
            return True
        if inst.target is not None or inst.opname in _NOT_IN_RETURN:
            return False
        if inst.opname.startswith(("STORE_", "DELETE_")):
            return False
    return False


def active_loops(frame: Frame) -> list[LoopExit]:
    """The kept loops whose bodies `frame` is tracing, outermost first."""
    return list(_ACTIVE.get(frame, ()))


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
