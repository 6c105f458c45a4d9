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

A break cannot resume everywhere: inside a loop body the tracer unrolls,
inside a `try` or `with` block, or where a live value cannot be rebuilt,
`capture_with_breaks` raises `Unsupported` and the whole function runs
eagerly, with that reason.

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

import logging
import types
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from numpile_guards import Guard, LocalSource, Source

from .bytecode import Instruction, normalized_instructions
from .capture_result import CaptureResult, Unsupported
from .frame import BreakAt, Frame, ReturnWithEffects, StopAtBreak
from .graph import Graph, Node
from .resume_code import STACK_PREFIX, BreakSite, break_code, resume_code
from .side_effects import AttributeWrite, ContainerWrite, SideEffects
from .trace_rules import rule_for
from .tracer import Tracer, _default_bindings, _is_library_code, capture_function
from .variables import (
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    CellVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    ListVar,
    ModuleVar,
    NullVar,
    OpaqueVar,
    TupleVar,
    Variable,
)

log = logging.getLogger("numpile.capture.graph_breaks")

# -- the rebuild program: steps that make the live Python values at the break --------------


@attrs.frozen
class FromGraph:
    """Output `index` of the graph."""

    index: int


@attrs.frozen
class FromInput:
    """Value `index` of the fetched values that are not graph inputs."""

    index: int


@attrs.frozen
class Constant:
    """A value known at capture time (and guarded)."""

    value: Any


@attrs.frozen
class Build:
    """A new tuple, list or dict (`kind`) of earlier slots (`keys` for dicts)."""

    kind: type
    slots: tuple[int, ...]
    keys: tuple[Any, ...] = ()


@attrs.frozen
class GetAttr:
    """`slots[slot].name` (a bound method live at the break)."""

    slot: int
    name: str


@attrs.frozen
class CompiledCallee:
    """A user function called at the break: it runs compiled on its own."""

    # NOTE: a FunctionType; typed Any because mypy binds FunctionType attributes.
    fn: Any


@attrs.frozen
class MakeFunction:
    """A function the captured code defined (a lambda, a nested def without cells)."""

    code: types.CodeType
    globals: dict[str, Any] = attrs.field(repr=False)
    defaults: int | None
    kwdefaults: int | None


Step = FromGraph | FromInput | Constant | Build | GetAttr | CompiledCallee | MakeFunction


@attrs.frozen
class Replay:
    """One side effect to replay after the graph, on rebuilt values (see `side_effects`).

    kind "contents": `slots[target]` (a list or dict) gets the contents of `slots[value]`;
    "attribute": `setattr(slots[target], name, slots[value])`; "global":
    `globals[name] = slots[value]` (`target` unused).
    """

    kind: str
    target: int
    name: str
    value: int


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
                result = _plan(tracer, stopped.frame, exc, replay_only, split=stop != exc.index)
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
    # Where the graph stops: at the breaking instruction, or before the loop around it.
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
    if code.co_cellvars:
        fail("its locals are captured by an inner function (cells)")
    loop_start = _loop_start(instructions, index)
    if loop_start is not None:
        # The graph ends before the loop; the loop runs in a resume function (eagerly when
        # nothing before its own break can be captured).
        before = loop_start - 1
        if before >= 0 and instructions[before].opname == "GET_ITER":
            loop_start = before
        if instructions[loop_start].in_try:
            fail("the break is inside a loop inside a try or with block")
        return loop_start
    if inst.in_try:
        fail("the break is inside a try or with block")
    return index


def _loop_start(instructions: Sequence[Instruction], index: int) -> int | None:
    # The first instruction of the outermost loop whose body holds `index`, if any.
    start: int | None = None
    for position, inst in enumerate(instructions):
        if inst.target is not None and inst.target <= index <= position:
            start = inst.target if start is None else min(start, inst.target)
    return start


def _index_at(code: types.CodeType, offset: int) -> Instruction | None:
    for inst in normalized_instructions(code):
        if inst.offset >= offset:
            return inst
    return None


