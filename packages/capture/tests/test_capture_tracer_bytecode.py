"""The normalized instruction stream hides the 3.11/3.12/3.13 differences the tracer relies on."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from numpile_capture.bytecode import Instruction, normalized_instructions

# Raw opcodes that must never reach the tracer, on any version.
_NORMALIZED_AWAY = {
    "RESUME",
    "NOP",
    "CACHE",
    "PRECALL",
    "KW_NAMES",
    "TO_BOOL",
    "END_FOR",
    "COPY_FREE_VARS",
    "EXTENDED_ARG",
    "LOAD_METHOD",
    "LOAD_FAST_LOAD_FAST",
    "STORE_FAST_LOAD_FAST",
    "STORE_FAST_STORE_FAST",
    "LOAD_FAST_CHECK",
    "LOAD_CLOSURE",
    "JUMP_FORWARD",
    "JUMP_BACKWARD",
    "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_TRUE",
}


def _sample(x: Any, n: int) -> Any:
    total = 0
    for i in range(n):
        total += i
    k = 3

    def inner(y: Any) -> Any:
        return y + k

    a, b = x, x
    return inner(a).sum(axis=0), np.sin(b), [v * 2 for v in (a, b)], x[1:2]


def _ops(fn: Any) -> list[Instruction]:
    return list(normalized_instructions(fn.__code__))


def test_version_specific_opcodes_are_normalized_away() -> None:
    names = {inst.opname for inst in _ops(_sample)}
    assert not names & _NORMALIZED_AWAY


def test_keyword_names_travel_with_call() -> None:
    calls = [inst for inst in _ops(_sample) if inst.opname in ("CALL", "CALL_KW")]
    assert calls
    # Before 3.13 the names ride on CALL; 3.13's CALL_KW reads them from the stack.
    with_names = [inst for inst in calls if inst.opname == "CALL_KW" or inst.argval == ("axis",)]
    assert len(with_names) == 1


def test_method_and_global_flags() -> None:
    ops = _ops(_sample)
    sum_load = next(i for i in ops if i.opname == "LOAD_ATTR" and i.argval == "sum")
    assert sum_load.flag  # loaded as a method for the call
    range_load = next(i for i in ops if i.opname == "LOAD_GLOBAL" and i.argval == "range")
    assert range_load.flag  # pushes NULL for the call


def test_binary_ops_are_named() -> None:
    names = [i.argval for i in _ops(_sample) if i.opname == "BINARY_OP"]
    assert "iadd" in names and all(isinstance(name, str) for name in names)


def test_jump_targets_are_indices_of_kept_instructions() -> None:
    ops = _ops(_sample)
    for_iters = [i for i in ops if i.opname == "FOR_ITER"]
    jumps = [i for i in ops if i.target is not None]
    assert for_iters and jumps
    for inst in jumps:
        assert inst.target is not None and 0 <= inst.target <= len(ops)
    # The exhausted loop continues after the loop body (END_FOR and its POP_TOP are gone).
    loop = for_iters[0]
    assert loop.target is not None
    assert ops[loop.target].opname == "LOAD_CONST"  # k = 3


def test_line_numbers_point_at_the_source() -> None:
    lines, start = inspect.getsourcelines(_sample)
    ops = _ops(_sample)
    loads = [i for i in ops if i.opname == "LOAD_CONST" and i.argval == 3]
    expected = start + next(i for i, text in enumerate(lines) if "k = 3" in text)
    assert loads[0].lineno == expected


def test_try_blocks_are_marked() -> None:
    def f(x: Any) -> Any:
        try:  # noqa: SIM105 - the try block is the point of the test
            x = x + 1
        except ValueError:
            pass
        return x

    ops = _ops(f)
    adds = [i for i in ops if i.opname == "BINARY_OP"]
    assert adds[0].in_try
    assert not any(i.in_try for i in ops if i.opname == "RETURN_VALUE")


def test_results_are_cached_per_code_object() -> None:
    assert normalized_instructions(_sample.__code__) is normalized_instructions(_sample.__code__)
