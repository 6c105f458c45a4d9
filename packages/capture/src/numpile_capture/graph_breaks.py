"""Graph breaks: the graph captured before a break, and how the call continues in Python.

When the tracer meets an instruction of the captured function it cannot
capture (a `print`, an unknown library call, a branch on an array's truth
value, `.item()`), `capture_with_breaks` returns a `GraphBreak` instead of a
`CaptureResult`: the graph of everything before that instruction, its guards,
and a plan to rebuild the Python values live at the break (the value stack
and the locals) from the graph's outputs, the inputs and constants. At call
time the dispatcher runs `BreakRunner`: the compiled graph, the rebuild, then
a generated *break function* that runs the breaking instruction in plain
Python and calls a *resume function* (see `resume_code`) compiled on its own.

Breaks resume inside loops (live iterators are rebuilt over their remaining
items; the resumed loop then steps in Python, resuming in the same code objects
each iteration, with the runner making each resume call in a loop), and inside
`try` and `with` blocks (the break function routes an exception raised by the
breaking instruction to the original handler, run in Python). Where a live
value cannot be rebuilt (a generator already started, an object made by
library code, an inner function closing over this function's locals),
`capture_with_breaks` raises `Unsupported` and the whole function runs
eagerly, with that reason. Locals captured by inner functions (cells) reach a
resume function as values, and its own MAKE_CELL wraps them again.

    >>> import numpy as np
    >>> def f(x):
    ...     y = np.sin(x)
    ...     print("hello")
    ...     return y + 1
    >>> result = capture_with_breaks(f, (np.ones(2),), {})  # doctest: +SKIP
    >>> type(result).__name__, result.reason  # doctest: +SKIP
    ('GraphBreak', 'not supported yet: calling print')
"""

from __future__ import annotations

import dis
import importlib
import logging
import types
from typing import TYPE_CHECKING, Any

import attrs

from numpile_guards import ExpressionSource, Guard, GuardKind, LocalSource, Source
from numpile_guards.symbolic import SymInt

from .bytecode import Instruction, normalized_instructions
from .capture_result import CaptureResult, Unsupported
from .compiled_callees import compiles_callees
from .frame import BreakAt, Frame, ReturnWithEffects, StopAtBreak
from .graph import Graph, Node
from .loop_ranges import RangeIterVar
from .loop_region import LoopRegion
from .loop_sources import ZipVar
from .operators import specialized
from .resume_code import STACK_PREFIX, BreakSite, resumes_in_loop
from .side_effects import AttributeWrite, ContainerWrite, SideEffects
from .trace_rules import rule_for
from .tracer import Tracer, _default_bindings, capture_function
from .user_classes import is_library_code
from .variables import (
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    CellVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    GeneratorVar,
    IteratorVar,
    ListVar,
    MethodVar,
    ModuleVar,
    NullVar,
    ObjectVar,
    OpaqueVar,
    ScalarInputVar,
    ScalarNodeVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .rebuild_steps import Replay, Step

log = logging.getLogger("numpile.capture.graph_breaks")

_LAZY = {"BreakRunner": "break_runner", "MAX_NESTED_RESUMES": "break_runner"}


def __getattr__(name: str) -> Any:
    # NOTE: re-exported lazily, as `rebuild_steps` is imported by the first planned break:
    # their attrs classes cost milliseconds that the first call of a function without a
    # break (a warm start) need not pay.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


class _StepKinds:
    # The classes of `rebuild_steps`, imported when the first break is planned.
    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(f"{__package__}.rebuild_steps"), name)


# NOTE: `make.Build(...)` builds a rebuild step (a late import, see `__getattr__` above).
make = _StepKinds()


