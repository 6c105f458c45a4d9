"""While loops on run-time tests, captured once as a `while_loop` node.

`while err > tol:` tests a value that exists only at run time. CPython compiles the test
twice: at the entry (a jump past the loop when it fails) and again after the body. At
the entry jump capture traces the body and the bottom test once, into one graph that
returns the new carried values and the next test's value; the carried types iterate to
a fixpoint as for `for` loops (see `kept_loop`). The loop is recognized from its
jumps: the bottom of the loop jumps back to the instruction after the entry test (3.11:
one conditional jump; 3.12 and 3.13: a conditional jump past the loop, then a jump back).

    >>> def sqrt(a, tol):
    ...     x = a
    ...     while abs(x * x - a) > tol:
    ...         x = 0.5 * (x + a / x)
    ...     return x
    >>> print(capture_function(sqrt, (np.float64(2.0), 1e-12), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .block_trace import run_until
from .body_graph import UNFOLLOWED_WRITE, peeled_first, written_by
from .bytecode import Instruction
from .carried_values import bind_carried, carried_meta, carried_metas, graph_value
from .control_flow import add_while_loop
from .entry_objects import entry_unless_ran, kept_by_branches
from .graph import Graph
from .kept_loop import bind_outputs, return_slot, trace_to_fixpoint, undone_on_fallback
from .loop_counters import Counter, bounded_counters, counters
from .loop_else import else_end, run_else_clause
from .loop_entry import (
    BRANCHES_TAKEN,
    WHETHER_IT_RAN,
    EmptyRange,
    can_end_graph,
    describe_retyped,
    end_graph_after,
    first_test_enters,
    kept_with_loop_types,
    mark_typed_if_ran,
    own_entries_kept,
    retyped_after,
    typed_if_ran_of,
    watch_own_entries,
)
from .loop_exit import (
    LEFT,
    LoopExit,
    LoopFallback,
    ReturnSlot,
    exit_block,
    return_block,
    tracing_body,
)
from .loop_locals import body_names, read_after, read_lazy_locals
from .meta import ArrayMeta, ScalarMeta
from .own_entries import OwnEntries
from .trace_snapshot import Snapshot
from .variables import ConstantVar, ScalarNodeVar, Variable

if TYPE_CHECKING:
    from .frame import Frame


_CONDITIONAL = ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE")

# NOTE: how many iterations on values known at capture time a probe traces before it
# decides that the loop runs now, unrolled (see tests_at_run_time).
PROBED_ITERATIONS = 8


@attrs.frozen
class WhileShape:
    """Where a while loop's parts are: the body starts at `body`, the bottom test's jump
    is at `test`, the loop exits to `exit`; `again_if` is the bottom test's truth that
    repeats the loop."""

    body: int
    test: int
    exit: int
    again_if: bool
    enter_if: bool = True
    # A `while True:` loop (see forever_loop): `test` is its jump back, no test there.
    forever: bool = False
    # Whether the loop may end other than by a `return` (a `while True:` without a break
    # ends only by its returns: `exit` is then no code it reaches).
    exits: bool = True

    # Where the loop's instructions end when its exit is a copy before them: a chained
    # comparison's cleanup after the copy (3.12+), else None.
    code_end: int | None = None

    @property
    def span_end(self) -> int | None:
        """Where the loop's instructions end when its exit is a copy inside it (3.12+)."""
        return self.test + 1 if self.forever else self.code_end


