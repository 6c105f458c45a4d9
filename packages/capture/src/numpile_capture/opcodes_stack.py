"""Opcode handlers for the value stack, locals, cells, globals, attributes and operators.

Each handler pops and pushes variables of one `Frame`; `HANDLERS` maps opcode names to them.

    >>> "LOAD_FAST" in HANDLERS
    True
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

from .bytecode import Instruction
from .capture_result import Unsupported
from .operators import (
    STATIC_ARRAY_ATTRIBUTES,
    binary,
    compare,
    contains,
    getitem,
    is_same,
    iterate,
    run_time_int,
    setitem,
    truth,
    unary,
)
from .user_classes import store_object_attribute
from .variables import (
    NULL,
    ArrayVar,
    BoundMethodVar,
    CellVar,
    ConstantVar,
    NullVar,
    ObjectVar,
    OpaqueVar,
    ScalarInputVar,
    ScalarNodeVar,
    SliceVar,
    TupleVar,
    Variable,
    known_constant,
)

if TYPE_CHECKING:
    from .frame import Frame
    from .tracer import Tracer

_PY313 = sys.version_info >= (3, 13)

Handler = Callable[["Frame", Instruction], None]

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
    if isinstance(obj, ObjectVar):
        store_object_attribute(frame.tracer, obj, inst.argval, value)
        return
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


def _slice_of(
    tracer: Tracer, start: Variable, stop: Variable, step: Variable | None = None
) -> Variable:
    parts = [start, stop] if step is None else [start, stop, step]
    parts = [_slice_bound(tracer, part) for part in parts]
    if any(isinstance(part, ScalarNodeVar) for part in parts):
        # A bound computed per iteration (x[i:], A[i, :j], x[: i + 1] on a resumed loop's
        # index): the index slots it (loop_index, operators.run_time_index).
        while len(parts) < 3:
            parts.append(ConstantVar(None))
        return SliceVar(parts[0], parts[1], parts[2])
    if not all(isinstance(part, ConstantVar) for part in parts):
        raise Unsupported("not supported yet: slices with bounds that are arrays")
    return ConstantVar(slice(*(part.as_python_constant() for part in parts)))


def _slice_bound(tracer: Tracer, part: Variable) -> Variable:
    # An unspecialized int input (a resumed loop's index, `i + 1`) bounds the slice at run
    # time, guarded nonnegative: a slot's slice length assumes it (a negative one is
    # specialized, guarded equal, as before).
    bound = run_time_int(part)
    if bound is part or not isinstance(part, ScalarInputVar) or part.current < 0:
        return known_constant(part)
    assert part.source is not None
    tracer.builder.guard_relation(f"{part.source.name} >= 0", "a slice bound")
    return bound


def _binary_slice(frame: Frame, inst: Instruction) -> None:
    stop = frame.state.pop()
    start = frame.state.pop()
    container = frame.state.pop()
    frame.state.push(getitem(frame.tracer, container, _slice_of(frame.tracer, start, stop)))


def _store_slice(frame: Frame, inst: Instruction) -> None:
    stop = frame.state.pop()
    start = frame.state.pop()
    container = frame.state.pop()
    value = frame.state.pop()
    setitem(frame.tracer, container, _slice_of(frame.tracer, start, stop), value)


def _build_slice(frame: Frame, inst: Instruction) -> None:
    parts = frame.state.pop_n(inst.argval)
    frame.state.push(_slice_of(frame.tracer, *parts))


HANDLERS: dict[str, Handler] = {
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
    "STORE_GLOBAL": _store_global,
    "STORE_ATTR": _store_attr,
}