@attrs.frozen
class GraphBreak:
    """What capture made of a function that breaks: the graph before the break and the rest.

    `fetch_sources` lists what is fetched at call time: the graph's inputs
    (the first `len(graph.placeholders)`), then values used as they are.
    `steps` rebuild the live values (slot k is made by step k);
    `stack_slots` and `local_slots` pick the break function's arguments.
    """

    reason: str
    filename: str | None
    lineno: int | None
    graph: Graph
    guards: tuple[Guard, ...]
    fetch_sources: tuple[Source, ...]
    input_count: int
    steps: tuple[Step, ...]
    stack_slots: tuple[int, ...]
    local_names: tuple[str, ...]
    local_slots: tuple[int, ...]
    site: BreakSite
    effects: tuple[Replay, ...] = ()
    # NOTE: True when the "break" is only a return that replays side effects first.
    replay_only: bool = False
    # NOTE: the loop run whole in Python when the break is at its head (`loop_region`).
    region: LoopRegion | None = None

    @property
    def op_count(self) -> int:
        """Operations in the graph (placeholders excluded)."""
        return sum(1 for node in self.graph if node.op is not None)

    def where(self) -> str:
        """`file:line` of the break in the user's code."""
        return f"{self.filename}:{self.lineno}"


def capture_with_breaks(
    fn: types.FunctionType,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    fullgraph: bool = False,
) -> CaptureResult | GraphBreak:
    """Capture `fn` on its arguments; at the first graph break, return a `GraphBreak`.

    Raises `Unsupported` when the break cannot be resumed (the function then
    runs eagerly), or at any break with `fullgraph=True`; propagates
    exceptions of invalid programs. A function that returns with side effects
    also gives a `GraphBreak` (`replay_only`): its return runs in Python.
    """
    try:
        return capture_function(fn, args, kwargs)
    except BreakAt as exc:
        replay_only = isinstance(exc, ReturnWithEffects)
        if fullgraph and not replay_only:
            raise
        where = f"{exc.filename}:{exc.lineno}"
        stop = _resume_point(fn.__code__, exc)
        tracer = Tracer(fn, _default_bindings(), stop_at=stop)
        try:
            tracer.run(args, kwargs)
        except StopAtBreak as stopped:
            try:
                result = _plan(tracer, stopped.frame, exc, replay_only)
            except Unsupported as why:
                if why.filename is not None:
                    raise
                text = f"{exc.reason}; {why.reason}, so the whole function runs eagerly"
                raise Unsupported(text, exc.filename, exc.lineno) from None
            if not replay_only:
                log.info("graph break in %s at %s: %s", fn.__qualname__, where, exc.reason)
            return result
        raise Unsupported(
            f"{exc.reason} (capture did not reach the break again)", exc.filename, exc.lineno
        ) from None


def _resume_point(code: types.CodeType, exc: BreakAt) -> int:
    # Where the graph stops: at the breaking instruction, when execution can resume after it.
    instructions = normalized_instructions(code)
    index, reason = exc.index, exc.reason
    inst = instructions[index]
    where = f"{exc.filename}:{exc.lineno}"
    line = (exc.filename, exc.lineno)

    def fail(why: str) -> None:
        log.info("graph break at %s: %s; %s, so it runs eagerly", where, reason, why)
        raise Unsupported(f"{reason}; {why}, so the whole function runs eagerly", *line)

    if inst.opname in ("RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS"):
        return index  # nothing resumes after it: loops and cells do not matter
    if code.co_cellvars and any(name in _CELL_OPS for name in _group_names(code, index)):
        fail("the breaking instruction reads a local captured by an inner function (a cell)")
    return index


def _group_names(code: types.CodeType, index: int) -> list[str]:
    # The raw opnames of normalized instruction `index` (what a break function copies).
    instructions = normalized_instructions(code)
    previous = instructions[index - 1].offset if index > 0 else -1
    offset = instructions[index].offset
    return [i.opname for i in dis.get_instructions(code) if previous < i.offset <= offset]