def while_shape(frame: Frame, inst: Instruction) -> WhileShape | None:
    """The while loop whose entry test jumps at `inst` (already stepped past), or None."""
    target = inst.target
    body = frame.pc
    if target is None or target <= body:
        return None
    instructions = frame.instructions
    enter_if = inst.opname == "POP_JUMP_IF_FALSE"
    if target == body + 1 and instructions[body].opname == "JUMP":
        # 3.12+ inside a loop body: the entry test jumps into the body, the instruction
        # after it leaves (`while k > 1:` nested in a `for`); the bottom test skips the
        # back jump to the body, onto a copy of that exit.
        shape = _bottom_of(instructions, target)
        return None if shape is None else attrs.evolve(shape, enter_if=not enter_if)
    into = instructions[body]
    if into.opname == "JUMP" and into.target is not None and body < into.target < target:
        # A chained comparison (`while a < x[i] < b:`): its last test falls into a jump over
        # the cleanup of its first one, into the body.
        return _chained_shape(instructions, into.target, target, enter_if)
    tail = instructions[target - 1]
    if tail.opname == "JUMP" and tail.target == body and target - 2 > body:
        test = instructions[target - 2]
        if test.opname in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE") and test.target == target:
            again_if = test.opname == "POP_JUMP_IF_FALSE"
            return WhileShape(body, target - 2, target, again_if, enter_if)
    if tail.opname in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE") and tail.target == body:
        return WhileShape(body, target - 1, target, tail.opname == "POP_JUMP_IF_TRUE", enter_if)
    return None


def _chained_shape(
    instructions: Sequence[Instruction], body: int, exit_at: int, enter_if: bool
) -> WhileShape | None:
    # The loop whose bottom test is a chained comparison too. 3.11: its last jump goes back
    # to the body, then a jump to the exit over the cleanup (a POP_TOP just before the exit).
    # 3.12+: a jump back after the last test, a copy of the exit (a short return) after it.
    test = exit_at - 3
    if test > body and instructions[exit_at - 1].opname == "POP_TOP":
        jump, last = instructions[exit_at - 2], instructions[test]
        back = last.opname in _CONDITIONAL and last.target == body
        if back and jump.opname == "JUMP" and jump.target == exit_at:
            return WhileShape(body, test, exit_at, last.opname == "POP_JUMP_IF_TRUE", enter_if)
    shape = _bottom_of(instructions, body)
    if shape is None or shape.exit > exit_at:
        return None
    after = instructions[shape.exit]
    copied = return_block(instructions, shape.exit)
    same = copied and copied == return_block(instructions, exit_at)
    if not same and not (after.opname == "JUMP" and after.target == exit_at):
        return None
    return attrs.evolve(shape, enter_if=enter_if, code_end=exit_at)


def _bottom_of(instructions: Sequence[Instruction], body: int) -> WhileShape | None:
    # The loop whose body starts at `body`: its back jump is the last jump to `body`.
    backs = [
        position
        for position, inst in enumerate(instructions)
        if position > body and inst.opname == "JUMP" and inst.target == body
    ]
    if not backs:
        return None
    back = backs[-1]
    test = instructions[back - 1]
    if test.opname not in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE") or test.target != back + 1:
        return None
    return WhileShape(body, back - 1, back + 1, test.opname == "POP_JUMP_IF_FALSE")


def keep_while(frame: Frame, inst: Instruction, shape: WhileShape) -> None:
    """Capture the while loop whose entry test is `inst` (its value on the stack, popped
    here) as one `while_loop` node; the frame continues after the loop (or, for a loop
    that returns early, has returned: see `loop_return`).

    Raises `LoopFallback` with the frame as it was (the test's value on the stack), and
    `EmptyRange` so where the loop retypes a value and its first test, guarded, fails.
    """
    with undone_on_fallback(frame):
        _keep_while(frame, inst, shape)


