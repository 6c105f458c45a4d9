"""Short-circuit conditions on run-time values, folded into one test.

CPython compiles a condition built of `and` / `or` / `not` and chained comparisons to
several conditional jumps, one per operand, each going on to the next operand or to
one of the condition's two exits (the `if` block or the loop body, and the code after
it): `while k < 64 and zr * zr + zi * zi <= 4.0:` is two jumps to the loop's exit, and
on 3.11 the bottom test's last jump goes back to the body instead. A `Condition` is
such a region of jumps, found from the bytecode alone (`find_condition`): blocks of
straight-line expression code (no stores, calls allowed) that end in a conditional or
a forward jump, reached from the first jump, leaving through exactly two places.

When the first operand is a run-time value, `fold_condition` evaluates the whole region
into one value: the truth of "the condition leaves through its jump exit", each later
operand traced inside a `cond` branch so it runs only when eager Python runs it
(`i < n and x[i] > 0` never reads `x[n]`). The frame then stands at one conditional jump
with that value on the stack: the region's last jump when it leads to both exits (then
the `while` / `if` capture reads that instruction as if it had one operand), else a
jump made up for it (chained comparisons end in an unconditional jump).

    >>> def f(x, t):
    ...     n = 0
    ...     for i in range(x.shape[0]):
    ...         k = 0
    ...         while k < 8 and x[i] > t:
    ...             k += 1
    ...         n += k
    ...     return n
    >>> print(capture_function(f, (np.ones(3), 0.5), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from .block_trace import is_run_time
from .branch_capture import Block, emit_cond
from .bytecode import Instruction
from .graph import Graph
from .loop_exit import LoopFallback, return_block
from .meta import ArrayMeta, ScalarMeta
from .operators import truth
from .trace_snapshot import Snapshot
from .variables import ConstantVar, Variable

if TYPE_CHECKING:
    from .frame import Frame

# NOTE: the conditional jumps an operand's test ends with (`is None` tests stay as they are).
BRANCHES = ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE")

# NOTE: instructions an operand's expression may hold: loads, operators, calls, the stack
# shuffles of chained comparisons. No stores: the region changes no local.
_EXPRESSION = frozenset(
    {
        "LOAD_FAST",
        "LOAD_CONST",
        "LOAD_GLOBAL",
        "LOAD_DEREF",
        "LOAD_ATTR",
        "LOAD_METHOD",
        "PUSH_NULL",
        "BINARY_OP",
        "BINARY_SUBSCR",
        "COMPARE_OP",
        "IS_OP",
        "CONTAINS_OP",
        "UNARY_NOT",
        "UNARY_NEGATIVE",
        "UNARY_INVERT",
        "UNARY_POSITIVE",
        "CALL",
        "KW_NAMES",
        "BUILD_TUPLE",
        "COPY",
        "SWAP",
        "POP_TOP",
    }
)

# NOTE: the most blocks a condition region is looked for in (a few per operand).
_MAX_BLOCKS = 32


@attrs.frozen
class Condition:
    """A region of jumps testing one condition: its code is [first, fall); it leaves
    through `fall` (the code right after it) or `jump`; `carrier` is its last conditional
    jump when that one goes to both exits, else None; `blocks` maps each block's start to
    its last instruction (the first block: the jump at `first`).

        >>> Condition(3, 14, 37, 13, {3: 3, 4: 13}).fall
        14
    """

    first: int
    fall: int
    jump: int
    carrier: int | None
    blocks: dict[int, int]
    # Where a chained comparison's early way out pops the operand it kept (see `_cleanups`).
    cleanups: frozenset[int] = frozenset()


def find_condition(instructions: Sequence[Instruction], first: int, limit: int) -> Condition | None:
    """The condition whose first conditional jump is at `first`, its blocks starting before
    `limit`; None when that jump alone is the condition.

    The largest region that is a condition is taken, one whose last jump leads to both its
    exits (the carrier) first: its `if` or `while` is then read at that jump.

    >>> find_condition((), 0, 0) is None
    True
    """
    if first >= len(instructions):
        return None
    blocks: dict[int, int] = {first: first}
    best: Condition | None = None
    carried: Condition | None = None
    while len(blocks) < _MAX_BLOCKS:
        frontier = _frontier(instructions, blocks)
        candidates = sorted(
            {resolve(instructions, position) for position in frontier} - blocks.keys() - {first}
        )
        candidates = [
            position
            for position in candidates
            if first < position < limit and _block_end(instructions, position, limit) is not None
        ]
        if not candidates:
            break
        start = candidates[0]
        end = _block_end(instructions, start, limit)
        assert end is not None
        blocks[start] = end
        found = _as_condition(instructions, first, blocks)
        if found is not None:
            best = found
            if found.carrier is not None:
                carried = found
    return carried if carried is not None else best


def _block_end(instructions: Sequence[Instruction], start: int, limit: int) -> int | None:
    # The last instruction of the expression block at `start` (a conditional jump or a
    # jump), or None when the code there is not a condition's.
    position = start
    if position < len(instructions) and instructions[position].opname == "JUMP":
        return None  # a jump alone leads on to an exit: it is where the region leaves
    while position <= limit and position < len(instructions):
        inst = instructions[position]
        if inst.opname in BRANCHES or inst.opname == "JUMP":
            return position
        if inst.opname not in _EXPRESSION:
            return None
        position += 1
    return None


def resolve(instructions: Sequence[Instruction], position: int) -> int:
    """Where execution goes from `position` through unconditional jumps (a chained
    comparison's way out jumps to the loop's head, where the `if`'s other exit also goes).

    >>> resolve((), 3)
    3
    """
    for _ in range(_MAX_BLOCKS):
        if position >= len(instructions) or instructions[position].opname != "JUMP":
            break
        target = instructions[position].target
        assert target is not None
        position = target
    return position


def way(instructions: Sequence[Instruction], position: int, cleanups: frozenset[int]) -> Any:
    """Where execution goes from `position`, as a key equal for equal ways: through jumps
    and a chained comparison's cleanup, and one key for the copies of a short block that
    returns (3.12+ copy `return i` after a loop to each way that leaves it).

    >>> way((), 3, frozenset())
    3
    """
    position = resolve(instructions, position)
    if position in cleanups:
        position = resolve(instructions, position + 1)
    return return_block(instructions, position) or position


def _cleanups(instructions: Sequence[Instruction], blocks: dict[int, int]) -> frozenset[int]:
    # A chained comparison `a < x < b` copies `x` (COPY) right before its first comparison
    # and keeps it for the second; that comparison's jump goes to a POP_TOP of it.
    found: set[int] = set()
    for end in blocks.values():
        target = instructions[end].target
        kept = end >= 2 and [inst.opname for inst in instructions[end - 2 : end]] == [
            "COPY",
            "COMPARE_OP",
        ]
        if kept and target is not None and instructions[target].opname == "POP_TOP":
            found.add(target)
    return frozenset(found)


def _successors(instructions: Sequence[Instruction], end: int) -> tuple[int, ...]:
    inst = instructions[end]
    assert inst.target is not None
    if inst.opname == "JUMP":
        return (inst.target,)
    return (end + 1, inst.target)


def _frontier(instructions: Sequence[Instruction], blocks: dict[int, int]) -> list[int]:
    # Where the blocks lead outside them; a jump on to a block is inside (a chained
    # comparison's last test jumps over its cleanup to the next operand).
    found: list[int] = []
    for end in blocks.values():
        for position in _successors(instructions, end):
            inside = position in blocks or resolve(instructions, position) in blocks
            if not inside and position not in found:
                found.append(position)
    return found


def _as_condition(
    instructions: Sequence[Instruction], first: int, blocks: dict[int, int]
) -> Condition | None:
    # The region of `blocks` as a condition: two exits (through jumps), at least two
    # operands, and a conditional jump to read the whole test at: one whose two ways lead
    # to the two exits (the carrier), else one made up at the end of one span of code.
    branches = [end for end in blocks.values() if instructions[end].opname in BRANCHES]
    if len(branches) < 2:
        return None
    frontier = _frontier(instructions, blocks)
    cleanups = _cleanups(instructions, blocks)
    exits = list(dict.fromkeys(way(instructions, position, cleanups) for position in frontier))
    if len(exits) != 2:
        return None
    last = max(branches)
    target = instructions[last].target
    assert target is not None
    ways = {way(instructions, last + 1, cleanups), way(instructions, target, cleanups)}
    if ways == set(exits):
        return Condition(first, last + 1, target, last, dict(blocks), cleanups)
    fall = max(blocks.values()) + 1
    covered: set[int] = set()
    for start, end in blocks.items():
        covered.update(range(start, end + 1))
    if covered != set(range(first, fall)) or fall not in frontier:
        return None
    other = exits[0] if exits[1] == way(instructions, fall, cleanups) else exits[1]
    forward = [p for p in frontier if p > fall and way(instructions, p, cleanups) == other]
    if not forward:
        return None  # the other way goes back (to a loop's head): no jump can stand for it
    return Condition(first, fall, min(forward), None, dict(blocks), cleanups)


def fold_condition(frame: Frame, inst: Instruction, limit: int) -> Instruction | None:
    """Evaluate the condition whose first jump is `inst` (stepped past, its run-time value
    on the stack) into one value; None (the frame untouched) when `inst` is the whole
    condition. Else the frame's pc is just past the returned conditional jump (the
    region's own last jump, or one made up for it) and its value is on the stack.

    Raises `LoopFallback` when a way through the region cannot be traced.
    """
    first = frame.pc - 1
    condition = find_condition(frame.instructions, first, limit)
    if condition is None:
        return None
    state = frame.state
    for start, end in condition.blocks.items():
        for position in range(start, end):
            name = frame.instructions[position].argval
            if frame.instructions[position].opname == "LOAD_FAST" and name in state.lazy:
                state.read_local(name)  # a root argument: built once, outside the branches
    carrier = condition.carrier
    # The value is the truth that the carrier's jump is taken.
    polarity = carrier is None or frame.instructions[carrier].opname == "POP_JUMP_IF_TRUE"
    fold = _Fold(condition, polarity)
    value = fold.decide(frame, first)
    frame.state.push(value)
    if carrier is not None:
        frame.pc = carrier + 1
        return frame.instructions[carrier]
    frame.pc = condition.fall
    return attrs.evolve(inst, opname="POP_JUMP_IF_TRUE", target=condition.jump)


@attrs.define
class _Fold:
    # One evaluation of a condition: the value is the truth of "it leaves through its jump
    # exit" == polarity; every way out leaves the stack `depth` deep (chained comparisons
    # pop the operand they kept on the way that fails early).
    condition: Condition
    polarity: bool
    depth: int | None = None

    def value_from(self, frame: Frame, position: int) -> Variable:
        condition = self.condition
        if resolve(frame.instructions, position) in condition.blocks:
            position = resolve(frame.instructions, position)  # a jump on to the next operand
        if position not in condition.blocks:
            if position in condition.cleanups:
                frame.state.pop()  # the operand a chained comparison kept
            depth = len(frame.state.stack)
            if self.depth is None:
                self.depth = depth
            elif depth != self.depth:
                raise LoopFallback("the ways through a condition leave different stacks")
            instructions, cleanups = frame.instructions, condition.cleanups
            jumps = way(instructions, position, cleanups) == way(
                instructions, condition.jump, cleanups
            )
            return ConstantVar(jumps == self.polarity)
        end = condition.blocks[position]
        frame.pc = position
        while frame.pc != end:
            inst = frame.instructions[frame.pc]
            frame.current = inst
            frame.pc += 1
            nodes_before = len(frame.tracer.graph.nodes)
            frame.step(inst)
            frame.locate(nodes_before, inst)
        return self.decide(frame, end)

    def decide(self, frame: Frame, end: int) -> Variable:
        # The block's last instruction at `end`: follow a known way, or a `cond` of both.
        inst = frame.instructions[end]
        frame.current = inst
        assert inst.target is not None
        if inst.opname == "JUMP":
            return self.value_from(frame, inst.target)
        test = frame.state.pop()
        taken_if = inst.opname == "POP_JUMP_IF_TRUE"
        if not is_run_time(test):
            taken = truth(frame.tracer, test) == taken_if
            return self.value_from(frame, inst.target if taken else end + 1)
        blocks = self.condition.blocks
        instructions = frame.instructions
        # NOTE: resolved, as `value_from` goes: a chained comparison's last test falls
        # through to a jump on to the next operand, which is no exit.
        onward = {resolve(instructions, inst.target), resolve(instructions, end + 1)}
        if not onward & blocks.keys() and _is_bool(test):
            # The last operand: its own truth, when that is the value (no `cond` needed).
            cleanups = self.condition.cleanups
            target_way = way(instructions, inst.target, cleanups)
            jump_way = way(instructions, self.condition.jump, cleanups)
            gives = (target_way == jump_way) == self.polarity
            if gives == taken_if and self.value_from(frame, end + 1) is not None:
                return test
        taken_way = self.trace_way(frame, inst.target)
        other_way = self.trace_way(frame, end + 1)
        then_block, else_block = (taken_way, other_way) if taken_if else (other_way, taken_way)
        assert self.depth is not None
        del frame.state.stack[self.depth :]  # what is left of the operands: both ways pop it
        emit_cond(frame, test, then_block, else_block, (end + 1, end + 1))
        return frame.state.pop()

    def trace_way(self, frame: Frame, position: int) -> Block:
        # One way out of a run-time jump, traced into a graph of its own; the frame restored.
        tracer = frame.tracer
        saved = Snapshot.take(frame)
        outer = tracer.graph
        graph = Graph()
        tracer.graph = graph
        try:
            value = self.value_from(frame, position)
            block = Block(graph, dict(frame.state.locals), [*frame.state.stack, value])
        finally:
            tracer.graph = outer
            saved.restore(frame)
        return block


def _is_bool(value: Variable) -> bool:
    meta = getattr(getattr(value, "node", None), "meta", None)
    if isinstance(meta, ScalarMeta):
        return meta.type is bool
    return isinstance(meta, ArrayMeta) and meta.dtype == np.dtype(bool)
