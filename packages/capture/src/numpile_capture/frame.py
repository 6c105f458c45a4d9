"""Frames: one function's bytecode run on variables, one handler per instruction.

`Frame.run` steps through the normalized instructions of a code object (see
`bytecode`); `_HANDLERS` maps each opcode name to a small function that pops
and pushes variables, asks the tracer to call, inline or look up attributes,
and records array work in the graph. An opcode without a handler, or a
handler meeting something it cannot capture, raises `Unsupported` with the
user's file and line.

    >>> "BINARY_OP" in _HANDLERS
    True
"""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from .bytecode import Instruction, normalized_instructions
from .capture_result import Unsupported
from .frame_state import FrameState, constant_tuple
from .operators import (
    STATIC_ARRAY_ATTRIBUTES,
    binary,
    compare,
    contains,
    getitem,
    is_same,
    iterate,
    setitem,
    truth,
    unary,
)
from .variables import (
    NULL,
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    CellVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    IteratorVar,
    ListVar,
    ModuleVar,
    NullVar,
    OpaqueVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .tracer import Tracer

# NOTE: backward jumps (loop iterations, all loops together) allowed in one capture.
MAX_BACKWARD_JUMPS = 10_000

_PY313 = sys.version_info >= (3, 13)


class BreakAt(Unsupported):
    """Capture stopped at normalized instruction `index` of the root frame (a graph break).

    `reason`, `filename` and `lineno` say why and where in the user's code (the
    innermost line, inside an inlined call when the break happened there).
    """

    def __init__(self, exc: Unsupported, index: int) -> None:
        super().__init__(exc.reason, exc.filename, exc.lineno)
        self.index = index


class ReturnWithEffects(BreakAt):
    """The root frame returns with side effects to replay: not a graph break, but the
    return runs in Python after the graph, as a break's instruction does."""


class StopAtBreak(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The root frame reached the instruction it was told to stop before (see Tracer)."""

    def __init__(self, frame: Frame) -> None:
        super().__init__("stopped at a graph break")
        self.frame = frame


class Frame:
    """One frame being traced: runs its normalized instructions through the handler table.

    The tracer makes one per call it inlines; `run()` returns the frame's return value.

        >>> Frame(tracer, function_var).run()  # doctest: +SKIP
    """

    def __init__(self, tracer: Tracer, fn: FunctionVar, *, is_root: bool = False) -> None:
        self.tracer = tracer
        self.is_root = is_root
        self.fn = fn
        self.code = fn.code
        self.instructions = normalized_instructions(fn.code)
        self.state = FrameState(fn.code)
        for name, cell in zip(fn.code.co_freevars, fn.closure, strict=True):
            self.state.locals[name] = cell
        self.pc = 0
        self.result: Variable | None = None
        self.current: Instruction | None = None

    def run(self) -> Variable:
        stop_at = self.tracer.stop_at if self.is_root else None
        while self.result is None:
            if self.pc == stop_at:
                raise StopAtBreak(self)
            inst = self.instructions[self.pc]
            self.current = inst
            self.pc += 1
            try:
                self._step(inst)
            except BreakAt:
                raise
            except Unsupported as exc:
                if exc.filename is None:
                    exc = Unsupported(exc.reason, self.code.co_filename, inst.lineno)
                if self.is_root:
                    raise BreakAt(exc, self.pc - 1) from None
                raise exc from None
        return self.result

    def _step(self, inst: Instruction) -> None:
        if inst.in_try:
            raise Unsupported("not supported yet: try/except/finally blocks")
        handler = _HANDLERS.get(inst.opname)
        if handler is None:
            raise Unsupported(f"not supported yet: the {inst.opname} instruction")
        handler(self, inst)

    def jump(self, inst: Instruction) -> None:
        assert inst.target is not None
        if inst.target < self.pc:
            self.tracer.backward_jumps += 1
            if self.tracer.backward_jumps > MAX_BACKWARD_JUMPS:
                raise Unsupported("not supported yet: a loop that runs too many iterations")
        self.pc = inst.target

    def load_global(self, name: str) -> Variable:
        builder = self.tracer.builder
        written = self.tracer.side_effects.globals.get(name)
        if written is not None and self.fn.globals is builder.root_globals:
            return written
        if name in self.fn.globals:
            value = self.fn.globals[name]
            if self.fn.trusted:
                return builder.build_unguarded(value)
            if self.fn.globals_base is None and self.fn.globals is not builder.root_globals:
                raise Unsupported(
                    f"not supported yet: reading global {name!r} of {self.fn.describe()}"
                )
            return builder.build(value, builder.global_source(name, self.fn.globals_base))
        if hasattr(builtins, name):
            # TODO(issue 3): guard that the global does not come to shadow the builtin.
            return builder.build_unguarded(getattr(builtins, name))
        raise NameError(f"name '{name}' is not defined")


Handler = Callable[[Frame, Instruction], None]


# -- handlers: stack and locals ----------------------------------------------------------


def _load_const(frame: Frame, inst: Instruction) -> None:
    value = inst.argval
    if isinstance(value, types.CodeType):
        frame.state.push(ConstantVar(value))
    else:
        frame.state.push(frame.tracer.builder.build_unguarded(value))


def _load_fast(frame: Frame, inst: Instruction) -> None:
    frame.state.push(frame.state.read_local(inst.argval))


def _load_fast_and_clear(frame: Frame, inst: Instruction) -> None:
    state = frame.state
    value = state.read_local(inst.argval) if state.has_local(inst.argval) else NULL
    state.delete_local(inst.argval)
    state.push(value)


def _store_fast(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    frame.state.lazy.pop(inst.argval, None)
    if isinstance(value, NullVar):
        frame.state.delete_local(inst.argval)
    else:
        frame.state.locals[inst.argval] = value


def _delete_fast(frame: Frame, inst: Instruction) -> None:
    frame.state.read_local(inst.argval)
    frame.state.delete_local(inst.argval)


def _make_cell(frame: Frame, inst: Instruction) -> None:
    state = frame.state
    contents = state.read_local(inst.argval) if state.has_local(inst.argval) else None
    state.delete_local(inst.argval)
    state.locals[inst.argval] = CellVar(contents)


def _cell(frame: Frame, name: str) -> CellVar:
    cell = frame.state.read_local(name)
    assert isinstance(cell, CellVar)
    return cell


def _load_deref(frame: Frame, inst: Instruction) -> None:
    cell = _cell(frame, inst.argval)
    if cell.contents is None and cell.real is not None:
        try:
            value = cell.real.cell_contents
        except ValueError:
            raise NameError(
                f"cannot access free variable '{inst.argval}' where it is not associated with a "
                "value in enclosing scope"
            ) from None
        if cell.source is None:
            cell.contents = frame.tracer.builder.build_unguarded(value)
        else:
            cell.contents = frame.tracer.builder.build(value, cell.source)
    if cell.contents is None:
        raise NameError(f"cannot access free variable '{inst.argval}'")
    frame.state.push(cell.contents)


def _store_deref(frame: Frame, inst: Instruction) -> None:
    cell = _cell(frame, inst.argval)
    if cell.real is not None:
        raise Unsupported("not supported yet: assigning a variable of an enclosing function")
    cell.contents = frame.state.pop()


def _load_global(frame: Frame, inst: Instruction) -> None:
    value = frame.load_global(inst.argval)
    if inst.flag and not _PY313:
        frame.state.push(NULL)
    frame.state.push(value)
    if inst.flag and _PY313:
        frame.state.push(NULL)


def _store_attr(frame: Frame, inst: Instruction) -> None:
    obj = frame.state.pop()
    value = frame.state.pop()
    if not isinstance(obj, OpaqueVar) or obj.source is None:
        raise Unsupported(
            f"not supported yet: setting the attribute .{inst.argval} of {obj.describe()}"
        )
    frame.tracer.side_effects.set_attribute(obj, inst.argval, value)


def _store_global(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    if frame.fn.globals is not frame.tracer.builder.root_globals:
        raise Unsupported(f"not supported yet: assigning global {inst.argval!r} of another module")
    frame.tracer.side_effects.set_global(inst.argval, value)


def _load_attr(frame: Frame, inst: Instruction) -> None:
    obj = frame.state.pop()
    if inst.flag:
        method = frame.tracer.user_method(obj, inst.argval)
        if method is not None:
            # CPython's method layout in 3.11-3.13: [function, self].
            frame.state.push(method)
            frame.state.push(obj)
            return
    if inst.flag and isinstance(obj, ArrayVar) and inst.argval not in STATIC_ARRAY_ATTRIBUTES:
        if frame.tracer.bindings.lookup_attribute(inst.argval) is None:
            value: Variable = BoundMethodVar(obj, inst.argval)
        else:
            value = frame.tracer.load_attr(obj, inst.argval)
    else:
        value = frame.tracer.load_attr(obj, inst.argval)
    # NOTE: CPython's layout: [NULL, callable] before 3.13, [callable, NULL] from 3.13 (the
    # CALL handler accepts either; graph breaks rebuild the stack as it is here).
    if inst.flag and not _PY313:
        frame.state.push(NULL)
    frame.state.push(value)
    if inst.flag and _PY313:
        frame.state.push(NULL)


def _push_null(frame: Frame, inst: Instruction) -> None:
    frame.state.push(NULL)


def _pop_top(frame: Frame, inst: Instruction) -> None:
    frame.state.pop()


def _copy(frame: Frame, inst: Instruction) -> None:
    frame.state.push(frame.state.peek(inst.argval))


def _swap(frame: Frame, inst: Instruction) -> None:
    stack = frame.state.stack
    stack[-1], stack[-inst.argval] = stack[-inst.argval], stack[-1]


# -- handlers: operators -----------------------------------------------------------------


def _binary_op(frame: Frame, inst: Instruction) -> None:
    right = frame.state.pop()
    left = frame.state.pop()
    frame.state.push(binary(frame.tracer, inst.argval, left, right))


def _compare_op(frame: Frame, inst: Instruction) -> None:
    right = frame.state.pop()
    left = frame.state.pop()
    frame.state.push(compare(frame.tracer, inst.argval, left, right))


def _is_op(frame: Frame, inst: Instruction) -> None:
    right = frame.state.pop()
    left = frame.state.pop()
    frame.state.push(ConstantVar(is_same(left, right) != bool(inst.argval)))


def _contains_op(frame: Frame, inst: Instruction) -> None:
    container = frame.state.pop()
    item = frame.state.pop()
    frame.state.push(ConstantVar(contains(frame.tracer, item, container) != bool(inst.argval)))


def _unary(name: str) -> Handler:
    def handler(frame: Frame, inst: Instruction) -> None:
        frame.state.push(unary(frame.tracer, name, frame.state.pop()))

    return handler


def _unary_not(frame: Frame, inst: Instruction) -> None:
    frame.state.push(ConstantVar(not truth(frame.tracer, frame.state.pop())))


def _call_intrinsic_1(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    if inst.argval == "INTRINSIC_UNARY_POSITIVE":
        frame.state.push(unary(frame.tracer, "pos", value))
    elif inst.argval == "INTRINSIC_LIST_TO_TUPLE":
        frame.state.push(TupleVar(tuple(iterate(frame.tracer, value))))
    else:
        raise Unsupported(f"not supported yet: {inst.argval}")


def _list_to_tuple(frame: Frame, inst: Instruction) -> None:
    frame.state.push(TupleVar(tuple(iterate(frame.tracer, frame.state.pop()))))


def _binary_subscr(frame: Frame, inst: Instruction) -> None:
    index = frame.state.pop()
    container = frame.state.pop()
    frame.state.push(getitem(frame.tracer, container, index))


def _store_subscr(frame: Frame, inst: Instruction) -> None:
    index = frame.state.pop()
    container = frame.state.pop()
    value = frame.state.pop()
    setitem(frame.tracer, container, index, value)


def _slice_of(start: Variable, stop: Variable, step: Variable | None = None) -> Variable:
    parts = [start, stop] if step is None else [start, stop, step]
    if not all(isinstance(part, ConstantVar) for part in parts):
        raise Unsupported("not supported yet: slices with bounds that are arrays")
    return ConstantVar(slice(*(part.as_python_constant() for part in parts)))


def _binary_slice(frame: Frame, inst: Instruction) -> None:
    stop = frame.state.pop()
    start = frame.state.pop()
    container = frame.state.pop()
    frame.state.push(getitem(frame.tracer, container, _slice_of(start, stop)))


def _store_slice(frame: Frame, inst: Instruction) -> None:
    stop = frame.state.pop()
    start = frame.state.pop()
    container = frame.state.pop()
    value = frame.state.pop()
    setitem(frame.tracer, container, _slice_of(start, stop), value)


def _build_slice(frame: Frame, inst: Instruction) -> None:
    parts = frame.state.pop_n(inst.argval)
    frame.state.push(_slice_of(*parts))


# -- handlers: containers ----------------------------------------------------------------


def _build_tuple(frame: Frame, inst: Instruction) -> None:
    frame.state.push(TupleVar(tuple(frame.state.pop_n(inst.argval))))


def _build_list(frame: Frame, inst: Instruction) -> None:
    frame.state.push(ListVar(frame.state.pop_n(inst.argval)))


def _build_map(frame: Frame, inst: Instruction) -> None:
    items = frame.state.pop_n(2 * inst.argval)
    entries = {items[i].as_python_constant(): items[i + 1] for i in range(0, len(items), 2)}
    frame.state.push(DictVar(entries))


def _build_const_key_map(frame: Frame, inst: Instruction) -> None:
    keys = frame.state.pop().as_python_constant()
    values = frame.state.pop_n(inst.argval)
    frame.state.push(DictVar(dict(zip(keys, values, strict=True))))


def _list_append(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    target = frame.state.peek(inst.argval)
    assert isinstance(target, ListVar)
    target.items.append(value)


def _list_extend(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    target = frame.state.peek(inst.argval)
    assert isinstance(target, ListVar)
    target.items.extend(iterate(frame.tracer, value))


def _map_add(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    key = frame.state.pop()
    target = frame.state.peek(inst.argval)
    assert isinstance(target, DictVar)
    target.items[key.as_python_constant()] = value


def _dict_update(frame: Frame, inst: Instruction) -> None:
    value = frame.state.pop()
    target = frame.state.peek(inst.argval)
    assert isinstance(target, DictVar)
    if not isinstance(value, DictVar):
        raise Unsupported(f"not supported yet: ** of {value.describe()}")
    if inst.opname == "DICT_MERGE":
        for key in value.items:
            if key in target.items:
                raise TypeError(f"got multiple values for keyword argument '{key}'")
    target.items.update(value.items)


def _unpack_sequence(frame: Frame, inst: Instruction) -> None:
    items = iterate(frame.tracer, frame.state.pop())
    if len(items) != inst.argval:
        if len(items) > inst.argval:
            raise ValueError(f"too many values to unpack (expected {inst.argval})")
        raise ValueError(f"not enough values to unpack (expected {inst.argval}, got {len(items)})")
    for item in reversed(items):
        frame.state.push(item)


def _unpack_ex(frame: Frame, inst: Instruction) -> None:
    before = inst.argval & 0xFF
    after = inst.argval >> 8
    items = iterate(frame.tracer, frame.state.pop())
    if len(items) < before + after:
        raise ValueError(
            f"not enough values to unpack (expected at least {before + after}, got {len(items)})"
        )
    middle = ListVar(items[before : len(items) - after])
    for item in reversed([*items[:before], middle, *items[len(items) - after :]]):
        frame.state.push(item)


def _get_iter(frame: Frame, inst: Instruction) -> None:
    frame.state.push(IteratorVar(iterate(frame.tracer, frame.state.pop())))


def _for_iter(frame: Frame, inst: Instruction) -> None:
    iterator = frame.state.peek()
    assert isinstance(iterator, IteratorVar)
    item = iterator.next_item()
    if item is None:
        frame.state.pop()
        frame.jump(inst)
    else:
        frame.state.push(item)


# -- handlers: strings -------------------------------------------------------------------


def _constant_of(value: Variable, what: str) -> Any:
    if not isinstance(value, ConstantVar):
        raise Unsupported(f"not supported yet: {what} of {value.describe()}")
    return value.value


_CONVERSIONS: dict[int, Callable[[Any], str]] = {1: str, 2: repr, 3: ascii}


def _format_value(frame: Frame, inst: Instruction) -> None:
    flags = inst.arg or 0
    spec = _constant_of(frame.state.pop(), "formatting") if flags & 0x04 else ""
    value = _constant_of(frame.state.pop(), "formatting")
    convert = _CONVERSIONS.get(flags & 0x03)
    if convert is not None:
        value = convert(value)
    frame.state.push(ConstantVar(format(value, spec)))


def _convert_value(frame: Frame, inst: Instruction) -> None:
    value = _constant_of(frame.state.pop(), "formatting")
    frame.state.push(ConstantVar(_CONVERSIONS[inst.arg or 1](value)))


def _format_simple(frame: Frame, inst: Instruction) -> None:
    value = _constant_of(frame.state.pop(), "formatting")
    frame.state.push(ConstantVar(format(value)))


def _format_with_spec(frame: Frame, inst: Instruction) -> None:
    spec = _constant_of(frame.state.pop(), "formatting")
    value = _constant_of(frame.state.pop(), "formatting")
    frame.state.push(ConstantVar(format(value, spec)))


def _build_string(frame: Frame, inst: Instruction) -> None:
    parts = [_constant_of(part, "a string") for part in frame.state.pop_n(inst.argval)]
    frame.state.push(ConstantVar("".join(parts)))


# -- handlers: control flow --------------------------------------------------------------


def _jump(frame: Frame, inst: Instruction) -> None:
    frame.jump(inst)


def _pop_jump_if(expected: bool) -> Handler:
    def handler(frame: Frame, inst: Instruction) -> None:
        if truth(frame.tracer, frame.state.pop()) == expected:
            frame.jump(inst)

    return handler


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


_HANDLERS: dict[str, Handler] = {
    "LOAD_CONST": _load_const,
    "LOAD_FAST": _load_fast,
    "LOAD_FAST_AND_CLEAR": _load_fast_and_clear,
    "STORE_FAST": _store_fast,
    "DELETE_FAST": _delete_fast,
    "MAKE_CELL": _make_cell,
    "LOAD_DEREF": _load_deref,
    "STORE_DEREF": _store_deref,
    "LOAD_GLOBAL": _load_global,
    "LOAD_ATTR": _load_attr,
    "PUSH_NULL": _push_null,
    "POP_TOP": _pop_top,
    "COPY": _copy,
    "SWAP": _swap,
    "BINARY_OP": _binary_op,
    "COMPARE_OP": _compare_op,
    "IS_OP": _is_op,
    "CONTAINS_OP": _contains_op,
    "UNARY_NEGATIVE": _unary("neg"),
    "UNARY_POSITIVE": _unary("pos"),
    "UNARY_INVERT": _unary("invert"),
    "UNARY_NOT": _unary_not,
    "CALL_INTRINSIC_1": _call_intrinsic_1,
    "LIST_TO_TUPLE": _list_to_tuple,
    "BINARY_SUBSCR": _binary_subscr,
    "STORE_SUBSCR": _store_subscr,
    "BINARY_SLICE": _binary_slice,
    "STORE_SLICE": _store_slice,
    "BUILD_SLICE": _build_slice,
    "BUILD_TUPLE": _build_tuple,
    "BUILD_LIST": _build_list,
    "BUILD_MAP": _build_map,
    "BUILD_CONST_KEY_MAP": _build_const_key_map,
    "LIST_APPEND": _list_append,
    "LIST_EXTEND": _list_extend,
    "MAP_ADD": _map_add,
    "DICT_UPDATE": _dict_update,
    "DICT_MERGE": _dict_update,
    "UNPACK_SEQUENCE": _unpack_sequence,
    "UNPACK_EX": _unpack_ex,
    "GET_ITER": _get_iter,
    "FOR_ITER": _for_iter,
    "FORMAT_VALUE": _format_value,
    "CONVERT_VALUE": _convert_value,
    "FORMAT_SIMPLE": _format_simple,
    "FORMAT_WITH_SPEC": _format_with_spec,
    "BUILD_STRING": _build_string,
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
    "BEFORE_WITH": _unsupported("with statements"),
    "PUSH_EXC_INFO": _unsupported("try/except blocks"),
    "RETURN_GENERATOR": _unsupported("generators"),
    "YIELD_VALUE": _unsupported("generators"),
    "STORE_GLOBAL": _store_global,
    "STORE_ATTR": _store_attr,
    "DELETE_SUBSCR": _unsupported("del of an item"),
    "BUILD_SET": _unsupported("sets"),
    "LOAD_BUILD_CLASS": _unsupported("class definitions"),
}
