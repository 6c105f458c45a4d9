"""Resume and break code objects, run as plain Python (no capture involved)."""

from __future__ import annotations

import dis
import itertools
import sys
import types
from typing import Any

import pytest

from numpile_capture.bytecode import normalized_instructions
from numpile_capture.resume_code import (
    BreakSite,
    Continuation,
    TailCall,
    break_code,
    resume_code,
    stack_names,
)

_CALL_LAYOUT = (False, True) if sys.version_info >= (3, 13) else (True, False)


def _index_of(fn: Any, opname: str, nth: int = 0) -> int:
    found = [
        i for i, inst in enumerate(normalized_instructions(fn.__code__)) if inst.opname == opname
    ]
    return found[nth]


def _prints(x: int, n: int) -> int:
    y = x + n
    print("y", y)
    return y * 2


def _function(code: types.CodeType) -> types.FunctionType:
    return types.FunctionType(code, globals(), code.co_name)


def _finish(result: Any) -> Any:
    # A break function hands back its resume call; make it, as the runner does.
    while isinstance(result, TailCall):
        result = result.run()
    return result


def test_resume_continues_after_the_call(capsys: pytest.CaptureFixture[str]) -> None:
    site = BreakSite.at(_prints.__code__, _index_of(_prints, "CALL"), (*_CALL_LAYOUT, False, False))
    assert site.jump is None and site.fallthrough is not None
    assert site.fallthrough.nulls == (False,)  # the call's result
    resume = _function(resume_code(_prints.__code__, site.fallthrough, ["x", "n", "y"]))
    assert resume.__code__.co_varnames[:4] == ("___stack0", "x", "n", "y")
    assert resume(None, 1, 2, 3) == 6
    breaking = _function(break_code(site, ["x", "n", "y"], resume, None))
    stack = [print, "y", 3]  # the non-NULL stack values: the callable and its arguments
    assert _finish(breaking(*stack, 1, 2, 3)) == 6
    assert capsys.readouterr().out == "y 3\n"


def test_resume_code_is_cached_per_place() -> None:
    site = BreakSite.at(_prints.__code__, _index_of(_prints, "CALL"), (*_CALL_LAYOUT, False, False))
    assert site.fallthrough is not None
    first = resume_code(_prints.__code__, site.fallthrough, ["x", "n", "y"])
    assert resume_code(_prints.__code__, site.fallthrough, ["x", "n", "y"]) is first
    assert resume_code(_prints.__code__, site.fallthrough, ["x", "y"]) is not first


def _branches(flag: Any, a: int) -> int:
    if flag:
        return a + 1
    return a - 1


def test_conditional_jump_has_two_continuations() -> None:
    index = _index_of(_branches, "POP_JUMP_IF_FALSE")
    site = BreakSite.at(_branches.__code__, index, (False,))
    assert site.fallthrough is not None and site.jump is not None
    on_true = _function(resume_code(_branches.__code__, site.fallthrough, ["flag", "a"]))
    on_false = _function(resume_code(_branches.__code__, site.jump, ["flag", "a"]))
    breaking = _function(break_code(site, ["flag", "a"], on_true, on_false))
    assert _finish(breaking(True, True, 10)) == 11
    assert _finish(breaking([], [], 10)) == 9


def test_stack_names_skip_null_positions() -> None:
    assert stack_names((True, False)) == ["___stack1"]


def _captures_a_local(x: int) -> Any:
    print("before", x)
    x = x + 1

    def inner() -> int:
        return x * 10

    return inner()


def test_a_captured_local_resumes_as_a_value_in_a_fresh_cell() -> None:
    site = BreakSite.at(
        _captures_a_local.__code__,
        _index_of(_captures_a_local, "CALL"),
        (*_CALL_LAYOUT, False, False),
    )
    assert site.fallthrough is not None
    resume = _function(resume_code(_captures_a_local.__code__, site.fallthrough, ["x"]))
    assert "x" in resume.__code__.co_cellvars
    assert resume(None, 4) == 50  # the print's result, then x: MAKE_CELL wraps it again


def _long_loop_code() -> types.CodeType:
    # A loop body long enough that its JUMP_BACKWARD needs an EXTENDED_ARG prefix.
    body = "\n".join("        t += 1" for _ in range(150))
    source = f"def long_loop(k, t):\n    for _ in range(k):\n{body}\n    return t\n"
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    code: types.CodeType = namespace["long_loop"].__code__
    return code


def test_a_jump_to_an_extended_arg_resumes_at_its_instruction() -> None:
    # A jump targets the EXTENDED_ARG before a long JUMP_BACKWARD (brent's method in
    # benchmarks.unseen_programs_fifth raised Unsupported from a nested resume).
    code = _long_loop_code()
    raw = list(dis.get_instructions(code))
    prefix = next(
        inst.offset
        for inst, following in itertools.pairwise(raw)
        if inst.opname == "EXTENDED_ARG" and following.opname == "JUMP_BACKWARD"
    )
    resume = _function(resume_code(code, Continuation(prefix, (False,)), ["k", "t", "_"]))
    assert resume(iter(range(2)), 3, 0, 0) == 300  # back to FOR_ITER: two more iterations
