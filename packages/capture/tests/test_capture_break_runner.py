"""The per-iteration path of a loop whose body breaks and runs as compiled pieces.

Each iteration calls the body's resume functions one after the other, with the breaking
instruction in Python between them (`break_runner`): the Python calls numpile makes on
that path are its overhead, paid once per piece per iteration. The tests count them (the
calls of numpile's own functions and of the code it generates, not those of the backend's
graph) with the trip count doubled, and compare values with eager.
"""

from __future__ import annotations

import io
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, reset, run_graph
from numpile_capture.config import config
from numpile_capture.graph import Graph

pytestmark = pytest.mark.filterwarnings("ignore::numpile_capture.NumpilePerformanceWarning")

SINK = io.StringIO()


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def _graph_backend(graph: Graph, example_inputs: Any) -> Callable[..., Any]:
    def run(*inputs: Any) -> Any:
        return run_graph(graph, inputs)

    return run


def _two_updates(a: Any, b: Any, n: int) -> Any:
    for i in range(n):
        a += b * 0.5
        print(i, file=SINK)
        b -= a * 0.25
    return a, b


def _numpile_calls(fn: Callable[..., Any], *args: Any) -> int:
    # The Python calls of the per-piece path: the break runner's, the resume calls', the
    # dispatcher's and the generated binders', guards' and argument pickers'.
    files = tuple(
        f"numpile_capture/{module}"
        for module in ("break_runner.py", "resume_code.py", "dispatch.py")
    )
    count = 0

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal count
        name = frame.f_code.co_filename
        if event == "call" and (name.endswith(files) or name.startswith("<numpile")):
            count += 1

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return count


def test_each_piece_of_a_breaking_body_costs_at_most_five_python_calls() -> None:
    # Per piece: the TailCall made, the resume's `call_tail`, its fused check-fetch-run entry,
    # the break runner's tail, the argument picker (the break function is the user's code).
    # Before: a `run` per TailCall, a helper making it, a binder, a guard check and a fetch
    # apart, a call per rebuilt value and a list of the arguments (10 or more).
    compiled = compile_function(_two_updates, backend=_graph_backend)
    with config.patch(small_loops_in_python=False):
        a, b = np.arange(5.0), np.ones(5)
        for n in (10, 20, 10, 20):  # the second trip count makes `n` an input
            compiled(a.copy(), b.copy(), n)
        short = _numpile_calls(compiled, a.copy(), b.copy(), 10)
        long = _numpile_calls(compiled, a.copy(), b.copy(), 20)
        got = compiled(a.copy(), b.copy(), 7)
    pieces = 2 * 10  # two resume functions per iteration
    assert (long - short) / pieces <= 5
    want = _two_updates(a.copy(), b.copy(), 7)
    for got_array, want_array in zip(got, want, strict=True):
        np.testing.assert_array_equal(got_array, want_array)
        assert got_array.dtype == want_array.dtype


def test_the_resume_calls_of_a_breaking_body_keep_eager_in_place_writes() -> None:
    # The arrays the body updates in place are the caller's, as in eager, however the
    # pieces' arguments are picked.
    compiled = compile_function(_two_updates, backend=_graph_backend)
    with config.patch(small_loops_in_python=False):
        a, b = np.arange(6.0), np.linspace(0.0, 1.0, 6)
        want_a, want_b = a.copy(), b.copy()
        _two_updates(want_a, want_b, 9)
        got = compiled(a, b, 9)
    assert got[0] is a and got[1] is b
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)


def test_a_tail_call_calls_a_compiled_resume_functions_call_tail() -> None:
    from numpile_capture.resume_code import TailCall, tail_target

    class Resume:
        def call_tail(self, *args: Any) -> Any:
            return ("tail", args)

    resume = Resume()
    assert tail_target(max) is max
    assert TailCall(tail_target(resume), 1, 2).run() == ("tail", (1, 2))


def test_break_arguments_built_of_picked_values_are_one_generated_function() -> None:
    # A break's arguments that are tuples, lists or dicts of graph outputs, fetched values
    # and constants (CPython 3.13 builds a call's keyword names so) are gathered by one
    # generated function, with the values the step-by-step rebuild makes.
    from numpile_capture.break_runner import _argument_gatherer
    from numpile_capture.rebuild_steps import Build, Constant, FromGraph, FromInput

    steps = [
        FromGraph(1),
        FromInput(0),
        Constant("file"),
        Build(tuple, (2,)),
        Build(list, (0, 1)),
        Build(dict, (0, 2), keys=("a", "b")),
        Build(tuple, ()),
    ]
    gather = _argument_gatherer(steps, [4, 3, 5, 6, 1], count=2)
    assert gather is not None
    assert gather.__code__.co_filename == "<numpile break arguments>"
    got = gather(("out0", "out1"), ("in0", "in1", "extra0"))
    assert got == (["out1", "extra0"], ("file",), {"a": "out1", "b": "file"}, (), "extra0")
