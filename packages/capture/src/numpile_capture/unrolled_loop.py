"""A loop over known items that breaks on a run-time value, unrolled into one graph.

A `for` over a tuple, a list or a zip of them runs unrolled by design (its items may
differ in type and shape). A `break` on a run-time value in its body
(`if np.abs(x).max() < tol: break`) would end the graph at the test, and the remaining
copies would run one Python step each. Instead, the copies are traced one after the
other into the graph, each body as a kept loop's (`block_trace.run_until`: the `break`
inside an `if` sets the stop flag BROKE, the `if` is a `cond`), and once that flag is a
run-time value every later copy is the `else` branch of a `cond` on it, whose `then`
branch keeps the values as they are: the copies after a break taken at run time compute
nothing. The locals the loop carries (`loop_locals.body_names`: read by the next copy
or after the loop, the loop variable included) are the conds' results.

A loop whose breaks are all decided at capture time unrolls as before, and so does one
whose body cannot be traced this way (a graph break in it, a copy after a run-time
break that changes a Python container, carried values of other types on the two ways):
the old way breaks the graph at the test and resumes the rest of the loop in Python.

    >>> def f(x, tol):
    ...     for w in (0.5, 0.25, 0.125):
    ...         x = x * w
    ...         if np.abs(x).max() < tol:
    ...             break
    ...     return x
    >>> print(capture_function(f, (np.ones(3), 0.3), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .block_trace import run_until
from .branch_capture import Block, emit_cond, trace_block
from .bytecode import Instruction
from .graph import Graph
from .kept_loop import undone_on_fallback
from .loop_else import else_end
from .loop_exit import (
    BROKE,
    LoopExit,
    LoopFallback,
    exit_block,
    exit_targets,
    return_block,
    tracing_body,
)
from .loop_locals import body_names, read_lazy_locals
from .trace_snapshot import Snapshot
from .unroll_budget import MAX_UNROLLED_NODES, node_weight
from .variables import ConstantVar, GeneratorVar, IteratorVar, Variable

if TYPE_CHECKING:
    from .frame import Frame


def unroll_breaking_loop(frame: Frame, head: int) -> str | None:
    """At the FOR_ITER `head` of a loop over the known items of the iterator on the stack:
    trace every copy of its body into the graph, a run-time `break` guarding the copies
    after it, and leave the frame after the loop. Returns why it did not (the frame as it
    was: the loop is then unrolled as before), or None."""
    iterator = frame.state.peek()
    inst = frame.instructions[head]
    exit_at = inst.target
    if not isinstance(iterator, IteratorVar) or isinstance(iterator, GeneratorVar):
        return "its items are made as it runs"
    assert exit_at is not None
    if not may_break(frame.instructions, head, exit_at):
        return "it has no break"
    read_lazy_locals(frame, head + 1, exit_at)  # once, outside the copies' traces
    saved = Snapshot.take(frame)
    try:
        with undone_on_fallback(frame):
            _unroll(frame, head, exit_at, iterator)
    except LoopFallback as exc:
        # Restored all the same when it says a copy changed a container: put back.
        with contextlib.suppress(LoopFallback):
            saved.restore(frame)
        return str(exc)
    return None


def may_break(instructions: Sequence[Instruction], head: int, exit_at: int) -> bool:
    """Whether the body of the `for` loop [head, exit_at) holds a `break`: its iterator
    popped, then a jump past the loop or (3.12+) a copy of the code after it.

        >>> may_break((), 0, 0)
        False
    """
    targets = exit_targets(instructions, exit_at) if exit_at < len(instructions) else ()
    after = return_block(instructions, exit_at)
    for position in range(head + 1, min(exit_at, len(instructions)) - 1):
        if instructions[position].opname != "POP_TOP":
            continue
        following = instructions[position + 1]
        if following.opname == "JUMP" and following.target in targets:
            return True
        if after and return_block(instructions, position + 1)[: len(after)] == after:
            return True
    return False


def _unroll(frame: Frame, head: int, exit_at: int, iterator: IteratorVar) -> None:
    if else_end(frame.instructions, head, exit_at) is not None:
        raise LoopFallback("its break skips an else clause")
    # The first copy runs at capture time: a local first bound in it and read after the
    # loop is bound there, and carried through the copies after it.
    entered = iterator.position < len(iterator.items)
    carried, _ = body_names(frame, head, head + 1, exit_at, exit_at, entered=entered)
    state = frame.state
    loop = LoopExit(
        head,
        head + 1,
        exit_at,
        exit_at,
        iterator,
        carried,
        after=exit_block(frame, exit_at),
        base=list(state.stack),
    )
    graph = frame.tracer.graph
    count = len(graph.nodes)
    broke: Variable = ConstantVar(False)
    run_time = False
    # A kept loop around this one keeps its own stop flag in BROKE: put back after.
    enclosing = state.locals.get(BROKE)
    try:
        with tracing_body(frame, loop):
            while not _is_constant(broke, True):
                item = iterator.next_item()
                if item is None:
                    break
                if _is_constant(broke, False):
                    broke = _copy(frame, loop, item)
                else:
                    broke = _guarded_copy(frame, loop, broke, item)
                run_time = run_time or not isinstance(broke, ConstantVar)
    finally:
        if enclosing is not None:
            state.locals[BROKE] = enclosing
    if not run_time:
        raise LoopFallback("its breaks are decided at capture time")
    added = sum(node_weight(node) for node in graph.nodes[count:])
    if added > MAX_UNROLLED_NODES:
        raise LoopFallback(f"its copies add {added} graph nodes, past the unroll budget")
    state.pop()  # the iterator
    frame.pc = exit_at


def _copy(frame: Frame, loop: LoopExit, item: Variable) -> Variable:
    # One copy of the body traced into the graph; its stop flag after it.
    state = frame.state
    state.locals[BROKE] = ConstantVar(False)
    state.push(item)
    frame.pc = loop.low
    run_until(frame, loop.stop, loop.low, loop.high)
    return state.locals.pop(BROKE)


def _guarded_copy(frame: Frame, loop: LoopExit, broke: Variable, item: Variable) -> Variable:
    # One copy of the body as the `else` branch of a cond on the stop flag (the `then`
    # branch keeps every value); the flag after it, a result of the cond.
    state = frame.state
    state.locals[BROKE] = broke
    skipped = Block(Graph(), dict(state.locals), list(state.stack))
    state.locals[BROKE] = ConstantVar(False)
    state.push(item)
    taken = trace_block(frame, loop.low, loop.stop, high=loop.high)
    state.pop()
    state.locals[BROKE] = broke
    span = (loop.low, loop.exit)
    emit_cond(frame, broke, skipped, taken, span, kept={*loop.carried, BROKE})
    return state.locals.pop(BROKE)


def _is_constant(var: Variable, value: bool) -> bool:
    return isinstance(var, ConstantVar) and var.value is value
