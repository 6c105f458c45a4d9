"""Loops that may run zero times (loop_entry): the code after them computes on eager's types.

A range of int inputs or sizes guards its emptiness (the empty entry has no loop node),
a `while` whose first test guards can read guards that test's outcome; a loop whose trip
count only the run time knows ends the graph after it, at the first instruction there
that computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, compile_function
from numpile_capture.bytecode import normalized_instructions
from numpile_capture.loop_entry import resume_index
from numpile_capture.testing import op_names as _ops
from numpile_guards import cache_for

pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def shifted_sum(x: Any, n: int) -> Any:
    s = 0
    for i in range(1, n):
        s = s + x[i]
    return s * 2


def test_an_int_input_range_guards_whether_it_runs_and_vanishes_when_empty() -> None:
    compiled = compile_function(shifted_sum, backend="eager", dynamic=True)
    x = np.arange(6)
    for n in (4, 1, 5, 0):
        got, want = compiled(x, n), shifted_sum(x, n)
        assert type(got) is type(want) and got == want
    entries = cache_for(shifted_sum.__code__).entries
    assert len(entries) == 2  # n > 1, and n <= 1
    texts = [entry.check.source for entry in entries]
    assert any("> 1" in text for text in texts) and any("<= 1" in text for text in texts)
    empty = capture_function(shifted_sum, (x, 0), {}).graph
    assert "for_loop" not in _ops(empty)


def test_the_graph_ends_at_the_first_instruction_after_the_loop_that_computes() -> None:
    def f(x: Any, k: Any) -> Any:
        s = 0.0
        while s < k:
            s = s + x[0]
        t = s
        return t * 2

    instructions = normalized_instructions(f.__code__)
    stores = [i for i, inst in enumerate(instructions) if inst.opname == "STORE_FAST"]
    exit_at = stores[-1] - 1  # `t = s`: the loads and the store before `t * 2` only move values
    at = resume_index(instructions, exit_at)
    assert (instructions[exit_at].opname, instructions[at].opname) == ("LOAD_FAST", "BINARY_OP")


def counted_sum(x: Any, n: int) -> Any:
    s = 0
    k = 0
    while k < n:
        s = s + x[k]
        k += 1
    return s * 2


def test_a_while_on_an_int_input_guards_its_first_test_and_vanishes_when_it_fails() -> None:
    compiled = compile_function(counted_sum, backend="eager", dynamic=True)
    x = np.arange(6)
    for n in (4, 0, 1, 5, 0):
        got, want = compiled(x, n), counted_sum(x, n)
        assert type(got) is type(want) and got == want
    entries = cache_for(counted_sum.__code__).entries
    assert len(entries) == 2  # one graph each: the first test true, and false
    assert all("0 < L['n']" in entry.check.source for entry in entries)
