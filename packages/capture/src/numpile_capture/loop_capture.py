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

    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += x[i] * x[i]
    ...     return s
    >>> print(capture_function(f, (np.ones(5),), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from numpile_guards.symbolic import SymInt, is_size_expr

from .bound_origins import note_loop_bounds, size_var, with_origins
from .bytecode import Instruction
from .capture_result import Unsupported
from .control_flow import add_loop
from .dynamic_shapes import active_shape_env
from .forever_loop import keep_forever
from .graph import Graph, Node, gives_scalar
from .loop_else import carry_left, else_end, run_else_clause
from .loop_exit import (
    BROKE,
    Escape,
    LoopExit,
    NestedReturn,
    ReturnSlot,
    exit_block,
    exit_targets,
    innermost,
    tracing_body,
)
from .loop_exit import LoopFallback as LoopFallback
from .loop_index import index_scope, range_bounds
from .loop_sources import ZipVar, item_at, zip_length
from .meta import ArrayMeta, ScalarMeta
from .op import OpKind, get_op
from .pytree import tree_flatten, tree_map
from .variables import (
    ArrayVar,
    CellVar,
    ConstantVar,
    DictVar,
    IteratorVar,
    ListVar,
    NotConstantError,
    ObjectVar,
    ScalarInputVar,
    ScalarNodeVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .frame import Frame
    from .tracer import Tracer

log = logging.getLogger("numpile.capture.graph_breaks")

# NOTE: how many times a body is traced again with widened carried types (NEP 50 fixpoint).
MAX_RETRACES = 3

_SCALAR_TYPES = (bool, int, float, complex)


@attrs.define(eq=False)
class RangeVar(Variable):
    """`range(start, stop, step)` whose bounds are not all plain ints (symbolic sizes,
    unspecialized or run-time ints). Used as a constant, it specializes its bounds.

        >>> RangeVar((ConstantVar(0), ConstantVar(3), ConstantVar(1))).as_python_constant()
        range(0, 3)
    """

    bounds: tuple[Variable, Variable, Variable]

    def as_python_constant(self) -> Any:
        values = [_specialized_int(bound) for bound in self.bounds]
        return range(*values)

    def python_type(self) -> type:
        return range

    def describe(self) -> str:
        return "range(" + ", ".join(bound.describe() for bound in self.bounds) + ")"


@attrs.define(eq=False)
class RangeIterVar(Variable):
    """The iterator a `for` over a range, or over an array's first axis (`over`), starts
    with (GET_ITER right before FOR_ITER).

    It lives only between the two instructions: FOR_ITER keeps the loop, or replaces it
    by an `IteratorVar` of the items and unrolls.
    """

    bounds: tuple[Variable, Variable, Variable]
    over: ArrayVar | ZipVar | None = None

    def describe(self) -> str:
        return "range iterator"


def _specialized_int(var: Variable) -> int:
    value = var.as_python_constant()
    if isinstance(value, SymInt):
        return int(value)
    return int(value) if is_size_expr(value) else value


def make_range(args: list[Variable]) -> Variable | None:
    """`range(*args)` kept unspecialized when a bound is symbolic or a run-time int, else None.

    >>> make_range([ConstantVar(3)]) is None
    True
    """
    if not 1 <= len(args) <= 3 or not any(_is_open_bound(arg) for arg in args):
        return None
    if not all(_is_open_bound(arg) or _is_int_constant(arg) for arg in args):
        return None
    bounds: tuple[Variable, Variable, Variable]
    if len(args) == 1:
        bounds = (ConstantVar(0), args[0], ConstantVar(1))
    elif len(args) == 2:
        bounds = (args[0], args[1], ConstantVar(1))
    else:
        bounds = (args[0], args[1], args[2])
    return RangeVar(bounds)


def _is_open_bound(var: Variable) -> bool:
    if isinstance(var, ScalarNodeVar):
        return var.python_type() is int
    if isinstance(var, ScalarInputVar):
        return type(var.current) is int
    return isinstance(var, ConstantVar) and isinstance(var.value, SymInt)


def _is_int_constant(var: Variable) -> bool:
    return isinstance(var, ConstantVar) and type(var.value) is int


def range_iterator(iterable: Variable) -> RangeIterVar | None:
    """The iterator to start a `for` over `iterable` with, when it is a range or an array."""
    if isinstance(iterable, ArrayVar) and iterable.meta.ndim > 0:
        rows = iterable.meta.shape[0]
        if not isinstance(rows, int) and not is_size_expr(rows):
            return None
        # Late import: operators imports this module's RangeVar.
        from .operators import size_value

        try:
            count = size_value(rows)
        except Unsupported:
            return None  # a data-dependent length (x[x > 0]): iterated as before
        return RangeIterVar((ConstantVar(0), size_var(count), ConstantVar(1)), iterable)
    if isinstance(iterable, ZipVar):
        length = zip_length(iterable)
        if length is None:
            return None
        from .operators import size_value  # late import, as above

        try:
            count = size_value(length) if is_size_expr(length) else length
        except Unsupported:
            return None
        return RangeIterVar((ConstantVar(0), ConstantVar(count), ConstantVar(1)), iterable)
    if isinstance(iterable, RangeVar):
        return RangeIterVar(iterable.bounds)
    if isinstance(iterable, ConstantVar) and isinstance(iterable.value, range):
        value = iterable.value
        start, stop, step = (
            with_origins(ConstantVar(b), iterable) for b in (value.start, value.stop, value.step)
        )
        return RangeIterVar((start, stop, step))
    return None


def unrolled(tracer: Tracer, iterator: RangeIterVar) -> IteratorVar:
    """The items of the range, for a loop that is unrolled (its bounds specialized)."""
    # Late import: operators imports this module's RangeVar.
    from .operators import _check_unroll, iterate

    if iterator.over is not None:
        return IteratorVar(iterate(tracer, iterator.over))
    values = [_specialized_int(bound) for bound in iterator.bounds]
    items = range(*values)
    _check_unroll(len(items))
    return IteratorVar([ConstantVar(item) for item in items])


# -- keeping the loop -------------------------------------------------------------------------


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
    locals_ = frame.state.locals
    before = {name for name in locals_ if name.startswith(".")}
    graph = frame.tracer.graph
    count = len(graph.nodes)
    try:
        _keep_loop(frame, inst, iterator)
    except LoopFallback:
        # The zeros a returned array starts as (see loop_return); placeholders of the
        # arguments the body reads stay.
        graph.nodes[count:] = [node for node in graph.nodes[count:] if node.op is None]
        raise
    finally:
        # The pseudo-locals this loop made (RETURNED, RETVAL..., LEFT): not those of an
        # enclosing body it carried on.
        for name in [name for name in locals_ if name.startswith(".") and name not in before]:
            locals_.pop(name, None)


def _keep_loop(frame: Frame, inst: Instruction, iterator: RangeIterVar) -> None:
    extent = _extent(frame, inst)
    state = frame.state
    for name in _loaded_names(frame, extent):
        if name in state.lazy:
            state.read_local(name)  # root arguments read in the body: built once, outside
    saved = Snapshot.take(frame)
    metas: dict[str, ArrayMeta | ScalarMeta] = {}
    for name in extent.carried:
        meta = carried_meta(state.locals[name])
        if meta is None:
            raise LoopFallback(f"it carries {state.locals[name].describe()} in {name!r}")
        metas[name] = meta
    scalars = {name for name in extent.carried if scalar_like(state.locals[name])}
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
        saved = Snapshot.take(frame)
    # Late import: loop_return traces the code after the loop with run_until.
    from .loop_return import carry_return, inherit_return

    if returns is not None and returns.parent is not None and returns.parent.carried:
        loop.carried = (*loop.carried, *inherit_return(frame, returns, metas, scalars))
        saved = Snapshot.take(frame)
    first: Graph | None = None
    attempt = 0
    while True:
        try:
            with tracing_body(frame, loop):
                body, results = _trace_body(
                    frame, extent, metas, scalars, iterator.over, iterator.bounds
                )
        except NestedReturn:
            if returns is None or returns.found is None:
                raise
        finally:
            saved.restore(frame)
        if returns is not None and returns.found is not None and not returns.carried:
            if returns.parent is not None:
                if returns.parent.found is None:
                    returns.parent.found = returns.found
                raise NestedReturn("it returns from inside a loop two levels deep")
            added = carry_return(frame, returns, returns.found, metas, scalars)
            loop.carried = (*loop.carried, *added)
            saved = Snapshot.take(frame)
            first, attempt = None, 0
            continue
        widened = widen(metas, results)
        if widened == metas:
            break
        if attempt == 0:
            first = body  # the first iteration, on the initial types (see peeled_first)
        elif attempt == 1:
            raise LoopFallback("the carried types change over more than one iteration")
        attempt += 1
        metas = widened
    if extent.else_end is not None and first is not None:
        # After 0 iterations (or a break in the first) a carried value keeps its Python
        # type, after more it is a NumPy value: the clause traced once cannot be both.
        raise LoopFallback("its else clause reads values whose type depends on the trip count")
    if returns is None or not returns.carried:
        graph = frame.tracer.graph
        count = len(graph.nodes)
        before = Snapshot.take(frame)
        _emit_loop(frame, extent, iterator, (first, body), metas)
        if extent.else_end is not None:
            try:
                run_else_clause(frame, extent.exit, extent.else_end)
            except LoopFallback:
                del graph.nodes[count:]  # the loop node and its outputs: nothing reads them
                before.restore(frame)
                raise
        note_loop_bounds(iterator.bounds)  # a new trip count must not compile again
        return
    if extent.else_end is not None:
        raise LoopFallback("it returns from a loop whose break skips an else clause")
    from .loop_return import propagate_return, return_after_loop  # late import, as above

    graph = frame.tracer.graph
    count = len(graph.nodes)
    before = Snapshot.take(frame)
    _emit_loop(frame, extent, iterator, (first, body), metas)
    try:
        if returns.parent is None:
            return_after_loop(frame, returns)
        else:
            propagate_return(frame)
    except LoopFallback:
        del graph.nodes[count:]  # the loop node and its outputs: nothing reads them yet
        before.restore(frame)
        raise
    note_loop_bounds(iterator.bounds)


def return_slot(frame: Frame, head: int, exit_at: int) -> ReturnSlot | None:
    """Where a loop [head, exit_at) records a `return` in its body: a slot of its own at
    the top of the frame, one under the enclosing body's when nested in a kept body and
    holding a return (see loop_return), else None."""
    outer = innermost(frame)
    if outer is None:
        return ReturnSlot()
    if outer.returns is None:
        return None
    code = frame.instructions[head:exit_at]
    if not any(inst.opname in ("RETURN_VALUE", "RETURN_CONST") for inst in code):
        return None
    return ReturnSlot(parent=outer.returns)


def _extent(frame: Frame, inst: Instruction) -> _Extent:
    head = frame.pc - 1
    assert inst.target is not None
    end = else_end(frame.instructions, head, inst.target)
    carried, temporaries = body_names(frame, head, head + 1, inst.target, inst.target, else_at=end)
    return _Extent(head, inst.target, carried, temporaries, end)


def body_names(
    frame: Frame,
    head: int,
    low: int,
    high: int,
    exit_at: int,
    *,
    exit_from: int = -1,
    span_end: int | None = None,
    else_at: int | None = None,
    entered: bool = False,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The carried locals and the temporaries of a loop body [low, high) whose loop spans
    [head, exit_at) (or [head, span_end) where the code after it, at `exit_at`, is a copy
    inside the body: a `while True:` on 3.12+); only instruction `exit_from` may jump to
    `exit_at` (a while loop's bottom test). `LoopFallback` for a body that leaves early or
    rebinds cells. `else_at`: where an `else:` clause a break skips ends (a jump there is a
    break too). `entered`: the body runs at least once (`while True:`), so a local first
    bound in it and read after it is carried too (see `while_capture.late_seeds`)."""
    instructions = frame.instructions
    span = exit_at if span_end is None else span_end
    stored: list[str] = []
    first_store: set[str] = set()
    seen: set[str] = set()
    for position in range(low, high):
        body_inst = instructions[position]
        name = body_inst.opname
        target = body_inst.target
        # A jump to the exit is a break and a return may copy the code after the loop
        # (3.12+): the trace tells them apart (see loop_exit).
        breaks_to = target in exit_targets(instructions, exit_at) or (
            target is not None and target == else_at
        )
        if target is not None and not head <= target <= span and not breaks_to:
            raise LoopFallback("it leaves the loop early (a jump past its exit)")
        if name in ("YIELD_VALUE", "RAISE_VARARGS"):
            raise LoopFallback("it leaves the loop early (yield or raise)")
        if name in ("DELETE_FAST", "STORE_DEREF", "DELETE_DEREF", "STORE_GLOBAL"):
            raise LoopFallback(f"{name} inside the loop")
        if body_inst.in_try:
            raise LoopFallback("it runs inside a try block")
        if name == "STORE_FAST":
            if body_inst.argval not in seen:
                first_store.add(body_inst.argval)
            if body_inst.argval not in stored:
                stored.append(body_inst.argval)
        if name in ("STORE_FAST", "LOAD_FAST"):
            seen.add(body_inst.argval)
    starts = (exit_at,) if else_at is None else (exit_at, else_at)  # after a break too
    read_outside = {
        name
        for name in stored
        if any(_read_after(instructions, start, name, head, span) for start in starts)
    }
    state = frame.state
    carried: list[str] = []
    temporaries: list[str] = []
    for name in stored:
        if name in read_outside or name not in first_store:
            if not state.has_local(name) and not (entered and name in read_outside):
                raise LoopFallback(f"{name!r} is assigned in the loop and read after it")
            carried.append(name)
        else:
            temporaries.append(name)
    return tuple(carried), tuple(temporaries)


# NOTE: instructions after which execution does not go on to the next one.
_NO_FALL_THROUGH = ("JUMP", "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE")


def _read_after(
    instructions: Sequence[Instruction], start: int, name: str, head: int, exit_at: int
) -> bool:
    # Whether some path from `start` reads local `name` before storing it (so its value
    # after the loop [head, exit_at) matters). A function with a try block may read it on an
    # exception edge: any read outside the loop counts there.
    if any(inst.in_try for inst in instructions):
        return any(
            inst.opname == "LOAD_FAST" and inst.argval == name
            for position, inst in enumerate(instructions)
            if not head <= position < exit_at
        )
    seen: set[int] = set()
    pending = [start]
    while pending:
        position = pending.pop()
        if position in seen or not 0 <= position < len(instructions):
            continue
        seen.add(position)
        inst = instructions[position]
        if inst.argval == name and inst.opname in ("LOAD_FAST", "DELETE_FAST"):
            return True
        if inst.argval == name and inst.opname == "STORE_FAST":
            continue
        if inst.target is not None:
            pending.append(inst.target)
        if inst.opname not in _NO_FALL_THROUGH:
            pending.append(position + 1)
    return False


def _loaded_names(frame: Frame, extent: _Extent) -> list[str]:
    return loaded_names(frame, extent.head + 1, extent.exit)


def loaded_names(frame: Frame, low: int, high: int) -> list[str]:
    """The locals instructions [low, high) read, in order."""
    names: list[str] = []
    for position in range(low, high):
        inst = frame.instructions[position]
        if inst.opname == "LOAD_FAST" and inst.argval not in names:
            names.append(inst.argval)
    return names


def carried_meta(var: Variable) -> ArrayMeta | ScalarMeta | None:
    if isinstance(var, ArrayVar | ScalarNodeVar):
        return var.node.meta
    if isinstance(var, ScalarInputVar) and type(var.current) in _SCALAR_TYPES:
        return ScalarMeta(type(var.current))
    if isinstance(var, ConstantVar) and type(var.value) in _SCALAR_TYPES:
        return ScalarMeta(type(var.value))
    if isinstance(var, ConstantVar) and _is_numpy_number(var.value):
        return ArrayMeta((), var.value.dtype)  # `crc = np.uint32(0xFFFFFFFF)` before the loop
    return None


def _is_numpy_number(value: Any) -> bool:
    # A NumPy scalar of a bool, integer, float or complex dtype: a 0-d value the loop carries.
    return isinstance(value, np.generic) and value.dtype.kind in "biufc"


def graph_value(var: Variable, tracer: Tracer | None = None) -> Any:
    """The graph input or constant standing for a scalar or array variable (a symbolic
    size computed from the inputs' shapes where `tracer` is given)."""
    if tracer is not None and isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return size_node(tracer, var.value.expr)
    if isinstance(var, ArrayVar | ScalarNodeVar):
        return var.node
    if isinstance(var, ScalarInputVar):
        return var.node()
    if isinstance(var, ConstantVar) and type(var.value) in _SCALAR_TYPES:
        return var.value
    if isinstance(var, ConstantVar) and _is_numpy_number(var.value):
        return var.value
    raise LoopFallback(f"the loop makes {var.describe()}")


def variable_of(node: Node) -> Variable:
    """An array variable for an array node, a run-time scalar for a Python scalar node."""
    return ArrayVar(node) if isinstance(node.meta, ArrayMeta) else ScalarNodeVar(node)


def meta_of_value(value: Any) -> ArrayMeta | ScalarMeta:
    if isinstance(value, Node):
        return value.meta
    return ScalarMeta(type(value))


def scalar_like(var: Variable) -> bool:
    # A NumPy or Python scalar (not a 0-d array): `s += v` on it makes a new value.
    if isinstance(var, ArrayVar):
        return var.meta.shape == () and gives_scalar(var.node)
    return True


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
    low, high = range_bounds(*(_bound_expr(bound) for bound in bounds))
    with index_scope(active_shape_env(), low, high) as symbol:
        return _trace_indexed_body(frame, extent, metas, scalars, over, symbol)


def _bound_expr(var: Variable) -> Any:
    # A range bound as a sympy expression over sizes and outer indices, or None.
    if isinstance(var, ScalarNodeVar):
        return var.expr
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return var.value.expr
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return var.value
    return None


def _trace_indexed_body(
    frame: Frame,
    extent: _Extent,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
    over: ArrayVar | ZipVar | None,
    symbol: Any,
) -> tuple[Graph, list[Any]]:
    tracer = frame.tracer
    outer = tracer.graph
    body = Graph()
    index_name = _index_name(frame, extent) if over is None else "i"
    index = body.placeholder(index_name, ScalarMeta(int))
    for name, meta in metas.items():
        placeholder = body.placeholder(name, meta)
        if name in scalars and isinstance(meta, ArrayMeta):
            placeholder = body.call(get_op("carried_scalar"), placeholder)
        frame.state.locals[name] = variable_of(placeholder)
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
    while frame.pc != stop:
        if loop is not None and loop.forever and frame.pc == loop.low and frame.pc != low:
            frame.pc = loop.stop  # a `while True:` body's back jump (or `continue`)
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
            raise LoopFallback(exc.reason) from None
        except NotConstantError as exc:
            raise LoopFallback(f"it needs the value of {exc} at capture time") from None
        except Exception as exc:
            raise LoopFallback(f"{type(exc).__name__}: {exc}") from None
        frame.locate(nodes_before, inst)
        if frame.result is not None or frame.yielded is not None:
            raise LoopFallback("it leaves the loop early (break or return)")
    if loop is not None and loop.ends_forever(frame, stop):
        frame.state.push(ConstantVar(True))  # a `while True:` body's test: go on


def is_run_time(var: Variable) -> bool:
    """Whether `var`'s value exists only at run time: a run-time scalar or a 0-d array."""
    if isinstance(var, ScalarNodeVar):
        return True
    return isinstance(var, ArrayVar) and var.meta.shape == ()


def widen(
    metas: dict[str, ArrayMeta | ScalarMeta], results: list[Any]
) -> dict[str, ArrayMeta | ScalarMeta]:
    widened: dict[str, ArrayMeta | ScalarMeta] = {}
    for (name, before), value in zip(metas.items(), results, strict=True):
        widened[name] = join_metas(name, before, meta_of_value(value))
    return widened


def join_metas(name: str, before: ArrayMeta | ScalarMeta, after: ArrayMeta | ScalarMeta) -> Any:
    """The metadata covering both `before` and `after` (a Python scalar joins the NumPy
    scalar it becomes); `LoopFallback` when none does (an array changing shape)."""
    if before == after:
        return before
    if isinstance(before, ScalarMeta) and isinstance(after, ScalarMeta):
        order = (bool, int, float, complex)
        if before.type in order and after.type in order:
            return max(before, after, key=lambda meta: order.index(meta.type))
        raise LoopFallback(f"{name!r} changes from {before} to {after} in the loop")
    if isinstance(after, ScalarMeta):
        raise LoopFallback(f"{name!r} changes from {before} to a Python {after} in the loop")
    if isinstance(before, ScalarMeta):
        if after.shape != ():
            raise LoopFallback(f"{name!r} changes from a Python {before} to {after}")
        return attrs.evolve(after, strides=None)
    if tuple(before.shape) != tuple(after.shape) or before.device != after.device:
        raise LoopFallback(f"the carried array {name!r} changes shape: {before} to {after}")
    strides = before.strides if before.strides == after.strides else None
    return attrs.evolve(after, strides=strides)


def _emit_loop(
    frame: Frame,
    extent: _Extent,
    iterator: RangeIterVar,
    traced: tuple[Graph | None, Graph],
    metas: dict[str, ArrayMeta | ScalarMeta],
) -> None:
    tracer = frame.tracer
    bounds = tuple(_bound_value(tracer, bound) for bound in iterator.bounds)
    breaks = any(len(graph.output) > len(metas) for graph in traced if graph is not None)
    for graph in traced:
        if breaks and graph is not None and len(graph.output) == len(metas):
            graph.output = (*graph.output, False)  # a trace that never reached its break
    first, body, invariants = peeled_first(traced, 1 + len(metas))
    state = frame.state
    initial = [graph_value(state.locals[name], frame.tracer) for name in metas]
    # NOTE: placeholder k is input 2 + k (after the bounds).
    written = tuple(
        sorted({*written_inputs(body, 2), *(written_inputs(first, 2) if first else ())})
    )
    outputs = add_loop(
        tracer.graph, bounds, initial, invariants, body, written, first=first, breaks=breaks
    )
    line = frame.locate_line(frame.instructions[extent.head])
    if line is not None:
        for node in tracer.graph.nodes[-1 - len(outputs) :]:
            tracer.graph.locations.setdefault(node, line)
    for name, node in zip(metas, outputs, strict=True):
        state.locals[name] = variable_of(node)
    state.pop()  # the iterator
    frame.pc = extent.exit
    log.debug("loop at line %s kept as one for_loop node", frame.instructions[extent.head].lineno)


def peeled_first(
    traced: tuple[Graph | None, Graph], own: int
) -> tuple[Graph | None, Graph, list[Node]]:
    """The first iteration's body (None when the types do not change) and the body, lifted
    over the same invariants. Carried values that start as Python scalars and become NumPy
    scalars (`s = 0.0; s = s * 0.5 - x[i]`) follow Python in the first iteration and NumPy
    after it, as eager does: the first body is traced on the initial types."""
    first, body = traced
    external = external_nodes(body)
    if first is not None:
        external += [node for node in external_nodes(first) if node not in external]
    lifted, invariants = lift_body(body, own, external)
    lifted_first = None if first is None else lift_body(first, own, external)[0]
    return lifted_first, lifted, invariants


def _bound_value(tracer: Tracer, var: Variable) -> Any:
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return size_node(tracer, var.value.expr)
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return var.value
    if isinstance(var, ScalarInputVar | ScalarNodeVar):
        return graph_value(var)
    raise LoopFallback(f"a range bound {var.describe()}")


def size_node(tracer: Tracer, expr: Any) -> Any:
    """A graph value computing the symbolic size `expr` at run time from the inputs' shapes."""
    import sympy  # late import: only symbolic trip counts need it

    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        for placeholder in tracer.builder.graph.placeholders:
            shape = getattr(placeholder.meta, "shape", ())
            for axis, size in enumerate(shape):
                if not isinstance(size, int) and size == expr:
                    return tracer.graph.call(get_op("dim"), placeholder, axis=axis)
        raise LoopFallback(f"no input has the size {expr}")
    if isinstance(expr, sympy.floor | sympy.Mod):
        # `n // k` (sympy's floor(n/k)) and `n % k` of a size by a positive constant.
        if isinstance(expr, sympy.floor):
            numerator, denominator = expr.args[0].as_numer_denom()
            op = "floordiv"
        else:
            numerator, denominator = expr.args
            op = "mod"
        if denominator.is_Integer and denominator > 0:
            return tracer.graph.call(
                get_op("py_binary"), size_node(tracer, numerator), int(denominator), operator=op
            )
    if isinstance(expr, sympy.Add | sympy.Mul):
        op = "add" if isinstance(expr, sympy.Add) else "mul"
        parts = [size_node(tracer, arg) for arg in expr.args]
        result = parts[0]
        for part in parts[1:]:
            result = tracer.graph.call(get_op("py_binary"), result, part, operator=op)
        return result
    raise LoopFallback(f"the trip count {expr} is not a sum or product of sizes")


def external_nodes(traced: Graph) -> list[Node]:
    """The nodes of enclosing graphs `traced` reads, in the order it first reads them."""
    inside = set(traced.nodes)
    external: list[Node] = []
    for node in traced.nodes:
        for value in _leaves((node.inputs, node.kwargs)):
            if value not in inside and value not in external:
                external.append(value)
    for value in _leaves(traced.output):
        if value not in inside and value not in external:
            external.append(value)
    return external


def lift_body(
    traced: Graph, own: int, external: list[Node] | None = None
) -> tuple[Graph, list[Node]]:
    """`traced` with every node of an enclosing graph it reads (or every node of
    `external`) made a placeholder after its first `own` placeholders; returns it with
    those nodes (the loop-invariant inputs)."""
    if external is None:
        external = external_nodes(traced)
    body = Graph()
    mapping: dict[Node, Node] = {}
    for placeholder in traced.placeholders[:own]:
        mapping[placeholder] = body.placeholder(placeholder.name, placeholder.meta)
    for value in external:
        mapping[value] = body.placeholder(value.name, value.meta)

    def rename(value: Any) -> Any:
        return mapping.get(value, value) if isinstance(value, Node) else value

    for node in traced.nodes:
        if node.op is None:
            continue
        inputs = tuple(tree_map(rename, list(node.inputs)))
        params = {key: tree_map(rename, value) for key, value in node.params}
        copy = body.add_node(node.op, inputs, params, node.meta)
        mapping[node] = copy
        line = traced.locations.get(node)
        if line is not None:
            body.locations[copy] = line
    body.output = tree_map(rename, traced.output)
    return body, external


def _leaves(tree: Any) -> Iterator[Node]:
    leaves, _ = tree_flatten(tree)
    for leaf in leaves:
        if isinstance(leaf, Node):
            yield leaf


def written_inputs(body: Graph, offset: int) -> tuple[int, ...]:
    """The input positions (a body's placeholder k is input `offset + k`) of the arrays
    `body` writes in place, through views and the writes of nested loops."""
    placeholders = body.placeholders
    written: list[int] = []
    for node in body.nodes:
        if node.op is None:
            continue
        for position in node.op.mutates:
            root = node.inputs[position]
            while (
                isinstance(root, Node)
                and root.op is not None
                and root.op.kind
                in (
                    OpKind.VIEW,
                    OpKind.MUTATION,
                )
            ):
                root = root.inputs[0]
            if isinstance(root, Node) and root.op is None:
                slot = offset + placeholders.index(root)
                if slot not in written:
                    written.append(slot)
    return tuple(sorted(written))


# -- undoing an abandoned body trace ---------------------------------------------------------


class Snapshot:
    """The frame and the Python containers it reaches, to restore after a body's trace."""

    def __init__(self, frame: Frame) -> None:
        state = frame.state
        self.pc = frame.pc
        self.ends = (frame.result, frame.yielded)
        self.stack = list(state.stack)
        self.locals = dict(state.locals)
        effects = frame.tracer.side_effects
        self.effects = len(effects.effects)
        self.globals = dict(effects.globals)
        self.attributes = dict(effects.attributes)
        self.contents: list[tuple[Variable, Any]] = []
        seen: set[int] = set()
        for var in [*self.stack, *self.locals.values()]:
            self._visit(var, seen)

    @classmethod
    def take(cls, frame: Frame) -> Snapshot:
        return cls(frame)

    def _visit(self, var: Variable, seen: set[int]) -> None:
        if id(var) in seen:
            return
        seen.add(id(var))
        if isinstance(var, ListVar):
            self.contents.append((var, list(var.items)))
            children: list[Variable] = list(var.items)
        elif isinstance(var, DictVar):
            self.contents.append((var, dict(var.items)))
            children = list(var.items.values())
        elif isinstance(var, ObjectVar):
            self.contents.append((var, dict(var.attributes)))
            children = list(var.attributes.values())
        elif isinstance(var, CellVar):
            self.contents.append((var, var.contents))
            children = [var.contents] if var.contents is not None else []
        elif isinstance(var, TupleVar):
            children = list(var.items)
        elif isinstance(var, IteratorVar):
            self.contents.append((var, var.position))
            children = list(var.items)
        else:
            children = []
        for child in children:
            self._visit(child, seen)

    def changed(self) -> bool:
        """Whether a container, object, cell or side effect changed since the snapshot."""
        return any(_content(var) != before for var, before in self.contents)

    def restore(self, frame: Frame) -> None:
        changed = self.changed()
        effects = frame.tracer.side_effects
        grew = len(effects.effects) != self.effects or effects.globals != self.globals
        state = frame.state
        frame.pc = self.pc
        frame.result, frame.yielded = self.ends
        state.stack[:] = self.stack
        state.locals.clear()
        state.locals.update(self.locals)
        del effects.effects[self.effects :]
        effects.globals.clear()
        effects.globals.update(self.globals)
        effects.attributes.clear()
        effects.attributes.update(self.attributes)
        for var, before in self.contents:
            _set_content(var, before)
        if changed or grew:
            raise LoopFallback("it changes a Python container, object or global")


def _content(var: Variable) -> Any:
    if isinstance(var, ListVar):
        return list(var.items)
    if isinstance(var, DictVar):
        return dict(var.items)
    if isinstance(var, ObjectVar):
        return dict(var.attributes)
    if isinstance(var, CellVar):
        return var.contents
    if isinstance(var, IteratorVar):
        return var.position
    return None


def _set_content(var: Variable, before: Any) -> None:
    if isinstance(var, ListVar):
        var.items[:] = before
    elif isinstance(var, DictVar):
        var.items.clear()
        var.items.update(before)
    elif isinstance(var, ObjectVar):
        var.attributes.clear()
        var.attributes.update(before)
    elif isinstance(var, CellVar):
        var.contents = before
    elif isinstance(var, IteratorVar):
        var.position = before