def _keep_while(frame: Frame, inst: Instruction, shape: WhileShape) -> None:
    state = frame.state
    entry = frame.pc - 1
    bounding: dict[str, Counter] = {}
    if not shape.forever and frame.instructions[entry] is inst:
        bounding = counters(frame, entry, shape.body, shape.test, shape.again_if)
    clause_end = else_end(frame.instructions, shape.body - 1, shape.exit)
    carried_names = _carried_names(frame, shape, clause_end)
    read_lazy_locals(frame, shape.body, shape.test)
    pred = state.pop()
    late = tuple(name for name in carried_names if not state.has_local(name))
    returns = return_slot(frame, shape.body, shape.test + 1)
    # Late import: loop_return traces the code after the loop with run_until.
    from .loop_return import inherit_return, propagate_return, return_after_loop, unflatten_value

    # The carried locals inner loops kept with this loop's types (see loop_entry).
    flagged: set[str] = set()
    watch = OwnEntries()

    def trace(metas: dict[str, ArrayMeta | ScalarMeta]) -> tuple[Graph, list[Any]]:
        traced, results, test = _trace(
            frame,
            shape,
            metas,
            scalars,
            late,
            returns=returns,
            else_at=clause_end,
            counters=bounding,
            flagged=flagged,
            watch=watch,
        )
        traced.output = (*results, test)
        return traced, results

    try:
        if late:
            late_seeds(frame, shape, carried_names, late)
        metas, scalars = carried_metas(frame, carried_names)
        scalars.update(name for name in late if isinstance(metas[name], ArrayMeta))
        if clause_end is not None:
            state.locals[LEFT] = ConstantVar(False)
            metas[LEFT] = ScalarMeta(bool)
            scalars.add(LEFT)
        if returns is not None and returns.parent is not None and returns.parent.carried:
            inherit_return(frame, returns, metas, scalars)  # the trace carries all of metas
        before = dict(metas)
        first, traced, metas = trace_to_fixpoint(
            frame,
            trace,
            metas,
            scalars,
            returns,
            watch=watch,
            read_after_loop=lambda name: read_after(
                frame.instructions, shape.exit, name, shape.body, shape.exit
            ),
        )
        retyped = retyped_after(frame, before, metas, (shape.body, shape.exit))
        why = describe_retyped(retyped, before, metas)
        starting = {name: state.locals[name] for name in retyped}
        own = own_entries_kept(frame, shape.test, (first, traced), retyped, starting, why)
        entered = not retyped or _entered(frame, shape, pred)
        inner_flagged = flagged.intersection(retyped)
        carries_return = returns is not None and returns.carried
        if inner_flagged:
            entered = False  # an inner loop that may not run decides the type (loop_entry)
        ends = can_end_graph(frame) and not carries_return
        by_branches = entered and ends and bool(kept_by_branches((first, traced), retyped))
        if by_branches:
            entered = False  # a branch that may not assign it decides the type
            if not can_end_graph(frame) or carries_return:
                raise LoopFallback(
                    f"the type of {why} after it depends on whether its inner loops ran, and "
                    "the graph cannot end after it here"
                )
        if not entered and (not can_end_graph(frame) or carries_return):
            mark_typed_if_ran(frame, retyped, why)
            kept_with_loop_types(inst.lineno, why)
            entered = True
        typed_if_ran = typed_if_ran_of(frame, tuple(metas))
        if clause_end is not None and first is not None:
            raise LoopFallback("its else clause reads values whose type depends on the trip count")
        if clause_end is not None and returns is not None and returns.carried:
            raise LoopFallback("it returns from a loop whose break skips an else clause")
    except (LoopFallback, EmptyRange):
        for name in late:
            state.locals.pop(name, None)
        state.push(pred)
        raise
    first_body, body, invariants = peeled_first((first, traced), len(metas))
    kept_entry = entry_unless_ran((first_body, body), tuple(metas), flagged, indexed=False)
    initial = [graph_value(state.locals[name], frame.tracer) for name in metas]
    tests = (shape.enter_if, shape.again_if)
    tracer = frame.tracer
    written = written_by((body, first_body), 1)
    if written is None:
        raise LoopFallback(UNFOLLOWED_WRITE)
    outputs = add_while_loop(
        tracer.graph,
        graph_value(pred),
        initial,
        invariants,
        body,
        tests,
        written,
        first_body,
        typed_if_ran=typed_if_ran,
        entry_unless_ran=kept_entry,
    )
    bind_outputs(frame, inst, outputs, tuple(metas))
    watch_own_entries(frame, shape.test, own, starting)
    frame.pc = shape.exit
    if not entered:
        cause = BRANCHES_TAKEN if by_branches else WHETHER_IT_RAN
        end_graph_after(frame, shape.exit, inst.lineno, why, cause=cause)
    if clause_end is not None:
        run_else_clause(frame, shape.exit, clause_end)
    elif returns is not None and returns.carried:
        if returns.parent is not None:
            propagate_return(frame)
        elif shape.exits:
            return_after_loop(frame, returns)
        else:
            leaves = [state.locals[name] for name in returns.names]
            frame.result = unflatten_value(leaves, returns.spec)


