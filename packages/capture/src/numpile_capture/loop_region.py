"""A `for` or `while` loop run whole in plain Python, its exits continuing in compiled code.

A loop that capture does not keep because its body breaks, and whose body saves too little
work compiled to pay for its pieces' calls (`body_work`), breaks the graph at its `FOR_ITER`
(or a `while` loop's entry test) with `LoopInPython`: the break function is then not that
instruction alone but the whole loop (`LoopRegion`), copied from the function's own
bytecode. Each place where execution leaves the loop (the iterator exhausted, the test
failing, a `break`, a jump past an `else:` clause) returns
the `TailCall` of a compiled resume function there, as a break function's continuations
do; a `return` inside the loop returns, and an exception propagates from the user's line.
So every iteration runs as CPython runs it, with nothing compiled per iteration and
nothing captured again at another trip count, and the code after the loop is compiled
once.

The code is a copy of the whole function (as a resume function's is) entered at the
`FOR_ITER` with the loop's iterator and the live locals, with the jumps out of the loop
redirected to the exits: code outside the loop that the copy can still reach (an
exception handler around the loop) runs in Python as it would have.

    >>> def f(n):
    ...     s = 0
    ...     for i in range(n):
    ...         s += i
    ...     return s
    >>> from numpile_capture.bytecode import normalized_instructions
    >>> index = [i.opname for i in normalized_instructions(f.__code__)].index("FOR_ITER")
    >>> site = BreakSite.at(f.__code__, index, (False,))
    >>> region = LoopRegion.at(site, ("s",), lambda offset: {"s"})
    >>> [exit.local_names for exit in region.exits]
    [('s',)]
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import bytecode as bc

from .body_work import pays_for_pieces
from .bytecode import normalized_instructions
from .capture_result import Unsupported

# The toolkit resume functions are built with (one bytecode library, private to capture).
from .resume_code import (
    _PY312,
    _PY313,
    BreakSite,
    Continuation,
    _call_resume,
    _configure,
    _is_jump,
    _line_of,
    _push_stack,
    _raw_pairs,
    _strip_locations,
    stack_names,
)


class LoopInPython(Unsupported):
    """A loop not kept whose body saves too little work compiled to pay for its pieces: the
    graph breaks at its head and the whole loop runs in Python (`LoopRegion`)."""


def in_python(reason: str, filename: str | None, lineno: int | None) -> LoopInPython:
    """The break at the head of a loop not kept for `reason` that runs whole in Python."""
    text = (
        f"{reason}; compiling its body would save less than its pieces' calls cost, so the "
        "whole loop runs in Python"
    )
    return LoopInPython(text, filename, lineno)


@attrs.define
class SmallBodies:
    """Per root frame: the loops not kept because their body breaks, whose body traced up to
    the break saves too little work compiled to pay for its pieces (`body_work`), while
    they are unrolled.

    A body that could not be traced with a symbolic index may unroll all the same (`xs[i]`
    on a list): only a break that happens in such a loop's unrolled body, with still too
    little saved work traced since, sends the whole loop to Python (`enclosing`).

        >>> bodies = SmallBodies()
        >>> bodies.note(4, 20, "why", 0)
        >>> bodies.enclosing(9, 10), bodies.enclosing(9, 10**6), bodies.enclosing(25, 10)
        ((4, 'why'), None, None)
    """

    _loops: dict[int, tuple[int, str, int, bool]] = attrs.field(factory=dict)

    def note(
        self, head: int, exit_at: int, reason: str, work: int, *, names_break: bool = False
    ) -> None:
        """The loop [head, exit_at) of normalized instructions is unrolled from now, when
        `Tracer.array_work` is `work`; `names_break` appends the break's own reason to
        `reason` (a `while` loop, whose body was not traced up to its break before)."""
        self._loops[head] = (exit_at, reason, work, names_break)

    def enclosing(
        self, index: int, work: int, breaks: Unsupported | None = None
    ) -> tuple[int, str] | None:
        """The head and reason of the outermost noted loop whose body holds instruction
        `index`, if the array work traced since it was noted does not pay for compiled pieces
        (`work` is `Tracer.array_work` now; `breaks` is the break there)."""
        for head in sorted(self._loops):
            exit_at, reason, noted, names_break = self._loops[head]
            if head < index < exit_at and not pays_for_pieces(work - noted):
                if names_break and breaks is not None:
                    reason = f"{reason} (line {breaks.lineno}: {breaks.reason})"
                return head, reason
        return None


@attrs.frozen
class RegionExit:
    """Where execution leaves a loop run in Python: the continuation (raw offset and stack
    layout) and the locals its resume function takes; `exhausted` marks the `FOR_ITER`'s
    own exit (3.12+ land on the `END_FOR` it skips)."""

    continuation: Continuation
    local_names: tuple[str, ...]
    exhausted: bool = False


@attrs.frozen
class LoopRegion:
    """The loop whose `FOR_ITER` or `while` entry test `site` breaks at, run whole in Python.

    `start` and `end` are the raw offsets of that instruction and of the loop's last
    instruction (the last jump back to the `FOR_ITER`, or to the `while` body);
    `local_names` are the live locals the region's code takes after the stack values, as
    the break function's would.
    """

    site: BreakSite
    local_names: tuple[str, ...]
    start: int
    end: int
    exits: tuple[RegionExit, ...]

    @classmethod
    def at(
        cls,
        site: BreakSite,
        local_names: Sequence[str],
        live_at: Callable[[int], set[str]],
    ) -> LoopRegion:
        """The loop at `site` (a break at a `FOR_ITER` or a `while` entry test) given its
        live locals; `live_at(i)` is the set of locals live at normalized instruction `i`.
        Raises `Unsupported` where the loop cannot run as a region (the caller then breaks
        at that instruction alone)."""
        return _plan_region(site, tuple(local_names), live_at)

    def code(self, resumes: Sequence[Callable[..., Any]]) -> types.CodeType:
        """The region's code, each exit returning the TailCall of `resumes[k]` (one per exit,
        in the order of `exits`). Parameters: the stack values, then `local_names`."""
        return _region_code(self, resumes)


def _plan_region(
    site: BreakSite, local_names: tuple[str, ...], live_at: Callable[[int], set[str]]
) -> LoopRegion:
    code = site.code
    if site.jump is None or site.fallthrough is None or not is_loop_head(site):
        raise Unsupported(
            "not supported yet: running a loop in Python (not a FOR_ITER or a while test)"
        )
    if code.co_cellvars:
        raise Unsupported("not supported yet: running a loop in Python in a frame with cells")
    pairs = _raw_pairs(code)
    start = normalized_instructions(code)[site.index].offset
    iterates = _iterates(site)
    # A `for` loop jumps back to its FOR_ITER; a `while` loop to the body after its test.
    head = start if iterates else site.fallthrough.offset
    ends = [raw.offset for raw, _ in pairs if _is_jump(raw) and raw.argval == head]
    if not ends or max(ends) < start:
        raise Unsupported("not supported yet: running a loop in Python (no jump back)")
    end = max(ends)
    # A `continue` in a while loop may jump back to the code computing the test, before it.
    first = start if iterates else _test_code_start(pairs, start)
    depths = _depths(pairs, start, end, len(site.nulls), iterates=iterates, first=first)
    region = [raw for raw, _ in pairs if start <= raw.offset <= end]
    stored = {name for raw in region if raw.opname in _STORES for name in _names(raw)}
    deleted = {name for raw in region if raw.opname in _DELETES for name in _names(raw)}
    # A `while` loop's test leaves it as a jump out (found below) with the test popped.
    exits = [RegionExit(site.jump, (), exhausted=True)] if iterates else []
    for target, depth in _outside_targets(first, end, depths):
        if depth >= len(site.nulls):
            raise Unsupported("not supported yet: running a loop in Python (a deep exit)")
        exits.append(RegionExit(Continuation(target, site.nulls[:depth]), ()))
    known = set(local_names)
    made = [name for name in code.co_varnames if name in stored and name not in known]
    planned = []
    for exit_ in exits:
        live = live_at(_normalized_index(code, exit_.continuation.offset))
        unsure = sorted(live & (deleted | (stored - known)))
        if unsure:
            raise Unsupported(
                f"not supported yet: running a loop in Python that may leave {unsure[0]!r} "
                "unbound, read after it"
            )
        names = tuple(name for name in (*local_names, *made) if name in live)
        planned.append(attrs.evolve(exit_, local_names=names))
    return LoopRegion(site, local_names, start, end, tuple(planned))


def is_loop_head(site: BreakSite) -> bool:
    """Whether `site` is where a loop can run whole in Python from: a `FOR_ITER`, or the
    entry test of a `while` loop (a conditional jump; `_plan_region` checks its jump back)."""
    return _iterates(site) or site.group[-1].name in _WHILE_TESTS


def _iterates(site: BreakSite) -> bool:
    return bool(site.group[-1].name == "FOR_ITER")


# The raw names of a while loop's entry test jump (3.11 spells the direction).
_WHILE_TESTS = frozenset(
    {
        "POP_JUMP_IF_FALSE",
        "POP_JUMP_IF_TRUE",
        "POP_JUMP_FORWARD_IF_FALSE",
        "POP_JUMP_FORWARD_IF_TRUE",
    }
)


def _names(raw: dis.Instruction) -> tuple[str, ...]:
    # The locals an instruction names (3.13's STORE_FAST_STORE_FAST names two).
    value = raw.argval
    return tuple(value) if isinstance(value, tuple) else (str(value),)


_STORES = frozenset({"STORE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"})
_DELETES = frozenset({"DELETE_FAST"})
_UNCONDITIONAL = frozenset(
    {
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "RETURN_VALUE",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "RERAISE",
    }
)


def _depths(
    pairs: list[tuple[dis.Instruction, Any]],
    start: int,
    end: int,
    depth: int,
    *,
    iterates: bool,
    first: int,
) -> dict[int, int]:
    # The stack depth before each instruction of the region reached from its head (a
    # FOR_ITER with the iterator on it, or a while test with its value) along normal control
    # flow; the region's code spans [first, end], where `first` may be the code computing a
    # while loop's test, before its head.
    by_offset = {raw.offset: raw for raw, _ in pairs}
    following = {
        raw.offset: (pairs[k + 1][0].offset if k + 1 < len(pairs) else None)
        for k, (raw, _) in enumerate(pairs)
    }
    depths: dict[int, int] = {start: depth}
    todo = [start]
    while todo:
        offset = todo.pop()
        raw = by_offset[offset]
        here = depths[offset]
        edges: list[tuple[int | None, bool]] = []
        if raw.opname not in _UNCONDITIONAL:
            edges.append((following[offset], False))
        if _is_jump(raw) and (offset != start or not iterates):
            edges.append((int(raw.argval), True))  # the head's own exit is the site's `jump`
        for target, jump in edges:
            if target is None:
                continue
            try:
                after = here + dis.stack_effect(raw.opcode, raw.arg, jump=jump)
            except ValueError:
                raise Unsupported(f"not supported yet: running {raw.opname} in Python") from None
            if target in depths:
                if depths[target] != after:
                    raise Unsupported("not supported yet: running a loop in Python (stack)")
                continue
            depths[target] = after
            if first <= target <= end:
                todo.append(target)
    return depths


def _test_code_start(pairs: list[tuple[dis.Instruction, Any]], start: int) -> int:
    # Where the straight-line code that ends at a while loop's test jump `start` begins.
    offsets = [raw.offset for raw, _ in pairs]
    at = offsets.index(start)
    while at > 0:
        before = pairs[at - 1][0]
        if _is_jump(before) or before.opname in _UNCONDITIONAL or before.opname == "RESUME":
            break
        at -= 1
    return offsets[at]


def _outside_targets(start: int, end: int, depths: dict[int, int]) -> list[tuple[int, int]]:
    # Raw offsets outside the region that its instructions jump or fall through to, in
    # order, with the stack depth there.
    return [
        (offset, depth) for offset, depth in sorted(depths.items()) if not start <= offset <= end
    ]


def _normalized_index(code: types.CodeType, offset: int) -> int:
    for index, inst in enumerate(normalized_instructions(code)):
        if inst.offset >= offset:
            return index
    raise Unsupported("not supported yet: running a loop in Python (an exit past the end)")


def _region_code(region: LoopRegion, resumes: Sequence[Callable[..., Any]]) -> types.CodeType:
    site = region.site
    original = site.code
    program = bc.Bytecode.from_code(original, conserve_exception_block_stackdepth=True)
    pairs = _raw_pairs(original)
    exit_labels = {
        exit_.continuation.offset: bc.Label() for exit_ in region.exits if not exit_.exhausted
    }
    done = bc.Label()
    entry = bc.Label()
    label_offsets = _label_offsets(program, pairs)
    items: list[Any] = []
    count = 0
    for item in program:
        if not isinstance(item, bc.Instr):
            items.append(item)
            continue
        offset = pairs[count][0].offset
        count += 1
        if offset == region.start:
            items.append(entry)
        if not region.start <= offset <= region.end:
            items.append(item)
            continue
        if offset == region.start and item.name == "FOR_ITER":
            item = bc.Instr("FOR_ITER", done, location=item.location)
        elif isinstance(item.arg, bc.Label):
            target = label_offsets[item.arg]
            if target in exit_labels:
                item = bc.Instr(item.name, exit_labels[target], location=item.location)
        items.append(item)
        if offset == region.end and item.name not in _UNCONDITIONAL:
            # The loop's last instruction may fall through out of it (3.11's conditional
            # jump back): to that exit.
            following = pairs[count][0].offset
            items.append(bc.Instr("JUMP_FORWARD", exit_labels[following]))
    prologue = [*_push_stack(site.nulls), bc.Instr("JUMP_FORWARD", entry)]
    if _PY313 and not _iterates(site) and site.group[0].name != "TO_BOOL":
        # 3.13 jumps on exact bools only: the test's value came from the graph (np.bool_).
        prologue.insert(-1, bc.Instr("TO_BOOL"))
    _strip_locations(prologue, original.co_firstlineno)
    insert_at = next(
        (
            k + 1
            for k, item in enumerate(items)
            if isinstance(item, bc.Instr) and item.name == "RESUME"
        ),
        0,
    )
    items[insert_at:insert_at] = prologue
    for exit_, resume in zip(region.exits, resumes, strict=True):
        nulls, names = exit_.continuation.nulls, list(exit_.local_names)
        if exit_.exhausted:
            items.append(done)
            if _PY312:
                # Skipped by an exhausted FOR_ITER, as in the original code.
                items.append(bc.Instr("END_FOR"))
                if _PY313:
                    items.append(bc.Instr("POP_TOP"))
        else:
            items.append(exit_labels[exit_.continuation.offset])
        tail = _call_resume(resume, nulls, names)
        _strip_locations(tail, original.co_firstlineno)
        items.extend(tail)
    program.clear()
    program.extend(items)
    line = _line_of(pairs, region.start, original.co_firstlineno)
    params = [*stack_names(site.nulls), *region.local_names]
    _configure(program, original, params, f"{original.co_name}__loop_at_line_{line}")
    widest = max(len(exit_.local_names) for exit_ in region.exits)
    stacksize = original.co_stacksize + len(site.nulls) + widest + 4
    return program.to_code(stacksize=stacksize, compute_exception_stack_depths=False)


def _label_offsets(
    program: bc.Bytecode, pairs: list[tuple[dis.Instruction, Any]]
) -> dict[bc.Label, int]:
    # Each label's raw offset: that of the instruction after it.
    offsets: dict[bc.Label, int] = {}
    pending: list[bc.Label] = []
    count = 0
    for item in program:
        if isinstance(item, bc.Label):
            pending.append(item)
        elif isinstance(item, bc.Instr):
            for label in pending:
                offsets[label] = pairs[count][0].offset
            pending = []
            count += 1
    return offsets