class _Planner:
    """Turns variables live at the break into rebuild steps, graph outputs and fetched sources."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.steps: list[Step] = []
        self.outputs: list[Node] = []
        self.extra_sources: list[Source] = []
        self._memo: dict[int, int] = {}
        self._placeholder_sources = dict(
            zip(tracer.graph.placeholders, tracer.builder.input_sources, strict=True)
        )

    def add(self, step: Step) -> int:
        self.steps.append(step)
        return len(self.steps) - 1

    def source(self, source: Source) -> int:
        index = len(self.extra_sources)
        self.extra_sources.append(source)
        return self.add(FromInput(index))

    def callee(self, fn: types.FunctionType) -> int:
        return self.add(CompiledCallee(fn))

    def slot(self, var: Variable) -> int:
        # NOTE: one slot per variable (per node for arrays), so aliases stay the same object.
        key = id(var.node) if isinstance(var, ArrayVar) else id(var)
        found = self._memo.get(key)
        if found is None:
            found = self._make(var)
            self._memo[key] = found
        return found

    def _make(self, var: Variable) -> int:
        if isinstance(var, ArrayVar):
            source = self._placeholder_sources.get(var.node)
            if source is not None:
                return self.source(source)
            self.outputs.append(var.node)
            return self.add(FromGraph(len(self.outputs) - 1))
        if isinstance(var, ConstantVar):
            return self.add(Constant(var.value))
        if isinstance(var, TupleVar | ListVar | DictVar) and var.source is not None:
            return self.source(var.source)
        if isinstance(var, TupleVar):
            return self.add(Build(tuple, tuple(self.slot(item) for item in var.items)))
        if isinstance(var, ListVar):
            return self.add(Build(list, tuple(self.slot(item) for item in var.items)))
        if isinstance(var, DictVar):
            keys = tuple(var.items)
            slots = tuple(self.slot(item) for item in var.items.values())
            return self.add(Build(dict, slots, keys))
        if isinstance(var, FunctionVar) and var.fn is not None:
            return self.source(var.source) if var.source is not None else self._constant(var.fn)
        if isinstance(var, OpaqueVar) and var.source is not None:
            return self.source(var.source)
        if isinstance(var, ModuleVar | CallableVar):
            if var.source is not None:
                return self.source(var.source)
            return self._constant(var.value if isinstance(var, CallableVar) else var.module)
        if isinstance(var, FunctionVar) and not var.closure:
            defaults = None
            if var.defaults:
                defaults = self.add(Build(tuple, tuple(self.slot(item) for item in var.defaults)))
            kwdefaults = None
            if var.kwdefaults:
                keys = tuple(var.kwdefaults)
                values = tuple(self.slot(item) for item in var.kwdefaults.values())
                kwdefaults = self.add(Build(dict, values, keys))
            return self.add(MakeFunction(var.code, var.globals, defaults, kwdefaults))
        if isinstance(var, BoundMethodVar):
            return self.add(GetAttr(self.slot(var.receiver), var.name))
        raise Unsupported(f"not supported yet: keeping {var.describe()} live across a graph break")

    def _constant(self, value: Any) -> int:
        return self.add(Constant(value))


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
    if _is_library_code(candidate.code) or candidate.code.co_flags & 0x20:  # CO_GENERATOR
        return None
    if rule_for(candidate.fn) is not None:
        return None  # disabled, disallowed or graph_break(): it runs as it is
    return position


def _plan(
    tracer: Tracer, frame: Frame, exc: BreakAt, replay_only: bool, *, split: bool
) -> GraphBreak:
    state = frame.state
    code = frame.code
    nulls = tuple(isinstance(value, NullVar) for value in state.stack)
    if split:
        has_ops = any(node.op is not None for node in tracer.graph)
        if not has_ops and not tracer.side_effects.pending:
            raise Unsupported(
                f"{exc.reason}; the break is inside a loop body with nothing to capture before "
                "the loop, so the whole function runs eagerly",
                exc.filename,
                exc.lineno,
            )
        site = BreakSite.before(code, frame.pc, nulls)
    else:
        site = BreakSite.at(code, exc.index, nulls)
    for target in (site.fallthrough, site.jump):
        if target is not None:
            inst = _index_at(code, target.offset)
            if inst is not None and inst.in_try:
                raise Unsupported(
                    f"{exc.reason}; execution would resume inside a try or with block, so the "
                    "whole function runs eagerly",
                    exc.filename,
                    exc.lineno,
                )
    planner = _Planner(tracer)
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
    terminal = site.fallthrough is None and site.jump is None
    for name in [] if terminal else ordered:
        if name.startswith(STACK_PREFIX):
            continue  # stack values a resume function received: dead after its prologue
        if name in state.lazy:
            local_names.append(name)
            local_slots.append(planner.source(LocalSource(name)))
            continue
        local = state.locals.get(name)
        if local is None or isinstance(local, CellVar):
            continue
        local_names.append(name)
        local_slots.append(planner.slot(local))
    effects = tuple(_replays(planner, tracer.side_effects))
    graph = tracer.graph
    graph.output = tuple(planner.outputs)
    inputs = tuple(tracer.builder.input_sources)
    return GraphBreak(
        reason=exc.reason,
        filename=exc.filename,
        lineno=exc.lineno,
        graph=graph,
        guards=tuple(tracer.builder.guards),
        fetch_sources=(*inputs, *planner.extra_sources),
        input_count=len(inputs),
        steps=tuple(planner.steps),
        stack_slots=tuple(stack_slots),
        local_names=tuple(local_names),
        local_slots=tuple(local_slots),
        site=site,
        effects=effects,
        replay_only=replay_only,
    )


def _replays(planner: _Planner, side_effects: SideEffects) -> list[Replay]:
    replays: list[Replay] = []
    for effect in side_effects.effects:
        if isinstance(effect, ContainerWrite):
            container = effect.container
            target = planner.slot(container)
            if isinstance(container, ListVar):
                items = tuple(planner.slot(item) for item in container.items)
                contents = planner.add(Build(list, items))
            else:
                keys = tuple(container.items)
                values = tuple(planner.slot(item) for item in container.items.values())
                contents = planner.add(Build(dict, values, keys))
            replays.append(Replay("contents", target, "", contents))
        elif isinstance(effect, AttributeWrite):
            target = planner.slot(effect.obj)
            replays.append(Replay("attribute", target, effect.name, planner.slot(effect.value)))
        else:
            replays.append(Replay("global", -1, effect.name, planner.slot(effect.value)))
    return replays


# -- at call time --------------------------------------------------------------------------

Wrap = Callable[[types.FunctionType], Callable[..., Any]]


class BreakRunner:
    """The compiled entry of a function that breaks: graph, rebuild, break function.

    `graph_fn` runs the graph (None when it has no operations); `wrap` turns
    a Python function into a compiled one (for resume functions and callees).

        >>> runner = BreakRunner(graph_break, None, fn, wrap)  # doctest: +SKIP
        >>> runner(*fetched)  # doctest: +SKIP
    """

    def __init__(
        self,
        graph_break: GraphBreak,
        graph_fn: Callable[..., Any] | None,
        fn: types.FunctionType,
        wrap: Wrap,
    ) -> None:
        self.graph_break = graph_break
        self.graph_fn = graph_fn
        site = graph_break.site
        names = graph_break.local_names
        resume_next = None
        resume_jump = None
        if site.fallthrough is not None:
            resume_next = wrap(_function(fn, resume_code(fn.__code__, site.fallthrough, names)))
        if site.jump is not None:
            resume_jump = wrap(_function(fn, resume_code(fn.__code__, site.jump, names)))
        self.break_fn = _function(fn, break_code(site, names, resume_next, resume_jump))
        self._values: list[Callable[[list[Any], Any, Sequence[Any]], Any]] = []
        for step in graph_break.steps:
            self._values.append(_runtime_step(step, wrap))
        self._arguments = (*graph_break.stack_slots, *graph_break.local_slots)
        self._input_count = graph_break.input_count
        self._effects = graph_break.effects
        self._globals = fn.__globals__

    def __call__(self, *fetched: Any) -> Any:
        count = self._input_count
        outputs: Any = ()
        if self.graph_fn is not None:
            outputs = self.graph_fn(*fetched[:count])
        extras = fetched[count:]
        slots: list[Any] = []
        for make in self._values:
            slots.append(make(slots, outputs, extras))
        for effect in self._effects:
            _replay(effect, slots, self._globals)
        return self.break_fn(*[slots[index] for index in self._arguments])


def _replay(effect: Replay, slots: list[Any], globals_: dict[str, Any]) -> None:
    value = slots[effect.value]
    if effect.kind == "global":
        globals_[effect.name] = value
    elif effect.kind == "attribute":
        setattr(slots[effect.target], effect.name, value)
    else:
        target = slots[effect.target]
        if isinstance(target, list):
            target[:] = value
        else:
            target.clear()
            target.update(value)


def _function(fn: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    made = types.FunctionType(code, fn.__globals__, code.co_name, None, fn.__closure__)
    made.__qualname__ = f"{fn.__qualname__}.<{code.co_name}>"
    made.__module__ = fn.__module__
    return made


def _function_maker(step: MakeFunction) -> Callable[[list[Any], Any, Sequence[Any]], Any]:
    code, globals_ = step.code, step.globals

    def make(slots: list[Any], outputs: Any, extras: Sequence[Any]) -> Any:
        defaults = None if step.defaults is None else slots[step.defaults]
        made = types.FunctionType(code, globals_, code.co_name, defaults)
        if step.kwdefaults is not None:
            made.__kwdefaults__ = slots[step.kwdefaults]
        made.__qualname__ = code.co_qualname
        return made

    return make


def _runtime_step(step: Step, wrap: Wrap) -> Callable[[list[Any], Any, Sequence[Any]], Any]:
    if isinstance(step, FromGraph):
        index = step.index
        return lambda slots, outputs, extras: outputs[index]
    if isinstance(step, FromInput):
        position = step.index
        return lambda slots, outputs, extras: extras[position]
    if isinstance(step, Constant):
        value = step.value
        return lambda slots, outputs, extras: value
    if isinstance(step, CompiledCallee):
        compiled = wrap(step.fn)
        return lambda slots, outputs, extras: compiled
    if isinstance(step, MakeFunction):
        return _function_maker(step)
    if isinstance(step, GetAttr):
        slot, name = step.slot, step.name
        return lambda slots, outputs, extras: getattr(slots[slot], name)
    items = step.slots
    if step.kind is dict:
        keys = step.keys
        return lambda slots, outputs, extras: {
            key: slots[i] for key, i in zip(keys, items, strict=True)
        }
    kind = step.kind
    return lambda slots, outputs, extras: kind(slots[i] for i in items)