def _entered(frame: Frame, shape: WhileShape, pred: Variable) -> bool:
    # Whether the loop surely runs one whole iteration: its body leaves only through its
    # bottom test (no break, no return) and its first test is true, known now or guarded
    # (`first_test_enters`); `EmptyRange` where it is guarded false.
    if shape.forever:
        return False
    for inst in frame.instructions[shape.body : shape.test]:
        if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return False
        if inst.target is not None and not shape.body <= inst.target <= shape.test:
            return False
    enters = first_test_enters(frame.tracer, pred, shape.enter_if)
    if enters is False:
        raise EmptyRange  # guarded: this entry serves the calls whose first test fails
    return bool(enters)


def tests_at_run_time(frame: Frame, shape: WhileShape) -> bool:
    """Whether a while loop entered on a test known now (`err = tol + 1` before `while err
    > tol:`) tests a run-time value after its body in one of its first `PROBED_ITERATIONS`
    iterations: traces of the body tell; the frame is left as it was."""
    state = frame.state
    clause_end = else_end(frame.instructions, shape.body - 1, shape.exit)
    try:
        _carried_names(frame, shape, clause_end)
    except LoopFallback:
        return False  # a yield, break or return in the body: it runs now, unrolled
    read_lazy_locals(frame, shape.body, shape.test)  # built once, outside the probes
    pred = state.pop()
    saved = Snapshot.take(frame)
    test: Any = False
    try:
        # Iterations on known values are probed one after another (the values they make
        # stay known) until one tests a run-time value, or the loop ends on a known test:
        # `if i >= n or s > tol: break` before `s` is computed tests only known values in
        # the first iteration, and a run-time one from the second on.
        for _ in range(PROBED_ITERATIONS):
            _, _, test = _trace(frame, shape, {}, set(), returns=ReturnSlot(), else_at=clause_end)
            if not isinstance(test, bool | int | float) or bool(test) != shape.again_if:
                break
    except LoopFallback:
        test = False
    finally:
        try:
            saved.restore(frame)
        except LoopFallback:
            test = False  # the probe changed containers: restored, and the loop unrolls
        state.push(pred)
    return not isinstance(test, bool | int | float)


def retest_points(instructions: Sequence[Instruction], shape: WhileShape) -> tuple[int, int] | None:
    """Where a `continue` in the body of `shape` jumps (the entry test's first instruction:
    CPython jumps back to the test at the loop's top) and where the same test starts at
    the bottom, or None. Both tests are the `while` line's instructions next to the body's
    ends; they must be the same code (jump targets aside), so the trace may take the
    bottom test for the entry one (`continue` ends the iteration there).

        >>> retest_points(normalized_instructions(f.__code__), shape)  # doctest: +SKIP
        (1, 40)
    """
    if shape.forever or shape.body < 1 or instructions[shape.body - 1].opname not in _CONDITIONAL:
        return None
    line = instructions[shape.body - 1].lineno
    if line is None or instructions[shape.test].lineno != line:
        return None
    entry = shape.body - 1
    while entry > 0 and instructions[entry - 1].lineno == line:
        entry -= 1
    bottom = shape.test
    while bottom > shape.body and instructions[bottom - 1].lineno == line:
        bottom -= 1
    tops, bottoms = instructions[entry : shape.body], instructions[bottom : shape.test + 1]
    if len(tops) != len(bottoms) or bottom <= shape.body:
        return None
    for top, low in zip(tops, bottoms, strict=True):
        jumps = top.target is not None and low.target is not None
        if not jumps and (top.opname, top.argval) != (low.opname, low.argval):
            return None
    return entry, bottom