# NOTE: a cell variable of the frame is live after a break when one of these reads it; a
# resume function gets its value as a parameter and makes its own cell (MAKE_CELL).
_CELL_OPS = frozenset({"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE"})
_READS = frozenset({"LOAD_FAST", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"})
_READS |= {"LOAD_DEREF", "DELETE_DEREF", "LOAD_CLOSURE"}
_WRITES = frozenset({"STORE_FAST", "STORE_DEREF"})
_NO_FALLTHROUGH = frozenset({"JUMP", "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"})


def _names_read_after(code: types.CodeType, index: int) -> set[str]:
    # Locals live at `index`: read on some path from it before being written (backward
    # dataflow over the normalized instructions, loops included).
    instructions = normalized_instructions(code)
    if any(inst.in_try for inst in instructions):
        # Handlers are reached from anywhere in their block: every local read counts.
        return {inst.argval for inst in instructions if inst.opname in _READS}
    count = len(instructions)
    live: list[set[str]] = [set() for _ in range(count + 1)]
    changed = True
    while changed:
        changed = False
        for position in reversed(range(count)):
            inst = instructions[position]
            after: set[str] = set()
            if inst.opname not in _NO_FALLTHROUGH:
                after |= live[position + 1]
            if inst.target is not None:
                after |= live[inst.target]
            if inst.opname in _WRITES:
                after = after - {inst.argval}
            if inst.opname in _READS:
                after = after | {inst.argval}
            if after != live[position]:
                live[position] = after
                changed = True
    return live[max(index, 0)]


_CELL_WRITES = frozenset({"STORE_DEREF", "DELETE_DEREF"})


def _cells_rebound_after(code: types.CodeType, index: int) -> set[str]:
    # Cell variables some instruction reachable from `index` assigns (or deletes).
    instructions = normalized_instructions(code)
    if any(inst.in_try for inst in instructions):
        return {inst.argval for inst in instructions if inst.opname in _CELL_WRITES}
    seen: set[int] = set()
    todo = [index]
    while todo:
        position = todo.pop()
        if position in seen or position >= len(instructions):
            continue
        seen.add(position)
        inst = instructions[position]
        if inst.opname not in _NO_FALLTHROUGH:
            todo.append(position + 1)
        if inst.target is not None:
            todo.append(inst.target)
    return {instructions[i].argval for i in seen if instructions[i].opname in _CELL_WRITES}


def _shareable(var: Variable | None) -> bool:
    # Values a rebuilt closure and a resume function may each hold in their own cell: never
    # mutated through one and read through the other (arrays alias-check at run time).
    if var is None or isinstance(var, ConstantVar | ScalarInputVar | ArrayVar | FunctionVar):
        return True
    return isinstance(var, TupleVar) and all(_shareable(item) for item in var.items)


def _assigns_free_variable(code: types.CodeType, name: str) -> bool:
    # Whether `code`, or code nested in it, assigns or deletes variable `name` of a closure.
    for inst in dis.get_instructions(code):
        if inst.opname in _CELL_WRITES and inst.argval == name:
            return True
    nested = (const for const in code.co_consts if isinstance(const, types.CodeType))
    return any(_assigns_free_variable(inner, name) for inner in nested)


def _index_at(code: types.CodeType, offset: int) -> Instruction | None:
    for inst in normalized_instructions(code):
        if inst.offset >= offset:
            return inst
    return None


class _Planner:
    """Turns variables live at the break into rebuild steps, graph outputs and fetched sources.

    `own_cells` maps the frame's own cells (by id) to their variable names; `rebound` names
    the cell variables the frame may assign again after the break.
    """

    def __init__(
        self,
        tracer: Tracer,
        own_cells: dict[int, str] | None = None,
        rebound: set[str] | None = None,
        fetch_constants: bool = False,
    ) -> None:
        self.tracer = tracer
        self.steps: list[Step] = []
        self.outputs: list[Node] = []
        self.extra_sources: list[Source] = []
        self._memo: dict[int, int] = {}
        self._own_cells = own_cells or {}
        self._rebound = rebound or set()
        # Constants read from a source are fetched again at call time (not baked in).
        self._fetch_constants = fetch_constants
        self._placeholder_sources = dict(
            zip(tracer.graph.placeholders, tracer.builder.input_sources, strict=True)
        )

    def add(self, step: Step) -> int:
        self.steps.append(step)
        return len(self.steps) - 1

    def source(self, source: Source) -> int:
        index = len(self.extra_sources)
        self.extra_sources.append(source)
        return self.add(make.FromInput(index))

    def callee(self, fn: types.FunctionType) -> int:
        return self.add(make.CompiledCallee(fn))

    def slot(self, var: Variable) -> int:
        # NOTE: one slot per variable (per node for arrays), so aliases stay the same object.
        key = id(var.node) if isinstance(var, ArrayVar) else id(var)
        found = self._memo.get(key)
        if found is None:
            found = self._make(var)
            self._memo[key] = found
        return found

    def _make(self, var: Variable) -> int:
        if isinstance(var, ScalarNodeVar):
            self.outputs.append(var.node)  # a Python scalar a loop computed
            return self.add(make.FromGraph(len(self.outputs) - 1))
        if isinstance(var, ArrayVar):
            source = self._placeholder_sources.get(var.node)
            if source is not None:
                return self.source(source)
            self.outputs.append(var.node)
            return self.add(make.FromGraph(len(self.outputs) - 1))
        if isinstance(var, ConstantVar) and self._fetch_constants and var.source is not None:
            return self.source(var.source)
        if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
            # A symbolic size (a loop's trip count) is read from the inputs' sizes on each
            # call, not pinned to the int it is now.
            return self.source(ExpressionSource(var.value.env.render(var.value.expr)))
        if isinstance(var, ConstantVar):
            # A symbolic size lives on as the int it is now (guarded).
            return self.add(make.Constant(specialized(var.value)))
        if isinstance(var, ScalarInputVar):
            assert var.source is not None
            return self.source(var.source)
        if isinstance(var, TupleVar | ListVar | DictVar) and var.source is not None:
            return self.source(var.source)
        if isinstance(var, TupleVar):
            return self.add(make.Build(tuple, tuple(self.slot(item) for item in var.items)))
        if isinstance(var, ListVar):
            return self.add(make.Build(list, tuple(self.slot(item) for item in var.items)))
        if isinstance(var, DictVar):
            keys = tuple(var.items)
            slots = tuple(self.slot(item) for item in var.items.values())
            return self.add(make.Build(dict, slots, keys))
        if isinstance(var, FunctionVar) and var.fn is not None:
            return self.source(var.source) if var.source is not None else self._constant(var.fn)
        if isinstance(var, OpaqueVar) and var.source is not None:
            return self.source(var.source)
        if isinstance(var, ModuleVar | CallableVar):
            if var.source is not None:
                return self.source(var.source)
            return self._constant(var.value if isinstance(var, CallableVar) else var.module)
        if isinstance(var, FunctionVar) and not var.closure:
            return self._closure(var)  # a function made here that closes over nothing
        if isinstance(var, BoundMethodVar):
            return self.add(make.GetAttr(self.slot(var.receiver), var.name))
        if isinstance(var, MethodVar):
            return self.add(make.GetAttr(self.slot(var.this), var.name))
        if isinstance(var, ObjectVar):
            return self._object(var)
        if isinstance(var, GeneratorVar):
            if var.started or var.call is None:
                raise Unsupported(
                    "not supported yet: keeping a running generator live across a graph break"
                )
            fn, args, kwargs = var.call
            return self.add(
                make.Call(
                    self.slot(fn),
                    tuple(self.slot(arg) for arg in args),
                    tuple(kwargs),
                    tuple(self.slot(value) for value in kwargs.values()),
                )
            )
        if isinstance(var, ZipVar):
            # `enumerate` / `zip` of arrays a loop not kept iterates: made again, lazily.
            sources = tuple(self.slot(source) for source in var.sources)
            if var.start is not None:
                start = self._constant(var.start)
                return self.add(make.Call(self._constant(enumerate), sources, ("start",), (start,)))
            keys, values = (("strict",), (self._constant(True),)) if var.strict else ((), ())
            return self.add(make.Call(self._constant(zip), sources, keys, values))
        if isinstance(var, RangeIterVar):
            # A loop not kept breaks at its head past the unroll budget (unroll_budget):
            # its iterator is made again, over the range or the array's rows.
            if var.over is not None:
                return self.add(make.MakeIterator(self.slot(var.over)))
            bounds = tuple(self.slot(bound) for bound in var.bounds)
            return self.add(make.MakeIterator(self.add(make.Call(self._constant(range), bounds))))
        if isinstance(var, IteratorVar):
            rest = tuple(self.slot(item) for item in var.items[var.position :])
            return self.add(make.MakeIterator(self.add(make.Build(list, rest))))
        if isinstance(var, FunctionVar) and self._rebuildable_closure(var):
            return self._closure(var)
        if isinstance(var, FunctionVar):
            raise Unsupported(
                "not supported yet: keeping an inner function that closes over locals (cells) "
                "live across a graph break, where the function or the rest of the frame "
                "assigns them again"
            )
        raise Unsupported(f"not supported yet: keeping {var.describe()} live across a graph break")

    def _rebuildable_closure(self, var: FunctionVar) -> bool:
        # The rebuilt function gets fresh cells, and the resume function makes its own: safe
        # when neither side can rebind the variables, so both cells keep the same object.
        # The contents must not be a list, dict or object the resume function could mutate:
        # it would read them through two sources that capture does not know are one object.
        if var.fn is not None:
            return False
        for name, cell in zip(var.code.co_freevars, var.closure, strict=True):
            own = self._own_cells.get(id(cell))
            if own is None or own in self._rebound or _assigns_free_variable(var.code, name):
                return False
            assert isinstance(cell, CellVar)
            if not _shareable(cell.contents):
                return False
        return True

    def _closure(self, var: FunctionVar) -> int:
        cells = tuple(self.add(make.MakeCell()) for _ in var.closure)
        defaults = None
        if var.defaults:
            defaults = self.add(make.Build(tuple, tuple(self.slot(item) for item in var.defaults)))
        kwdefaults = None
        if var.kwdefaults:
            keys = tuple(var.kwdefaults)
            values = tuple(self.slot(item) for item in var.kwdefaults.values())
            kwdefaults = self.add(make.Build(dict, values, keys))
        index = self.add(make.MakeFunction(var.code, var.globals, defaults, kwdefaults, cells))
        # NOTE: registered before the cells are filled: a function may refer to itself.
        self._memo[id(var)] = index
        for cell, slot in zip(var.closure, cells, strict=True):
            assert isinstance(cell, CellVar)
            if cell.contents is not None:
                self.add(make.FillCell(slot, self.slot(cell.contents)))
        return index

    def _object(self, var: ObjectVar) -> int:
        # The object's slot exists before its attributes are made: they may refer back to it.
        index = self.add(make.NewObject(var.cls))
        self._memo[id(var)] = index
        values = tuple(self.slot(value) for value in var.attributes.values())
        self.add(make.SetAttributes(index, tuple(var.attributes), values))
        return index

    def _constant(self, value: Any) -> int:
        return self.add(make.Constant(value))


def _callee_position(frame: Frame, site: BreakSite) -> int | None:
    # The stack position of a user function called by the breaking CALL: it runs compiled.
    if not site.group:
        return None
    last = site.group[-1]
    stack = frame.state.stack
    if last.name == "CALL":
        base = len(stack) - int(last.arg) - 2
    elif last.name == "CALL_KW":
        base = len(stack) - int(last.arg) - 3
    else:
        return None
    if base < 0:
        return None
    position = base + 1 if isinstance(stack[base], NullVar) else base
    candidate = stack[position]
    if not isinstance(candidate, FunctionVar) or candidate.fn is None:
        return None
    if is_library_code(candidate.code) or candidate.code.co_flags & 0x20:  # CO_GENERATOR
        return None
    if rule_for(candidate.fn) is not None and not compiles_callees(candidate.fn):
        return None  # disabled, disallowed or graph_break(): it runs as it is
    return position


def _plan(tracer: Tracer, frame: Frame, exc: BreakAt, replay_only: bool) -> GraphBreak:
    state = frame.state
    code = frame.code
    nulls = tuple(isinstance(value, NullVar) for value in state.stack)
    site = BreakSite.at(code, exc.index, nulls)
    own_cells = {
        id(cell): name
        for name in code.co_cellvars
        if isinstance(cell := state.locals.get(name), CellVar)
    }
    at_entry = not replay_only and _breaks_at_resume_entry(tracer, frame, exc)
    planner = _Planner(tracer, own_cells, _cells_rebound_after(code, frame.pc), at_entry)
    callee = _callee_position(frame, site)
    stack_slots: list[int] = []
    for position, value in enumerate(state.stack):
        if isinstance(value, NullVar):
            continue
        if position == callee:
            assert isinstance(value, FunctionVar)
            stack_slots.append(planner.callee(value.fn))
        else:
            stack_slots.append(planner.slot(value))
    local_names: list[str] = []
    local_slots: list[int] = []
    ordered = [*code.co_varnames, *(name for name in state.locals if name not in code.co_varnames)]
    terminal = site.fallthrough is None and site.jump is None and site.handler is None
    live = _names_read_after(code, frame.pc)
    for name in [] if terminal else ordered:
        if name.startswith(STACK_PREFIX):
            continue  # stack values a resume function received: dead after its prologue
        if name not in live:
            continue  # never read again: not rebuilt (a running generator may stay behind)
        if name in state.lazy:
            local_names.append(name)
            local_slots.append(planner.source(LocalSource(name)))
            continue
        local = state.locals.get(name)
        if isinstance(local, CellVar) and name in code.co_cellvars:
            local = local.contents  # the resume function makes its own cell around it
        if local is None or isinstance(local, CellVar):
            continue
        local_names.append(name)
        local_slots.append(planner.slot(local))
    region = None
    reason = exc.reason
    if exc.whole_loop:
        try:
            region = LoopRegion.at(site, local_names, lambda at: _names_read_after(code, at))
        except Unsupported as why:
            # Its FOR_ITER breaks alone: the body's pieces compile, as for array work.
            reason = f"{reason} (it cannot: {why.reason}; its body compiles instead)"
    effects = tuple(_replays(planner, tracer.side_effects))
    graph = tracer.graph
    graph.output = tuple(planner.outputs)
    inputs = tuple(tracer.builder.input_sources)
    return GraphBreak(
        reason=reason,
        filename=exc.filename,
        lineno=exc.lineno,
        graph=graph,
        guards=_by_type(tracer.builder.guards) if at_entry else tuple(tracer.builder.guards),
        fetch_sources=(*inputs, *planner.extra_sources),
        input_count=len(inputs),
        steps=tuple(planner.steps),
        stack_slots=tuple(stack_slots),
        local_names=tuple(local_names),
        local_slots=tuple(local_slots),
        site=site,
        effects=effects,
        replay_only=replay_only,
        region=region,
    )


def _breaks_at_resume_entry(tracer: Tracer, frame: Frame, exc: BreakAt) -> bool:
    # A resume function inside a loop that breaks at the very instruction it resumes at,
    # before any operation: nothing was decided on the values of its parameters, and the
    # instruction runs in Python whatever they are, so they need not be guarded equal (a
    # string `json.dumps` made, passed on to `json.loads`, differs in every iteration).
    if not frame.is_root or not resumes_in_loop(frame.code) or tracer.side_effects.effects:
        return False
    if any(node.op is not None for node in tracer.graph):
        return False
    instructions = normalized_instructions(frame.code)
    entry = next((inst.target for inst in instructions if inst.target is not None), None)
    return entry == exc.index


# NOTE: constants a break at a resume function's entry passes on, guarded by type only.
_PASSED_ON = (str, bytes, int, float, complex)


def _by_type(guards: list[Guard]) -> tuple[Guard, ...]:
    # The guards of a break at a resume function's entry: its parameters' values by type.
    kept: list[Guard] = []
    for guard in guards:
        expected = guard.expected
        if guard.kind is GuardKind.EQUALS_MATCH and type(expected) in _PASSED_ON:
            guard = Guard(GuardKind.TYPE_MATCH, guard.source, type(expected))
        if guard not in kept:
            kept.append(guard)
    return tuple(kept)


def _replays(planner: _Planner, side_effects: SideEffects) -> list[Replay]:
    replays: list[Replay] = []
    for effect in side_effects.effects:
        if isinstance(effect, ContainerWrite):
            container = effect.container
            target = planner.slot(container)
            if isinstance(container, ListVar):
                items = tuple(planner.slot(item) for item in container.items)
                contents = planner.add(make.Build(list, items))
            else:
                keys = tuple(container.items)
                values = tuple(planner.slot(item) for item in container.items.values())
                contents = planner.add(make.Build(dict, values, keys))
            replays.append(make.Replay("contents", target, "", contents))
        elif isinstance(effect, AttributeWrite):
            target = planner.slot(effect.obj)
            value = planner.slot(effect.value)
            replays.append(make.Replay("attribute", target, effect.name, value))
        else:
            replays.append(make.Replay("global", -1, effect.name, planner.slot(effect.value)))
    return replays
