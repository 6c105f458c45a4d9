"""Counters that bound a `while` loop: the range of a carried int its test keeps below a bound.

`k = 0; while k < n: s = s + x[k]; k += 1` indexes `x` with a carried int, not with a loop
index whose range the loop's bounds give (`loop_index`). The loop's own code bounds it:
the test `k < n` holds as each iteration starts, and every store of `k` in the body adds
a constant of at least 0 to it, so from a start of at least 0 the counter stays in
`[start, n - 1]` at the start of every iteration. `counters` finds such counters in the
bytecode; while a body is traced, `bounded_counters` says which graph value each one is,
and `counter_within` decides whether it indexes within an axis: `n <= size` (`n < size`
for `k <= n`), decided by the sizes when it can be, else from the values of this call,
with a guard that keeps it true (the check before the loop that a `try` block needs: an
index that stays within its axis raises nothing the handler could see).

    >>> counter_within(object(), 5) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from numpile_guards import relation
from numpile_guards.symbolic import SymInt

from .bytecode import Instruction
from .variables import ConstantVar, ScalarInputVar, Variable

if TYPE_CHECKING:
    from .frame import Frame
    from .variable_builder import VariableBuilder


@attrs.frozen
class Counter:
    """A carried int in `[start, stop]` as each iteration starts (`stop - 1` when the
    test is strict: `k < stop`), `stop` a value the body does not change."""

    start: int
    stop: Variable
    strict: bool


# NOTE: the comparisons a counter's test may make, `counter <op> stop`, and whether strict.
_TESTS = {"<": True, "<=": False}

# NOTE: the binary operators a store of the counter may add a constant with.
_ADDS = ("add", "iadd")


def counters(frame: Frame, entry: int, body: int, test: int, again_if: bool) -> dict[str, Counter]:
    """The counters of the while loop whose entry test jumps at instruction `entry` and
    whose bottom test jumps at `test` (`again_if`: its truth that repeats the loop), its
    body at [body, test): locals bound to an int of at least 0 now, compared by both
    tests with a bound the body does not store, and only ever incremented in the body."""
    if not again_if:
        return {}
    instructions = frame.instructions
    entry_test = _comparison(instructions, entry)
    if entry_test is None or entry_test != _comparison(instructions, test):
        return {}
    name, stop, strict = entry_test
    start = frame.state.locals.get(name)
    if not (isinstance(start, ConstantVar) and type(start.value) is int and start.value >= 0):
        return {}
    code = instructions[body:test]
    if isinstance(stop, str) and any(_stores(inst, stop) for inst in code):
        return {}
    for position, inst in enumerate(code):
        if _stores(inst, name) and not _increments(code, position, name):
            return {}
    if isinstance(stop, str) and not frame.state.has_local(stop):
        return {}
    bound = frame.state.read_local(stop) if isinstance(stop, str) else ConstantVar(stop)
    return {name: Counter(start.value, bound, strict)}


def range_counter(bounds: tuple[Variable, Variable, Variable]) -> Counter | None:
    """The index of `range(start, stop, step)` as a counter, when its stop is an int
    argument compiled unspecialized (no size bounds it) and its start and step are ints of
    at least 0 and 1: the index is then in `[start, stop - 1]`, as a counter below stop."""
    start, stop, step = bounds
    known = all(isinstance(var, ConstantVar) and type(var.value) is int for var in (start, step))
    if not known or not isinstance(stop, ScalarInputVar) or type(stop.current) is not int:
        return None
    assert isinstance(start, ConstantVar) and isinstance(step, ConstantVar)
    if start.value < 0 or step.value < 1:
        return None
    return Counter(start.value, stop, True)


def _comparison(
    instructions: Sequence[Instruction], jump: int
) -> tuple[str, str | int, bool] | None:
    # `LOAD_FAST k; LOAD_FAST n (or LOAD_CONST c); COMPARE_OP <` before the jump at `jump`:
    # (k, n or c, strict), else None.
    if jump < 3:
        return None
    load, bound, compare = instructions[jump - 3 : jump]
    if load.opname != "LOAD_FAST" or compare.opname != "COMPARE_OP":
        return None
    strict = _TESTS.get(str(compare.argval))
    if strict is None:
        return None
    if bound.opname == "LOAD_FAST":
        return str(load.argval), str(bound.argval), strict
    if bound.opname == "LOAD_CONST" and type(bound.argval) is int:
        return str(load.argval), bound.argval, strict
    return None


def _stores(inst: Instruction, name: str) -> bool:
    return inst.opname in ("STORE_FAST", "DELETE_FAST") and inst.argval == name


def _increments(code: Sequence[Instruction], position: int, name: str) -> bool:
    # `k += c` or `k = k + c` with an int c >= 0 right before the store at `position`.
    if position < 3 or code[position].opname != "STORE_FAST":
        return False
    load, step, add = code[position - 3 : position]
    return (
        load.opname == "LOAD_FAST"
        and load.argval == name
        and step.opname == "LOAD_CONST"
        and type(step.argval) is int
        and step.argval >= 0
        and add.opname == "BINARY_OP"
        and add.argval in _ADDS
    )


@attrs.frozen
class _Bounded:
    counter: Counter
    builder: VariableBuilder


# NOTE: the graph values that are counters while a body is traced (see bounded_counters).
_ACTIVE: dict[Any, _Bounded] = {}


@contextmanager
def bounded_counters(values: Mapping[Any, Counter], builder: VariableBuilder) -> Iterator[None]:
    """While a body is traced: each graph value of `values` is that counter (its guards
    go to `builder`)."""
    added = [value for value in values if value not in _ACTIVE]
    for value in added:
        _ACTIVE[value] = _Bounded(values[value], builder)
    try:
        yield
    finally:
        for value in added:
            del _ACTIVE[value]


def counter_within(value: Any, size: Any) -> bool | None:
    """Whether the graph value `value`, a counter of a body traced now, indexes within an
    axis of `size` (guarded where this call's values decide it); None for no counter."""
    bounded = _ACTIVE.get(value)
    if bounded is None:
        return None
    counter, builder = bounded.counter, bounded.builder
    stop = counter.stop
    if isinstance(stop, ScalarInputVar) and type(stop.current) is int:
        return _input_within(stop, counter.strict, size, builder)
    if isinstance(stop, ConstantVar) and isinstance(stop.value, SymInt):
        top = stop.value.expr
    elif isinstance(stop, ConstantVar) and type(stop.value) is int:
        top = stop.value
    else:
        return False
    # The counter is at most `top - 1` (strict) or `top`: within when that is below size.
    if isinstance(top, int) and isinstance(size, int):
        return top - 1 < size if counter.strict else top < size
    from .dynamic_shapes import active_shape_env

    env = active_shape_env()
    if env is None:
        return False
    within = relation("<=" if counter.strict else "<", top, size)
    return env.evaluate(within, reason="a counter indexing inside a try block")


def _input_within(stop: ScalarInputVar, strict: bool, size: Any, builder: VariableBuilder) -> bool:
    # A bound that is an unspecialized int argument: its value now decides; a guard on its
    # source keeps it (a call past the size captures again, and the loop is not kept).
    assert stop.source is not None
    if isinstance(size, int):
        hint, text = size, str(size)
    else:
        from .dynamic_shapes import active_shape_env

        env = active_shape_env()
        if env is None:
            return False
        hint, text = env.hint(size), env.render(size)
    within = stop.current <= hint if strict else stop.current < hint
    if within:
        op = "<=" if strict else "<"
        builder.guard_relation(
            f"{stop.source.name} {op} {text}", "a counter indexing inside a try block"
        )
    return bool(within)