def _carried_names(frame: Frame, shape: WhileShape, clause_end: int | None) -> tuple[str, ...]:
    # The locals the loop of `shape` carries (see loop_locals.body_names); a `continue`
    # jumps back to the entry test (`retest_points`), within the loop's span.
    retest = retest_points(frame.instructions, shape)
    carried, _ = body_names(
        frame,
        shape.body if retest is None else retest[0],
        shape.body,
        shape.test,
        shape.exit,
        exit_from=shape.test,
        span_end=shape.span_end,
        else_at=clause_end,
        entered=shape.forever,
    )
    return carried


def late_seeds(
    frame: Frame, shape: WhileShape, carried: tuple[str, ...], late: tuple[str, ...]
) -> None:
    """Bind each local of `late` (first bound in the `while True:` body of `shape`, read
    after the loop) to a zero of the type one trace of the body gives it: the value it is
    carried in with. The body runs at least once and binds it before each break (checked
    where the breaks are traced), so the zero is never seen. `LoopFallback` when the type
    is no scalar or 0-d value."""
    state = frame.state
    metas, scalars = carried_metas(frame, (name for name in carried if name not in late))
    saved = Snapshot.take(frame)
    found: dict[str, Any] = {}
    try:
        _trace(frame, shape, metas, scalars, late)
        for name in late:
            value = state.locals.get(name)
            found[name] = None if value is None else carried_meta(value)
    finally:
        saved.restore(frame)
    for name in late:
        meta = found[name]
        if isinstance(meta, ScalarMeta) and meta.type in (bool, int, float, complex):
            state.locals[name] = ConstantVar(meta.type(0))
        elif isinstance(meta, ArrayMeta) and meta.shape == () and meta.dtype.kind in "biufc":
            state.locals[name] = ConstantVar(meta.dtype.type(0))
        else:
            reason = f"{name!r} is first bound in the loop to no scalar and read after it"
            raise LoopFallback(reason)


def _trace(
    frame: Frame,
    shape: WhileShape,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
    late: tuple[str, ...] = (),
    *,
    returns: ReturnSlot | None = None,
    else_at: int | None = None,
    counters: Mapping[str, Counter] | None = None,
    flagged: set[str] | None = None,
    watch: OwnEntries | None = None,
) -> tuple[Graph, list[Any], Any]:
    # The body and the bottom test, once, into a graph of their own; `counters`: the
    # carried ints the loop's test bounds (see loop_counters); `flagged` gathers the
    # locals inner loops kept with the loop's types, across the loop's traces (loop_entry).
    tracer = frame.tracer
    outer = tracer.graph
    traced = Graph()
    bind_carried(frame, traced, metas, scalars)
    bounded = {}
    for name, counter in (counters or {}).items():
        var = frame.state.locals.get(name)
        if isinstance(var, ScalarNodeVar) and var.python_type() is int:
            bounded[var.node] = counter
    depth = len(frame.state.stack)
    frame.pc = shape.body
    tracer.graph = traced
    loop = LoopExit(
        shape.test,
        shape.body,
        shape.test,
        shape.exit,
        None,
        (*metas, *(name for name in late if name not in metas)),
        again_if=shape.again_if,
        after=exit_block(frame, shape.exit) if shape.exits else (),
        forever=shape.forever,
        depth=depth,
        unbound={name: frame.state.locals.get(name) for name in late},
        returns=returns,
        else_end=else_at,
        base=list(frame.state.stack),
        typed_if_ran=set() if flagged is None else flagged,  # shared by the loop's traces
        own_entries=OwnEntries() if watch is None else watch,
        retest=retest_points(frame.instructions, shape),
    )
    try:
        with bounded_counters(bounded, tracer.builder), tracing_body(frame, loop):
            run_until(frame, shape.test, shape.body, shape.test)
    finally:
        tracer.graph = outer
    if len(frame.state.stack) != depth + 1:
        raise LoopFallback("the body leaves values on the stack")
    test = graph_value(frame.state.pop())
    results = [graph_value(frame.state.locals[name]) for name in metas]
    return traced, results, test
