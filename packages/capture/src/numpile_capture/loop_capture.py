"""Loops that stay loops: a `for` over a `range` captured once as a `for_loop` node.

At a FOR_ITER over a range (constant, symbolic or run-time bounds), the body is traced
once into its own graph with the index as a run-time int (a `ScalarNodeVar`) and each
carried local (assigned in the body, live before it) as a placeholder. The carried
types are iterated to a fixpoint (NEP 50: `s = 0.0` then `s += x[i]` carries a
float32 scalar for a float32 `x`); arrays the body writes in place stay inputs the
node writes. Nodes of the enclosing graph the body reads become loop-invariant
inputs. A trip count is a graph value, so a new one reuses the compiled code.

`break` and `continue` are kept (see `loop_exit`). A body that cannot be kept (a graph
break inside it, a `return` of other code than after the loop, a carried array whose
shape changes, a Python container it mutates) makes
`LoopFallback`: the loop is unrolled as before when its trip count is known and
small, else capture breaks at the loop; the `graph_breaks` log says which loop and why.

The parts are modules of their own: the ranges (`loop_ranges`), the body's locals
(`loop_locals`), the carried values and their types (`carried_values`), the bounds
(`loop_bounds`), the body's graph (`body_graph`), the trace of a block (`block_trace`),
its undoing (`trace_snapshot`), and what `for` and `while` loops share (`kept_loop`).

    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += x[i] * x[i]
    ...     return s
    >>> print(capture_function(f, (np.ones(5),), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs

from .block_trace import run_until
from .body_graph import UNFOLLOWED_WRITE, external_nodes, peeled_first, written_by
from .bound_origins import note_loop_arrays, note_loop_bounds, note_loop_reads, widen_ahead
from .bytecode import Instruction
from .carried_values import bind_carried, carried_metas, graph_value
from .control_flow import add_loop
from .dynamic_shapes import active_shape_env
from .entry_objects import entry_unless_ran, kept_by_branches
from .graph import Graph
from .kept_loop import bind_outputs, return_slot, trace_to_fixpoint, undone_on_fallback
from .loop_bounds import bound_expr, bound_value
from .loop_counters import bounded_counters, range_counter
from .loop_else import carry_left, else_end, run_else_clause
from .loop_entry import (
    BRANCHES_TAKEN,
    WHETHER_IT_RAN,
    EmptyRange,
    branch_on_entry,
    can_end_graph,
    describe_retyped,
    end_graph_after,
    kept_with_loop_types,
    mark_typed_if_ran,
    own_entries_kept,
    range_entered,
    retyped_after,
    runs_node,
    typed_if_ran_of,
    watch_own_entries,
)
from .loop_exit import BROKE, LoopExit, ReturnSlot, exit_block, tracing_body
from .loop_exit import LoopFallback as LoopFallback
from .loop_index import index_scope, range_bounds
from .loop_locals import body_names, loaded_names, read_after, read_lazy_locals
from .loop_ranges import RangeIterVar
from .loop_sources import ZipVar, item_at
from .meta import ArrayMeta, ScalarMeta
from .trace_snapshot import Snapshot
from .variables import ArrayVar, ConstantVar, ScalarNodeVar, Variable

if TYPE_CHECKING:
    from .frame import Frame

log = logging.getLogger("numpile.capture.graph_breaks")


@attrs.frozen
class _Extent:
    # The loop's instructions: FOR_ITER at `head`, the body up to `exit` (exclusive).
    head: int
    exit: int
    carried: tuple[str, ...]
    temporaries: tuple[str, ...]
    else_end: int | None = None  # where an `else:` clause a break skips ends (loop_else)


def keep_loop(frame: Frame, inst: Instruction, iterator: RangeIterVar) -> None:
    """Capture the loop that starts at `inst` (a FOR_ITER) as one `for_loop` node.

    On success the frame continues after the loop with its carried locals bound to the
    node's outputs (or, for a loop that returns early, has returned: see `loop_return`);
    otherwise raises `LoopFallback` with the frame as it was.
    """
    with undone_on_fallback(frame):
        _keep_loop(frame, inst, iterator)


def _keep_loop(frame: Frame, inst: Instruction, iterator: RangeIterVar) -> None:
    extent = _extent(frame, inst)
    # Pinned bounds (`loop_ranges.pinned`, under some transforms): nothing to widen.
    pinned = frame.tracer.pin_trip_counts
    state = frame.state
    read_lazy_locals(frame, extent.head + 1, extent.exit)
    if not pinned:
        # Before the body is traced with bounds, or on arrays, whose sizes would change.
        widen_ahead(iterator.bounds, lambda: _loaded_arrays(frame, extent))
    metas, scalars = carried_metas(frame, extent.carried)
    returns = return_slot(frame, extent.head, extent.exit)
    loop = LoopExit(
        extent.head,
        extent.head + 1,
        extent.exit,
        extent.exit,
        state.peek(),
        extent.carried,
        after=exit_block(frame, extent.exit),
        returns=returns,
        else_end=extent.else_end,
        base=list(state.stack),
    )
    if extent.else_end is not None:
        carry_left(frame, loop, metas, scalars)
    # Late import: loop_return traces the code after the loop with run_until.
    from .loop_return import inherit_return

    if returns is not None and returns.parent is not None and returns.parent.carried:
        loop.carried = (*loop.carried, *inherit_return(frame, returns, metas, scalars))

    def trace(metas: dict[str, ArrayMeta | ScalarMeta]) -> tuple[Graph, list[Any]]:
        with tracing_body(frame, loop):
            return _trace_body(frame, extent, metas, scalars, iterator.over, iterator.bounds)

    def carried(added: tuple[str, ...]) -> None:
        loop.carried = (*loop.carried, *added)

    initial = dict(metas)
    starting = {name: state.locals[name] for name in metas}
    first, body, metas = trace_to_fixpoint(
        frame,
        trace,
        metas,
        scalars,
        returns,
        carried=carried,
        watch=loop.own_entries,
        read_after_loop=lambda name: read_after(
            frame.instructions, extent.exit, name, extent.head, extent.exit
        ),
    )
    retyped = retyped_after(frame, initial, metas, (extent.head, extent.exit))
    breaks = _may_break((first, body), len(metas))
    entered = (None if breaks else range_entered(iterator.bounds)) if retyped else True
    inner_flagged = loop.typed_if_ran.intersection(retyped)
    if inner_flagged:
        entered = None  # an inner loop that may not run decides the type (see loop_entry)
    branched = kept_by_branches((first, body), retyped) if can_end_graph(frame) else ()
    by_branches = bool(branched) and entered is True and not (returns and returns.carried)
    if by_branches:
        entered = None  # a branch that may not assign it decides the type
    if entered is False:
        raise EmptyRange  # guarded: this entry serves the calls whose range is empty
    why = describe_retyped(retyped, initial, metas)
    own = own_entries_kept(frame, extent.head, (first, body), retyped, starting, why)
    ends_graph = entered is None and can_end_graph(frame)
    step = iterator.bounds[2]
    splits = entered is None and not ends_graph and not breaks and _constant_step(step) != 0
    carries_return = returns is not None and returns.carried
    if inner_flagged and (not ends_graph or carries_return):
        # Whether an inner loop ran is known only inside this loop's run: code after it
        # here would read its values on the wrong types (see entry_objects).
        raise LoopFallback(
            f"the type of {why} after it depends on whether its inner loops ran, and the "
            "graph cannot end after it here"
        )
    if entered is None and (not (ends_graph or splits) or carries_return):
        mark_typed_if_ran(frame, retyped, why)
        kept_with_loop_types(frame.instructions[extent.head].lineno, why)
        ends_graph = splits = False
    if extent.else_end is not None and first is not None:
        # After 0 iterations (or a break in the first) a carried value keeps its Python
        # type, after more it is a NumPy value: the clause traced once cannot be both.
        raise LoopFallback("its else clause reads values whose type depends on the trip count")
    if extent.else_end is not None and returns is not None and returns.carried:
        raise LoopFallback("it returns from a loop whose break skips an else clause")
    graph = frame.tracer.graph
    count = len(graph.nodes)
    before = Snapshot.take(frame)
    bounds = _emit_loop(frame, extent, iterator, (first, body), metas, loop.typed_if_ran)
    watch_own_entries(frame, extent.head, own, starting)
    try:
        if splits:

            def ran() -> Variable:
                return ScalarNodeVar(runs_node(frame.tracer, bounds, _constant_step(step)))

            branch_on_entry(frame, extent.exit, {name: starting[name] for name in retyped}, ran)
        _after_loop(frame, extent, returns)
    except LoopFallback:
        del graph.nodes[count:]  # the loop node and its outputs: nothing reads them yet
        before.restore(frame)
        raise
    if not pinned:
        note_loop_bounds(iterator.bounds)  # a new trip count must not compile again
        note_loop_reads(iterator.bounds, lambda: _array_reads(frame, (first, body)))
        note_loop_arrays(
            lambda: _array_reads(frame, (first, body)) | _carried_inputs(frame, starting)
        )
    if ends_graph:
        line = frame.instructions[extent.head].lineno
        cause = BRANCHES_TAKEN if by_branches else WHETHER_IT_RAN
        end_graph_after(frame, extent.exit, line, why, cause=cause)


def _array_reads(frame: Frame, traced: tuple[Graph | None, Graph]) -> frozenset[str]:
    # The array inputs the traced bodies read from enclosing graphs (see bound_origins).
    builder = frame.tracer.builder
    found: frozenset[str] = frozenset()
    for graph in traced:
        if graph is not None:
            for node in external_nodes(graph):
                found |= builder.array_inputs_of(node)
    return found


def _loaded_arrays(frame: Frame, extent: _Extent) -> frozenset[str]:
    # The array inputs of the arrays the loop's code reads from locals (its carried values'
    # starts among them), before its body is traced.
    builder = frame.tracer.builder
    found: frozenset[str] = frozenset()
    for name in loaded_names(frame, extent.head + 1, extent.exit):
        var = frame.state.locals.get(name)
        if isinstance(var, ArrayVar):
            found |= builder.array_inputs_of(var.node)
    return found


def _carried_inputs(frame: Frame, starting: dict[str, Variable]) -> frozenset[str]:
    # The array inputs the values a loop carries start from (an ODE's state `y`).
    builder = frame.tracer.builder
    found: frozenset[str] = frozenset()
    for var in starting.values():
        if isinstance(var, ArrayVar):
            found |= builder.array_inputs_of(var.node)
    return found


def _may_break(traced: tuple[Graph | None, Graph], carried: int) -> bool:
    # A body that may break returns its stop flag after the carried values (see loop_exit).
    return any(graph is not None and len(graph.output) > carried for graph in traced)


def _constant_step(step: Variable) -> int:
    # The range's step when it is a constant, else 0 (no range has that step).
    return step.value if isinstance(step, ConstantVar) and type(step.value) is int else 0


def _after_loop(frame: Frame, extent: _Extent, returns: ReturnSlot | None) -> None:
    # The frame stands after the loop node: its else clause, or the return it carried.
    if extent.else_end is not None:
        run_else_clause(frame, extent.exit, extent.else_end)
    elif returns is not None and returns.carried:
        # Late import, as in _keep_loop.
        from .loop_return import propagate_return, return_after_loop

        if returns.parent is None:
            return_after_loop(frame, returns)
        else:
            propagate_return(frame)


def _extent(frame: Frame, inst: Instruction) -> _Extent:
    head = frame.pc - 1
    assert inst.target is not None
    end = else_end(frame.instructions, head, inst.target)
    carried, temporaries = body_names(frame, head, head + 1, inst.target, inst.target, else_at=end)
    return _Extent(head, inst.target, carried, temporaries, end)


def _trace_body(
    frame: Frame,
    extent: _Extent,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
    over: ArrayVar | ZipVar | None,
    bounds: tuple[Variable, Variable, Variable],
) -> tuple[Graph, list[Any]]:
    # One iteration, traced into a graph of its own with the index a bounded symbol
    # (loop_index); the frame is restored by the caller.
    low, high = range_bounds(*(bound_expr(bound) for bound in bounds))
    read = over is not None or _index_read(frame, extent)
    with index_scope(active_shape_env(), low, high, read=read) as symbol:
        return _trace_indexed_body(frame, extent, metas, scalars, over, symbol, bounds)


def _index_read(frame: Frame, extent: _Extent) -> bool:
    # Whether the code may read the loop's index: anything but a local that no instruction
    # of the function loads (`for _ in range(steps)`, a time step's unused `t`). Such an
    # index needs no symbol (and no sympy).
    first = frame.instructions[extent.head + 1]
    if first.opname != "STORE_FAST":
        return True
    name = first.argval
    if _DYNAMIC_LOCALS & set(frame.code.co_names):
        return True
    return any(
        inst.opname in ("LOAD_FAST", "DELETE_FAST") and inst.argval == name
        for inst in frame.instructions
    )


# NOTE: builtins that read locals by name, behind the bytecode's back.
_DYNAMIC_LOCALS = frozenset(("locals", "vars", "eval", "exec"))


def _trace_indexed_body(
    frame: Frame,
    extent: _Extent,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
    over: ArrayVar | ZipVar | None,
    symbol: Any,
    bounds: tuple[Variable, Variable, Variable],
) -> tuple[Graph, list[Any]]:
    tracer = frame.tracer
    outer = tracer.graph
    body = Graph()
    index_name = _index_name(frame, extent) if over is None else "i"
    index = body.placeholder(index_name, ScalarMeta(int))
    bind_carried(frame, body, metas, scalars)
    depth = len(frame.state.stack)
    frame.pc = extent.head + 1
    frame.state.locals[BROKE] = ConstantVar(False)
    tracer.graph = body
    try:
        position = ScalarNodeVar(index, symbol)
        item: Variable = position
        if over is not None:
            # The row, a view (or an element's scalar), or enumerate's / zip's tuple.
            item = item_at(tracer, over, position)
        frame.state.push(item)
        counter = range_counter(bounds)
        counters = {} if counter is None else {index: counter}
        with bounded_counters(counters, tracer.builder):
            _run_iteration(frame, extent)
    finally:
        tracer.graph = outer
    if len(frame.state.stack) != depth:
        raise LoopFallback("the body leaves values on the stack")
    results = [graph_value(frame.state.locals[name], frame.tracer) for name in metas]
    broke = frame.state.locals.pop(BROKE)
    if isinstance(broke, ConstantVar) and broke.value is False:
        body.output = tuple(results)
    else:
        body.output = (*results, graph_value(broke, frame.tracer))  # the stop flag (see loop_exit)
    return body, results


def _index_name(frame: Frame, extent: _Extent) -> str:
    first = frame.instructions[extent.head + 1]
    if first.opname == "STORE_FAST" and first.argval != "_":
        return str(first.argval)
    return "i"


def _run_iteration(frame: Frame, extent: _Extent) -> None:
    run_until(frame, extent.head, extent.head + 1, extent.exit)


def _emit_loop(
    frame: Frame,
    extent: _Extent,
    iterator: RangeIterVar,
    traced: tuple[Graph | None, Graph],
    metas: dict[str, ArrayMeta | ScalarMeta],
    flagged: set[str],
) -> tuple[Any, ...]:
    # The loop node, its outputs bound; returns its bounds' graph values. `flagged`: the
    # carried locals inner loops kept with the loop's types (see loop_entry).
    tracer = frame.tracer
    bounds = tuple(bound_value(tracer, bound) for bound in iterator.bounds)
    breaks = any(len(graph.output) > len(metas) for graph in traced if graph is not None)
    for graph in traced:
        if breaks and graph is not None and len(graph.output) == len(metas):
            graph.output = (*graph.output, False)  # a trace that never reached its break
    first, body, invariants = peeled_first(traced, 1 + len(metas))
    entry = entry_unless_ran((first, body), tuple(metas), flagged, indexed=True)
    state = frame.state
    initial = [graph_value(state.locals[name], frame.tracer) for name in metas]
    # NOTE: placeholder k is input 2 + k (after the bounds).
    written = written_by((body, first), 2)
    if written is None:
        raise LoopFallback(UNFOLLOWED_WRITE)
    outputs = add_loop(
        tracer.graph,
        bounds,
        initial,
        invariants,
        body,
        written,
        first=first,
        breaks=breaks,
        typed_if_ran=typed_if_ran_of(frame, tuple(metas)),
        entry_unless_ran=entry,
    )
    bind_outputs(frame, frame.instructions[extent.head], outputs, tuple(metas))
    state.pop()  # the iterator
    frame.pc = extent.exit
    log.debug("loop at line %s kept as one for_loop node", frame.instructions[extent.head].lineno)
    return bounds
