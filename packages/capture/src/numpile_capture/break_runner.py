"""At call time: the compiled entry of a function that graph-breaks.

`BreakRunner` runs the graph before the break, the rebuild program (`rebuild_steps`), the
side-effect replays, then the break function, which runs the breaking instruction in Python
and hands back a `TailCall` of the resume function (compiled by `wrap`, or plain past
`MAX_NESTED_RESUMES` nested breaks). The runner makes that call, and the calls it hands back
in turn, in a loop: a resume function that breaks again returns its own TailCall to this
loop (`run_tail`) instead of making it, so a loop that breaks in every iteration runs at
constant Python stack depth.

    >>> MAX_NESTED_RESUMES > 8
    True
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .compiled_callees import compiles_callees, compiling_callees
from .rebuild_steps import (
    Build,
    Call,
    CompiledCallee,
    Constant,
    FillCell,
    FromGraph,
    FromInput,
    GetAttr,
    MakeCell,
    MakeFunction,
    MakeIterator,
    NewObject,
    Replay,
    SetAttributes,
    Step,
)
from .recursion_allowance import DEEP, narrow, units_at, widen
from .resume_code import TailCall, break_code, mark_loop_exit, resume_code

if TYPE_CHECKING:
    from .graph_breaks import GraphBreak
    from .loop_region import LoopRegion

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
        region = graph_break.region
        if region is not None:
            # The whole loop runs in Python; each exit continues in a compiled resume function.
            self.break_fn = _function(fn, region.code(_exit_resumes(fn, region, wrap)))
            self.eager_break_fn = _function(fn, region.code(_exit_resumes(fn, region, None)))
            self._prepare(graph_break, fn, wrap)
            return
        resume_next = None
        resume_jump = None
        if site.fallthrough is not None:
            resume_next = wrap(_function(fn, resume_code(fn.__code__, site.fallthrough, names)))
        if site.jump is not None:
            code = resume_code(fn.__code__, site.jump, names)
            if any(instr.name == "FOR_ITER" for instr in site.group):
                mark_loop_exit(code)  # after a loop run in Python (before it is wrapped)
            resume_jump = wrap(_function(fn, code))
        resume_handler = None
        if site.handler is not None:
            # The except clause or __exit__ after an exception runs in plain Python.
            resume_handler = _function(fn, resume_code(fn.__code__, site.handler, names))
        self.break_fn = _function(
            fn, break_code(site, names, resume_next, resume_jump, resume_handler)
        )
        # NOTE: past MAX_NESTED_RESUMES nested breaks (a loop that breaks in each iteration
        # resumes inside the resume before it), the rest runs in plain Python, uncompiled.
        eager_next = eager_jump = None
        if site.fallthrough is not None:
            eager_next = _function(fn, resume_code(fn.__code__, site.fallthrough, names))
        if site.jump is not None:
            eager_jump = _function(fn, resume_code(fn.__code__, site.jump, names))
        self.eager_break_fn = _function(
            fn, break_code(site, names, eager_next, eager_jump, resume_handler)
        )
        self._prepare(graph_break, fn, wrap)

    def _prepare(self, graph_break: GraphBreak, fn: types.FunctionType, wrap: Wrap) -> None:
        # What runs before the break function: the rebuild steps and the replays.
        self._values: list[Callable[[list[Any], Any, Sequence[Any]], Any]] = []
        for step in graph_break.steps:
            self._values.append(_runtime_step(step, wrap))
        self._arguments = (*graph_break.stack_slots, *graph_break.local_slots)
        self._input_count = graph_break.input_count
        self._effects = graph_break.effects
        self._globals = fn.__globals__
        # Run up to the resume call and return it as a `TailCall` (or the result, if none).
        self.run_tail = _tail_runner(self)

    def __call__(self, *fetched: Any) -> Any:
        result = self.run_tail(*fetched)
        while type(result) is TailCall:
            result = result.fn(*result.args)
        return result


def _exit_resumes(
    fn: types.FunctionType, region: LoopRegion, wrap: Wrap | None
) -> list[Callable[..., Any]]:
    # One resume function per exit of a loop run in Python, compiled unless `wrap` is None;
    # each counts as inside the loop (it continues with the values the iterations left).
    resumes: list[Callable[..., Any]] = []
    for exit_ in region.exits:
        code = resume_code(fn.__code__, exit_.continuation, exit_.local_names)
        mark_loop_exit(code)
        made = _function(fn, code)
        resumes.append(made if wrap is None else wrap(made))
    return resumes


def _tail_runner(runner: BreakRunner) -> Callable[..., Any]:
    # `run_tail` is a plain function, not a bound method, and the break function's callee is
    # called through its bound `__call__` (`_direct_callee`): CPython 3.12 makes such calls in
    # the caller's C frame, where a bound method called with `*args`, or an object with
    # `__call__`, costs 2-3 units of its C recursion limit, which Python code cannot raise (a
    # compiled recursion then stops at about 300 levels instead of eager's 990).
    graph_fn = runner.graph_fn
    count = runner._input_count
    values = runner._values
    effects = runner._effects
    globals_ = runner._globals
    arguments = runner._arguments

    gather = None if effects else _argument_gatherer(runner.graph_break.steps, arguments, count)

    def run_tail(*fetched: Any) -> Any:
        outputs: Any = ()
        if graph_fn is not None:
            outputs = graph_fn(*fetched[:count])
        break_arguments: Sequence[Any]
        if gather is not None:
            break_arguments = gather(outputs, fetched)
        else:
            extras = fetched[count:]
            slots: list[Any] = []
            for make in values:
                slots.append(make(slots, outputs, extras))
            for effect in effects:
                _replay(effect, slots, globals_)
            break_arguments = [slots[index] for index in arguments]
        depth = _NESTING.depth
        break_fn = runner.break_fn if depth < MAX_NESTED_RESUMES else runner.eager_break_fn
        _NESTING.depth = depth + 1
        # A deep nesting is a recursion through compiled code: numpile's frames are not the
        # user's, so they do not count against the user's recursion limit.
        units = 0 if depth < DEEP else units_at(depth)
        if units:
            widen(units)
        try:
            return break_fn(*break_arguments)
        finally:
            if units:
                narrow(units)
            _NESTING.depth = depth

    return run_tail


def _argument_gatherer(
    steps: Sequence[Step], arguments: Sequence[int], count: int
) -> Callable[[Any, tuple[Any, ...]], tuple[Any, ...]] | None:
    # Where every rebuild step picks a graph output, a fetched value or a constant, or builds
    # a tuple, list or dict of earlier ones (a loop body's break: arrays, ints, a call's
    # keyword names on 3.13), the break function's arguments as one generated function of
    # the graph's outputs and the fetched values: no slot list, no call per step on a path
    # that runs once per iteration. None where a step does more.
    lines: list[str] = []
    constants: dict[str, Any] = {}

    def constant(value: Any) -> str:
        name = f"constant_{len(constants)}"
        constants[name] = value
        return name

    for index, step in enumerate(steps):
        if isinstance(step, FromGraph):
            value = f"outputs[{step.index}]"
        elif isinstance(step, FromInput):
            value = f"fetched[{count + step.index}]"
        elif isinstance(step, Constant):
            value = constant(step.value)
        elif isinstance(step, Build) and step.kind in (tuple, list):
            items = "".join(f"slot_{item}, " for item in step.slots)
            value = f"({items})" if step.kind is tuple else f"[{items}]"
        elif isinstance(step, Build) and step.kind is dict:
            pairs = zip(step.keys, step.slots, strict=True)
            value = "{" + "".join(f"{constant(key)}: slot_{item}, " for key, item in pairs) + "}"
        else:
            return None
        lines.append(f"    slot_{index} = {value}\n")
    picks = "".join(f"slot_{index}, " for index in arguments)
    text = f"def gather(outputs, fetched):\n{''.join(lines)}    return ({picks})\n"
    namespace: dict[str, Any] = dict(constants)
    exec(compile(text, "<numpile break arguments>", "exec"), namespace)
    gather: Callable[[Any, tuple[Any, ...]], tuple[Any, ...]] = namespace["gather"]
    return gather


class _Nesting(threading.local):
    depth = 0


# NOTE: how many break functions run nested in this thread (see BreakRunner).
_NESTING = _Nesting()

# NOTE: nested resumes allowed before the rest of a call runs uncompiled (Python's own
# recursion limit must stay far away: each level costs a few frames).
MAX_NESTED_RESUMES = 48


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


def _direct_callee(compiled: Callable[..., Any]) -> Callable[..., Any]:
    # The breaking CALL's callee (only ever called there), as its class's `__call__` bound to
    # it: the same call, made without entering C on CPython 3.12 (see `_tail_runner`).
    call = type(compiled).__dict__.get("__call__")
    if isinstance(call, types.FunctionType):
        return types.MethodType(call, compiled)
    return compiled


def _function_maker(step: MakeFunction) -> Callable[[list[Any], Any, Sequence[Any]], Any]:
    code, globals_ = step.code, step.globals

    def make(slots: list[Any], outputs: Any, extras: Sequence[Any]) -> Any:
        defaults = None if step.defaults is None else slots[step.defaults]
        closure = tuple(slots[index] for index in step.closure) or None
        made = types.FunctionType(code, globals_, code.co_name, defaults, closure)
        if step.kwdefaults is not None:
            made.__kwdefaults__ = slots[step.kwdefaults]
        made.__qualname__ = code.co_qualname
        return made

    return make


def _cell_filler(step: FillCell) -> Callable[[list[Any], Any, Sequence[Any]], Any]:
    def fill(slots: list[Any], outputs: Any, extras: Sequence[Any]) -> Any:
        slots[step.cell].cell_contents = slots[step.value]
        return None

    return fill


def _caller(step: Call) -> Callable[[list[Any], Any, Sequence[Any]], Any]:
    def call(slots: list[Any], outputs: Any, extras: Sequence[Any]) -> Any:
        args = [slots[index] for index in step.args]
        kwargs = {key: slots[index] for key, index in zip(step.keys, step.kwargs, strict=True)}
        return slots[step.fn](*args, **kwargs)

    return call


def _attribute_setter(step: SetAttributes) -> Callable[[list[Any], Any, Sequence[Any]], Any]:
    def fill(slots: list[Any], outputs: Any, extras: Sequence[Any]) -> Any:
        made = slots[step.target]
        for name, index in zip(step.names, step.values, strict=True):
            object.__setattr__(made, name, slots[index])
        return None

    return fill


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
        # A disable(recursive=False) function runs in Python; the functions it calls compile.
        disabled = compiles_callees(step.fn)
        compiled = compiling_callees(step.fn, wrap) if disabled else _direct_callee(wrap(step.fn))
        return lambda slots, outputs, extras: compiled
    if isinstance(step, MakeFunction):
        return _function_maker(step)
    if isinstance(step, GetAttr):
        slot, name = step.slot, step.name
        return lambda slots, outputs, extras: getattr(slots[slot], name)
    if isinstance(step, MakeCell):
        value = step.value
        if value is None:
            return lambda slots, outputs, extras: types.CellType()
        return lambda slots, outputs, extras: types.CellType(slots[value])
    if isinstance(step, FillCell):
        return _cell_filler(step)
    if isinstance(step, MakeIterator):
        source = step.slot
        return lambda slots, outputs, extras: iter(slots[source])
    if isinstance(step, Call):
        return _caller(step)
    if isinstance(step, NewObject):
        cls: Any = step.cls
        return lambda slots, outputs, extras: cls.__new__(cls)
    if isinstance(step, SetAttributes):
        return _attribute_setter(step)
    items = step.slots
    if step.kind is dict:
        keys = step.keys
        return lambda slots, outputs, extras: {
            key: slots[i] for key, i in zip(keys, items, strict=True)
        }
    kind = step.kind
    return lambda slots, outputs, extras: kind(slots[i] for i in items)
