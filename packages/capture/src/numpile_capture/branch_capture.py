"""Branches on run-time values inside a loop's body, captured as one `cond` node.

Inside a body traced once, `if x[i] > 0:` or `if (crc & 1) ^ (b & 1):` branches on a
value that exists only at run time. Both blocks of the `if` are traced, each into a
graph of its own, from the same frame state; the locals (and stack values, for
`a if c else b`) either block assigns become the node's results, their metadata joined
(a Python scalar joins the NumPy scalar it becomes). The blocks are found from the
jump: `if c: A` jumps over A to the join; `if c: A else: B` ends A with a jump over B.
`elif` chains and `and`/`or` in conditions nest. An `if` whose block breaks or
continues is traced, both ways, to the end of the iteration (see `loop_exit`). A block
that returns other code, changes Python containers, or gives a local different shapes
makes `LoopFallback`: the enclosing loop is then unrolled as before.

    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         if x[i] > 0:
    ...             s += x[i]
    ...     return s
    >>> print(capture_function(f, (np.ones(3),), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .block_trace import TO_RETURN, run_until
from .body_graph import UNFOLLOWED_WRITE, external_nodes, lift_body, written_by
from .bytecode import Instruction
from .carried_values import graph_value, join_metas, meta_of_value, variable_of
from .control_flow import add_cond
from .graph import Graph
from .loop_entry import watch_own_scalars
from .loop_exit import BROKE, Escape, LoopFallback, innermost
from .meta import ArrayMeta, ScalarMeta
from .trace_snapshot import Snapshot
from .variables import Variable

if TYPE_CHECKING:
    from .frame import Frame


def capture_branch(frame: Frame, inst: Instruction, stop: int, high: int) -> None:
    """Capture the `if` that starts at `inst` (a POP_JUMP_IF_* on a run-time value, popped
    here) as a `cond` node; the frame continues at the join with the merged values.

    The enclosing block runs until instruction `stop` (a loop's head: the iteration's
    end) and may not jump past `high`; a branch that ends by jumping to `stop` (CPython
    copies a loop's back jump into each branch) joins there.
    """
    pred = frame.state.pop()
    start = frame.pc
    target = inst.target
    if target is None or target < start:
        raise LoopFallback("a branch jumps backward (continue)")
    if stop == TO_RETURN:
        _branch_to_return(frame, inst, pred, start, target)
        return
    kept: set[str] | None = None
    try:
        fall, jumped, join = _trace_to_join(frame, start, target, stop, high)
    except Escape:
        loop = innermost(frame)
        if loop is None or stop != loop.stop:
            raise  # an enclosing block is traced to its join: it goes to the iteration's end
        # A block breaks or continues: both ways run to the iteration's end (see loop_exit).
        join = loop.stop
        fall = _trace_block(frame, start, join, loop.high)
        jumped = _trace_block(frame, target, join, loop.high)
        kept = {*loop.carried, BROKE}
    taken_on_true = inst.opname == "POP_JUMP_IF_TRUE"
    then_block, else_block = (jumped, fall) if taken_on_true else (fall, jumped)
    _emit(frame, pred, then_block, else_block, (start, join), kept)


def _trace_to_join(
    frame: Frame, start: int, target: int, stop: int, high: int
) -> tuple[Block, Block, int]:
    # Both blocks of the `if` traced to where they join (or to `stop`, as CPython ends
    # each block of an `if` at the end of a loop body with the loop's back jump).
    tail = frame.instructions[target - 1] if target > start else None
    tail_target = tail.target if tail is not None and tail.opname == "JUMP" else None
    if tail_target is not None and tail_target == stop:
        # Both blocks end the enclosing block (each runs to `stop`).
        join = stop
        fall = _trace_block(frame, start, stop, target)
        jumped = _trace_block(frame, target, stop, high)
    else:
        if tail_target is not None and tail_target > target:
            fall_end, join = target - 1, tail_target  # if ... else ...
        else:
            fall_end, join = target, target  # if ... (no else)
        if join > high:
            raise Escape("a branch leaves the loop (break or return)")
        fall = _trace_block(frame, start, fall_end, max(fall_end, start + 1))
        jumped = _trace_block(frame, target, join, max(join, target + 1))
    return fall, jumped, join


def _branch_to_return(
    frame: Frame, inst: Instruction, pred: Variable, start: int, target: int
) -> None:
    # Code traced to the function's return (after a loop that may return): each way of the
    # `if` is traced to its own return (3.12+ copy the return into both blocks of
    # `return a if c else b`, 3.11 join them first); the `cond` gives the returned value.
    fall = trace_to_return(frame, start)
    jumped = trace_to_return(frame, target)
    locals_now = dict(frame.state.locals)
    fall.locals = jumped.locals = locals_now  # only the result merges: the function ends
    taken_on_true = inst.opname == "POP_JUMP_IF_TRUE"
    then_block, else_block = (jumped, fall) if taken_on_true else (fall, jumped)
    _emit(frame, pred, then_block, else_block, (start, len(frame.instructions)), None)
    frame.result = frame.state.pop()


def trace_to_return(frame: Frame, start: int) -> Block:
    """The code from instruction `start` traced to the frame's return into a graph of its
    own: a Block whose stack ends with the returned value (the frame restored after)."""
    tracer = frame.tracer
    saved = Snapshot.take(frame)
    outer = tracer.graph
    graph = Graph()
    tracer.graph = graph
    frame.pc = start
    try:
        try:
            run_until(frame, TO_RETURN, start, len(frame.instructions))
        except LoopFallback:
            if frame.result is None:
                raise  # not its return: something the code cannot keep
        result = frame.result
        assert result is not None
        block = Block(graph, dict(frame.state.locals), [*frame.state.stack, result])
    finally:
        tracer.graph = outer
        saved.restore(frame)
    return block


def trace_block(frame: Frame, start: int, stop: int, *, high: int | None = None) -> Block:
    """The code [start, stop) traced into a graph of its own, to `stop` (the frame
    restored after); `high`: where it may jump to at most, when past `stop` (a loop's
    instructions, for a block traced to its iteration's end)."""
    return _trace_block(frame, start, stop, max(stop, start + 1) if high is None else high)


class Block:
    """One traced block of a branch: its graph and the frame's locals and stack after it."""

    def __init__(self, graph: Graph, locals_after: dict[str, Variable], stack: list[Variable]):
        self.graph = graph
        self.locals = locals_after
        self.stack = stack


def _trace_block(frame: Frame, start: int, stop: int, high: int) -> Block:
    tracer = frame.tracer
    saved = Snapshot.take(frame)
    outer = tracer.graph
    graph = Graph()
    tracer.graph = graph
    frame.pc = start
    try:
        run_until(frame, stop, start, high)
        block = Block(graph, dict(frame.state.locals), list(frame.state.stack))
    finally:
        tracer.graph = outer
        saved.restore(frame)
    return block


def _emit(
    frame: Frame,
    pred: Variable,
    then_block: Block,
    else_block: Block,
    span: tuple[int, int],
    kept: set[str] | None,
) -> None:
    # `kept`: the locals live at the join when it is the iteration's end (the carried
    # ones and the stop flag), None to merge every local the blocks assign.
    start, join = span
    state = frame.state
    before = dict(state.locals)
    results: list[tuple[str | int, Variable, Variable]] = []
    for name in dict.fromkeys([*then_block.locals, *else_block.locals]):
        if kept is not None and name not in kept:
            continue
        then_value = then_block.locals.get(name)
        else_value = else_block.locals.get(name)
        if then_value is None or else_value is None:
            if _read_elsewhere(frame, name, start, join):
                raise LoopFallback(f"{name!r} is assigned in one branch of an if only")
            continue
        if then_value is before.get(name) and else_value is before.get(name):
            continue
        results.append((name, then_value, else_value))
    depth = len(state.stack)
    if len(then_block.stack) != len(else_block.stack) or len(then_block.stack) < depth:
        raise LoopFallback("the branches of an if leave different stacks")
    for position, (then_item, else_item) in enumerate(
        zip(then_block.stack, else_block.stack, strict=True)
    ):
        if position < depth and then_item is state.stack[position] is else_item:
            continue
        if position < depth:
            raise LoopFallback("a branch of an if changes the stack below it")
        results.append((position, then_item, else_item))
    then_values = [graph_value(then_value, frame.tracer) for _, then_value, _ in results]
    else_values = [graph_value(else_value, frame.tracer) for _, _, else_value in results]
    metas = [
        _join(str(key), meta_of_value(a), meta_of_value(b))
        for (key, _, _), a, b in zip(results, then_values, else_values, strict=True)
    ]
    then_block.graph.output = tuple(then_values)
    else_block.graph.output = tuple(else_values)
    external = external_nodes(then_block.graph)
    for node in external_nodes(else_block.graph):
        if node not in external:
            external.append(node)
    then_graph, _ = lift_body(then_block.graph, 0, external)
    else_graph, _ = lift_body(else_block.graph, 0, external)
    written = written_by((then_graph, else_graph), 1)
    if written is None:
        raise LoopFallback(UNFOLLOWED_WRITE)
    tracer = frame.tracer
    outputs = add_cond(
        tracer.graph, graph_value(pred), list(external), (then_graph, else_graph), metas, written
    )
    line = frame.locate_line(frame.instructions[start - 1])
    if line is not None:
        for node in tracer.graph.nodes[-1 - len(outputs) :]:
            tracer.graph.locations.setdefault(node, line)
    pairs = zip(results, outputs, strict=True)
    locals_of = [(one, other, node) for (key, one, other), node in pairs if isinstance(key, str)]
    watch_own_scalars(frame, start, locals_of)
    for (key, _, _), node in zip(results, outputs, strict=True):
        if isinstance(key, str):
            state.locals[key] = variable_of(node)
        else:
            state.push(variable_of(node))
    frame.pc = join


def emit_cond(
    frame: Frame,
    pred: Variable,
    then_block: Block,
    else_block: Block,
    span: tuple[int, int],
    *,
    kept: set[str] | None = None,
) -> None:
    """Add the `cond` node choosing `then_block` or `else_block` by `pred`: the locals and
    stack values they leave differently become its results, bound in the frame (only the
    locals of `kept`, when given: at a loop iteration's end)."""
    _emit(frame, pred, then_block, else_block, span, kept)


def _join(name: str, one: ArrayMeta | ScalarMeta, other: ArrayMeta | ScalarMeta) -> Any:
    # Either branch may keep a Python scalar the other makes a NumPy scalar of.
    if isinstance(one, ScalarMeta) and isinstance(other, ArrayMeta):
        one, other = other, one
    return (
        join_metas(name, other, one) if isinstance(one, ArrayMeta) else join_metas(name, one, other)
    )


def _read_elsewhere(frame: Frame, name: str, start: int, join: int) -> Any:
    return any(
        inst.opname == "LOAD_FAST" and inst.argval == name
        for position, inst in enumerate(frame.instructions)
        if not start <= position < join
    )
