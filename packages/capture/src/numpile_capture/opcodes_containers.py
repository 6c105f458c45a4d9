"""Opcode handlers that build and unpack containers, iterate, and format strings.

>>> "BUILD_LIST" in HANDLERS
True
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .body_work import pays_for_pieces
from .bound_origins import fell_back, note_loop_bounds
from .bytecode import Instruction
from .capture_events import LoopNotKept, record_loop_not_kept
from .capture_result import Unsupported
from .config import config
from .loop_capture import LoopFallback, keep_loop, log
from .loop_entry import EmptyRange
from .loop_exit import BodyBreaks, NestedReturn
from .loop_ranges import RangeIterVar, pinned, range_iterator, unrolled
from .loop_region import in_python
from .operators import (
    iterate,
    specialized,
)
from .unroll_budget import MAX_UNROLLED_NODES
from .unrolled_loop import unroll_breaking_loop
from .variables import (
    ConstantVar,
    DictVar,
    GeneratorVar,
    IteratorVar,
    ListVar,
    TupleVar,
    Variable,
    known_constant,
)

if TYPE_CHECKING:
    from .frame import Frame

_PY313 = sys.version_info >= (3, 13)

Handler = Callable[["Frame", Instruction], None]

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
    iterable = frame.state.pop()
    following = frame.instructions[frame.pc] if frame.pc < len(frame.instructions) else None
    in_for = following is not None and following.opname == "FOR_ITER"
    loop = range_iterator(frame.tracer, iterable) if in_for else None
    if loop is not None:
        frame.state.push(loop)  # FOR_ITER keeps the loop (or unrolls it)
        return
    if isinstance(iterable, IteratorVar):
        iterator = iterable  # iter() of an iterator is itself: generators stay lazy
    else:
        iterator = IteratorVar(iterate(frame.tracer, iterable))
    frame.state.push(iterator)
    if in_for:
        assert following is not None
        items = _items_text(iterable, iterator)
        guarded = unroll_breaking_loop(frame, frame.pc) is None
        _note_unrolled(frame, following, items, guarded=guarded)


def _note_unrolled(frame: Frame, inst: Instruction, items: str, *, guarded: bool) -> None:
    # A `for` over items known now (a tuple, a list, a zip of them) runs unrolled by design:
    # each item is traced as it is (arrays of other shapes, Python constants that stay weak
    # scalars), which one loop body could not be. Said in explain, not a fallback.
    reason = (
        f"loop over {items} unrolled: the items are known at capture time and each is "
        "traced as it is (they may differ in type and shape); past "
        f"{MAX_UNROLLED_NODES} graph nodes the loop breaks the graph and runs in Python"
    )
    if guarded:
        reason += (
            "; its break on a run-time value is a cond: the copies after it run only "
            "while it is not taken"
        )
    filename = frame.code.co_filename
    log.info("%s (%s:%s)", reason, filename, inst.lineno)
    record_loop_not_kept(LoopNotKept(reason, filename, inst.lineno))


def _items_text(iterable: Variable, iterator: IteratorVar) -> str:
    # What a loop runs over, for its explain line: `a list of 3 items`, `4 constants`.
    if isinstance(iterator, GeneratorVar):
        return "a generator"
    count = len(iterator.items) - iterator.position
    if isinstance(iterable, ConstantVar):
        return f"{count} constants"
    nouns = {TupleVar: "a tuple", ListVar: "a list", DictVar: "a dict", IteratorVar: "an iterator"}
    return f"{nouns.get(type(iterable), iterable.describe())} of {count} items"


def _for_iter(frame: Frame, inst: Instruction) -> None:
    frame.tracer.iteration_nodes = set()  # an iteration starts: older values are materialized
    iterator = frame.state.peek()
    if isinstance(iterator, RangeIterVar) and frame.tracer.pin_trip_counts:
        iterator = pinned(iterator)  # see `pinned`: a loop VJP that needs the trip count
        frame.state.pop()
        frame.state.push(iterator)
    if isinstance(iterator, RangeIterVar):
        tracer = frame.tracer
        work = tracer.array_work
        try:
            if not tracer.keep_loops:
                raise LoopFallback(
                    "this capture unrolls loops (keep_loops=False: a differentiated loop "
                    "without a loop VJP)"
                )
            keep_loop(frame, inst, iterator)
            return
        except EmptyRange:
            # Empty on this call (guarded, see loop_entry): the loop vanishes.
            note_loop_bounds(iterator.bounds)
            frame.state.pop()
            frame.jump(inst)
            return
        except NestedReturn:
            raise  # the enclosing kept loop traces its body again (see loop_return)
        except LoopFallback as exc:
            fell_back(iterator.bounds)  # kept, or unrolled, with its static bounds instead
            reason = f"loop not kept as a loop: {exc}"
            pin = not isinstance(exc, BodyBreaks)
            # Compiled pieces per iteration would cost more than the body's Python: if the
            # body breaks (unrolled too), the whole loop runs in Python (body_work,
            # loop_region), at any trip count.
            small = (
                config.small_loops_in_python
                and not pin
                and frame.is_root
                and not pays_for_pieces(tracer.array_work - work)  # in the body traced
            )
        filename = frame.code.co_filename
        log.info("%s (%s:%s); it is unrolled", reason, filename, inst.lineno)
        record_loop_not_kept(LoopNotKept(reason, filename, inst.lineno))
        frame.unroll.not_kept(frame.pc - 1, reason)
        if small:
            assert inst.target is not None  # where the loop exits
            frame.small_bodies.note(frame.pc - 1, inst.target, reason, tracer.array_work)
        bounds = iterator.bounds
        try:
            iterator = unrolled(frame.tracer, iterator, pin=pin)
        except Unsupported as exc:
            # It breaks the graph at its head and runs in Python: a new trip count must not
            # compile again (its bounds' inputs are made dynamic, as a kept loop's are).
            note_loop_bounds(bounds)
            if small:
                raise in_python(reason, filename, inst.lineno) from None
            raise Unsupported(f"{reason}, and not unrolled: {exc.reason}") from None
        frame.state.pop()
        frame.state.push(iterator)
    if not isinstance(iterator, IteratorVar):
        # A Python iterator a resume function received: each step runs in Python.
        raise Unsupported(
            f"a loop over {iterator.describe()} resumed after a graph break: each step runs in "
            "Python"
        )
    item = iterator.next_item()
    if item is None:
        frame.state.pop()
        frame.jump(inst)
    else:
        frame.state.push(item)


# -- handlers: strings -------------------------------------------------------------------


def _constant_of(value: Variable, what: str) -> Any:
    value = known_constant(value)
    if not isinstance(value, ConstantVar):
        raise Unsupported(f"not supported yet: {what} of {value.describe()}")
    # Text shows numbers, never symbols: a symbolic size is specialized (guarded) here.
    return specialized(value.value)


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


HANDLERS: dict[str, Handler] = {
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
}
