"""Opcode handlers for control flow, calls, function objects and imports.

>>> "CALL" in HANDLERS
True
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from .block_trace import is_run_time
from .body_work import pays_for_pieces
from .bytecode import Instruction
from .capture_events import LoopNotKept, record_loop_not_kept
from .capture_result import Unsupported
from .config import config
from .frame_state import constant_tuple
from .loop_capture import log as loop_log
from .loop_entry import EmptyRange
from .loop_exit import BodyBreaks, LoopFallback, NestedReturn
from .loop_region import in_python
from .operators import (
    is_same,
    iterate,
    truth,
)
from .short_circuit import find_condition, fold_condition
from .trace_snapshot import Snapshot
from .variables import (
    CallableVar,
    CellVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    MethodVar,
    ModuleVar,
    NullVar,
    OpaqueVar,
    TupleVar,
    Variable,
)
from .while_capture import keep_while, tests_at_run_time, while_shape

if TYPE_CHECKING:
    from .frame import Frame

_PY313 = sys.version_info >= (3, 13)

Handler = Callable[["Frame", Instruction], None]

# -- handlers: control flow --------------------------------------------------------------


def _jump(frame: Frame, inst: Instruction) -> None:
    frame.jump(inst)


def _pop_jump_if(expected: bool) -> Handler:
    def handler(frame: Frame, inst: Instruction) -> None:
        folded = _folded_while_test(frame, inst)
        if _kept_while(frame, folded, plain=folded is inst):
            return
        if folded is inst:
            _note_unrolled_while(frame, inst)
        inst = folded
        if truth(frame.tracer, frame.state.pop()) == (inst.opname == "POP_JUMP_IF_TRUE"):
            frame.jump(inst)

    return handler


def _folded_while_test(frame: Frame, inst: Instruction) -> Instruction:
    # A while loop's entry test of several operands (`while i < n and x[i] > 0:`) as one
    # value at its last jump (see short_circuit), so the loop is found there whether the
    # test is known now or only at run time; else `inst` as it is.
    tracer = frame.tracer
    if not tracer.keep_loops:
        return inst
    condition = find_condition(frame.instructions, frame.pc - 1, len(frame.instructions))
    if condition is None or condition.carrier is None:
        return inst
    carrier = frame.instructions[condition.carrier]
    pc = frame.pc
    frame.pc = condition.carrier + 1
    shape = while_shape(frame, carrier)
    frame.pc = pc
    if shape is None:
        return inst
    saved = Snapshot.take(frame)
    try:
        folded = fold_condition(frame, inst, len(frame.instructions))
    except Exception:
        saved.restore(frame)
        return inst  # data-dependent control flow at the first jump, as before
    return inst if folded is None else folded


def _kept_while(frame: Frame, inst: Instruction, *, plain: bool) -> bool:
    # A while loop on a run-time test becomes one node (see while_capture); else the test
    # is data-dependent control flow, as before, or, when the body breaks and saves little
    # compiled, the whole loop runs in Python from its test (`plain`: a test of one operand).
    shape = while_shape(frame, inst)
    tracer = frame.tracer
    if shape is None or not tracer.keep_loops:
        return False
    if not is_run_time(frame.state.peek()) and not tests_at_run_time(frame, shape):
        return False  # a loop on values known now (shapes, counters) runs now, unrolled
    work = tracer.array_work
    try:
        keep_while(frame, inst, shape)
    except EmptyRange:
        return False  # its first test fails on this call (guarded): the jump past the loop
    except NestedReturn:
        raise  # the enclosing kept loop traces its body again (see loop_return)
    except LoopFallback as exc:
        reason = f"loop not kept as a loop: {exc}"
        filename = frame.code.co_filename
        loop_log.info("%s (%s:%s)", reason, filename, inst.lineno)
        record_loop_not_kept(LoopNotKept(reason, filename, inst.lineno))
        small = (
            plain
            and isinstance(exc, BodyBreaks)
            and config.small_loops_in_python
            and frame.is_root
            and not shape.forever
            and not pays_for_pieces(tracer.array_work - work)  # in the body traced
        )
        if small:
            raise in_python(f"while {reason}", filename, inst.lineno) from None
        return False
    return True


def _note_unrolled_while(frame: Frame, inst: Instruction) -> None:
    # A while loop traced unrolled from its entry test `inst`: a graph break in its body,
    # with too little array work traced since to pay for compiled pieces, runs the whole
    # loop in Python from this test (frame.small_bodies, loop_region), at any trip count.
    if not config.small_loops_in_python or not frame.is_root or not frame.tracer.keep_loops:
        return
    shape = while_shape(frame, inst)
    if shape is None or shape.forever or inst.target == frame.pc + 1:
        return  # a `while True:` has no test to start from; 3.12's nested form jumps in
    reason = "while loop not kept as a loop: its body breaks the graph"
    frame.small_bodies.note(
        frame.pc - 1, shape.exit, reason, frame.tracer.array_work, names_break=True
    )


def _pop_jump_if_none(expected: bool) -> Handler:
    def handler(frame: Frame, inst: Instruction) -> None:
        value = frame.state.pop()
        if is_same(value, ConstantVar(None)) == expected:
            frame.jump(inst)

    return handler


def _jump_if_or_pop(expected: bool) -> Handler:
    def handler(frame: Frame, inst: Instruction) -> None:
        if truth(frame.tracer, frame.state.peek()) == expected:
            frame.jump(inst)
        else:
            frame.state.pop()

    return handler


def _return_value(frame: Frame, inst: Instruction) -> None:
    frame.result = frame.state.pop()


def _return_generator(frame: Frame, inst: Instruction) -> None:
    # The generator object CPython returns to the caller here is the GeneratorVar; its own
    # frame continues with None on the stack (popped next).
    frame.state.push(ConstantVar(None))


def _yield_value(frame: Frame, inst: Instruction) -> None:
    frame.yielded = frame.state.pop()


def _return_const(frame: Frame, inst: Instruction) -> None:
    frame.result = frame.tracer.builder.build_unguarded(inst.argval)


# -- handlers: calls and functions -------------------------------------------------------


def _pop_callable(frame: Frame, args: list[Variable]) -> Variable:
    # [NULL, f] (3.11, 3.12), [f, NULL] (3.13) or [method, self] (all versions).
    second = frame.state.pop()
    first = frame.state.pop()
    if isinstance(first, NullVar):
        return second
    if isinstance(second, NullVar):
        return first
    args.insert(0, second)
    return first


def _do_call(frame: Frame, count: int, names: tuple[str, ...]) -> None:
    items = frame.state.pop_n(count)
    positional = items[: count - len(names)]
    keywords = dict(zip(names, items[count - len(names) :], strict=True))
    fn = _pop_callable(frame, positional)
    frame.state.push(frame.tracer.call(fn, positional, keywords))


def _call(frame: Frame, inst: Instruction) -> None:
    _do_call(frame, inst.arg or 0, inst.argval)


def _call_kw(frame: Frame, inst: Instruction) -> None:
    names = constant_tuple(frame.state.pop())
    _do_call(frame, inst.arg or 0, names)


def _call_function_ex(frame: Frame, inst: Instruction) -> None:
    keywords: dict[str, Variable] = {}
    if (inst.arg or 0) & 1:
        mapping = frame.state.pop()
        if not isinstance(mapping, DictVar):
            raise Unsupported(f"not supported yet: ** of {mapping.describe()}")
        keywords = dict(mapping.items)
    positional = iterate(frame.tracer, frame.state.pop())
    fn = _pop_callable(frame, positional)
    frame.state.push(frame.tracer.call(fn, positional, keywords))


def _make_function(frame: Frame, inst: Instruction) -> None:
    code = frame.state.pop()
    assert isinstance(code, ConstantVar) and isinstance(code.value, types.CodeType)
    fn = FunctionVar(
        code.value,
        frame.fn.globals,
        frame.fn.globals_base,
        (),
        {},
        (),
        None,
        trusted=frame.fn.trusted,
    )
    flags = 0 if _PY313 else (inst.arg or 0)
    for flag in (0x08, 0x04, 0x02, 0x01):
        if flags & flag:
            fn = _with_function_attribute(fn, flag, frame.state.pop())
    frame.state.push(fn)


def _with_function_attribute(fn: FunctionVar, flag: int, value: Variable) -> FunctionVar:
    if flag == 0x08:
        assert isinstance(value, TupleVar)
        cells = tuple(cell for cell in value.items if isinstance(cell, CellVar))
        return attrs.evolve(fn, closure=cells)
    if flag == 0x02:
        assert isinstance(value, DictVar)
        return attrs.evolve(fn, kwdefaults=dict(value.items))
    if flag == 0x01:
        assert isinstance(value, TupleVar)
        return attrs.evolve(fn, defaults=value.items)
    return fn  # annotations are not needed to run the function


def _set_function_attribute(frame: Frame, inst: Instruction) -> None:
    fn = frame.state.pop()
    value = frame.state.pop()
    assert isinstance(fn, FunctionVar)
    frame.state.push(_with_function_attribute(fn, inst.arg or 0, value))


def _before_with(frame: Frame, inst: Instruction) -> None:
    # A context manager whose __enter__ and __exit__ are Python methods is inlined: [exit,
    # entered] as CPython pushes them. Others are a graph break: they enter in Python.
    manager = frame.state.pop()
    tracer = frame.tracer
    enter = tracer.user_method(manager, "__enter__")
    leave = tracer.user_method(manager, "__exit__")
    if enter is None or not isinstance(leave, FunctionVar):
        what = manager.describe()
        if isinstance(manager, CallableVar | OpaqueVar):
            what = f"a {type(manager.value).__qualname__} object"
        raise Unsupported(f"not supported yet: a with block on {what} (it is entered in Python)")
    frame.state.push(MethodVar(leave, manager, "__exit__"))
    frame.state.push(tracer.call(enter, [manager], {}))


def _load_assertion_error(frame: Frame, inst: Instruction) -> None:
    frame.state.push(CallableVar(AssertionError))


def _import_name(frame: Frame, inst: Instruction) -> None:
    fromlist = frame.state.pop().as_python_constant()
    level = frame.state.pop().as_python_constant()
    name = inst.argval
    if level != 0 or name not in sys.modules:
        raise Unsupported(f"not supported yet: importing {name} inside a compiled function")
    module = sys.modules[name] if fromlist else sys.modules[name.partition(".")[0]]
    frame.state.push(ModuleVar(module))


def _import_from(frame: Frame, inst: Instruction) -> None:
    frame.state.push(frame.tracer.load_attr(frame.state.peek(), inst.argval))


def _unsupported(what: str) -> Handler:
    def handler(frame: Frame, inst: Instruction) -> None:
        raise Unsupported(f"not supported yet: {what}")

    return handler


HANDLERS: dict[str, Handler] = {
    "JUMP": _jump,
    "POP_JUMP_IF_TRUE": _pop_jump_if(True),
    "POP_JUMP_IF_FALSE": _pop_jump_if(False),
    "POP_JUMP_IF_NONE": _pop_jump_if_none(True),
    "POP_JUMP_IF_NOT_NONE": _pop_jump_if_none(False),
    "JUMP_IF_TRUE_OR_POP": _jump_if_or_pop(True),
    "JUMP_IF_FALSE_OR_POP": _jump_if_or_pop(False),
    "RETURN_VALUE": _return_value,
    "RETURN_CONST": _return_const,
    "CALL": _call,
    "CALL_KW": _call_kw,
    "CALL_FUNCTION_EX": _call_function_ex,
    "MAKE_FUNCTION": _make_function,
    "SET_FUNCTION_ATTRIBUTE": _set_function_attribute,
    "LOAD_ASSERTION_ERROR": _load_assertion_error,
    "IMPORT_NAME": _import_name,
    "IMPORT_FROM": _import_from,
    "RAISE_VARARGS": _unsupported("raise statements"),
    "BEFORE_WITH": _before_with,
    "PUSH_EXC_INFO": _unsupported("try/except blocks"),
    "RETURN_GENERATOR": _return_generator,
    "YIELD_VALUE": _yield_value,
    "DELETE_SUBSCR": _unsupported("del of an item"),
    "BUILD_SET": _unsupported("sets"),
    "LOAD_BUILD_CLASS": _unsupported("class definitions"),
}
