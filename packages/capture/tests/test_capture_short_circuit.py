"""Short-circuit conditions on run-time values (short_circuit): `and` / `or` / `not` and
chained comparisons in `while` and `if` tests, inside and outside kept loops.

Each program runs eagerly and compiled (the eager backend runs the captured graph) at
trip counts 0, 1, 2 and 7; the graph must be one graph with its loops kept (nothing
unrolled, no graph break). The region finder is checked on the bytecode of the running
interpreter (3.11, 3.12 and 3.13 lay these tests out differently).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function, explain
from numpile_capture.bytecode import normalized_instructions
from numpile_capture.short_circuit import BRANCHES, find_condition
from numpile_capture.testing import assert_same_as_eager as _same
from numpile_capture.testing import op_names as _ops

TRIP_COUNTS = (0, 1, 2, 7)


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def leading_small(x: Any) -> Any:
    # `x[i]` runs only while `i < n`: evaluating both operands would index past the end.
    i = 0
    while i < x.shape[0] and abs(x[i]) < 1.5:
        i += 1
    return i


def while_and_in_for(x: Any) -> Any:
    # The benchmark's Mandelbrot form: a while on two run-time tests inside a for.
    n = 0
    for i in range(x.shape[0]):
        k = 0
        v = x[i] * 4.0
        while k < 6 and v > 0.1:
            v = v * 0.5
            k += 1
        n += k
    return n


def while_not_or(x: Any) -> Any:
    i = 0
    while not (i >= x.shape[0] or x[i] > 1.0):
        i += 1
    return i


def if_or(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 1.0 or x[i] < -1.0:
            s += x[i]
    return s


def if_chained(x: Any) -> Any:
    count = 0
    for i in range(x.shape[0]):
        if -0.5 <= x[i] < 1.0:
            count += 1
    return count


def if_mixed(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        if (x[i] > 0.0 and i % 2 == 0) or not x[i] > -1.0:
            s += x[i]
    return s


def three_operands(x: Any) -> Any:
    i = 0
    total = 0.0
    while i < x.shape[0] and total < 3.0 and x[i] > -2.5:
        total += abs(x[i])
        i += 1
    return total, i


def chained_and_chained(x: Any) -> Any:
    # Two chained comparisons joined by `and` (a neighbour in range on both axes): the
    # first chain's last test falls through to a jump on to the second, no exit.
    count = 0
    for i in range(x.shape[0]):
        j = i + 1
        if -1.0 <= x[i] < 1.0 and 0 <= j < x.shape[0]:
            count += 1
    return count


def _data(n: int) -> tuple[Any, ...]:
    return (np.array([0.2, -1.2, 0.7, 2.0, -0.4, 1.1, -3.0])[:n],)


PROGRAMS: list[Callable[..., Any]] = [
    leading_small,
    while_and_in_for,
    while_not_or,
    if_or,
    if_chained,
    if_mixed,
    three_operands,
    chained_and_chained,
]


@pytest.mark.parametrize("fn", PROGRAMS, ids=[fn.__name__ for fn in PROGRAMS])
def test_compound_condition_matches_eager(fn: Callable[..., Any]) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for n in TRIP_COUNTS:
        _same(compiled(*_data(n)), fn(*_data(n)))


@pytest.mark.parametrize("fn", PROGRAMS, ids=[fn.__name__ for fn in PROGRAMS])
def test_compound_condition_keeps_the_loop(fn: Callable[..., Any]) -> None:
    out = explain(fn)(*_data(7))
    assert not out.loops_not_kept, out.loops_not_kept
    assert out.graph_count == 1 and out.graph_break_count == 0
    ops = _ops(capture_function(fn, _data(7), {}).graph)
    assert "for_loop" in ops or "while_loop" in ops


def test_later_operands_run_only_when_eager_runs_them() -> None:
    # The second operand is traced into a `cond` branch, not computed unconditionally.
    text = str(capture_function(while_and_in_for, _data(7), {}).graph)
    assert "cond(" in text and "while_loop(" in text


def _jumps(fn: Callable[..., Any]) -> list[int]:
    instructions = normalized_instructions(fn.__code__)
    return [k for k, inst in enumerate(instructions) if inst.opname in BRANCHES]


def test_find_condition_spans_every_operand_of_an_and() -> None:
    instructions = normalized_instructions(leading_small.__code__)
    first = _jumps(leading_small)[0]
    condition = find_condition(instructions, first, len(instructions))
    assert condition is not None
    # Two operands, each ending in a jump; the carrier is the last one.
    assert len([end for end in condition.blocks.values() if end in _jumps(leading_small)]) == 2
    assert condition.carrier is not None
    assert instructions[condition.carrier].opname in BRANCHES
    assert condition.fall == condition.carrier + 1


def test_find_condition_of_a_chained_comparison_holds_its_cleanup() -> None:
    # `a <= x < b` keeps `x` on the stack and pops it on the early way out (a block that
    # ends in a jump, not a test): the region holds that block, and its last test leads,
    # through jumps, to both exits.
    instructions = normalized_instructions(if_chained.__code__)
    first = _jumps(if_chained)[0]
    condition = find_condition(instructions, first, len(instructions))
    assert condition is not None
    cleanup = [end for end in condition.blocks.values() if instructions[end].opname == "JUMP"]
    assert cleanup
    assert condition.carrier == max(_jumps(if_chained)[:2])


def test_a_single_test_is_no_region() -> None:
    def f(x: Any) -> Any:
        s = 0.0
        for i in range(x.shape[0]):
            if x[i] > 0.0:
                s += x[i]
        return s

    instructions = normalized_instructions(f.__code__)
    assert find_condition(instructions, _jumps(f)[0], len(instructions)) is None
