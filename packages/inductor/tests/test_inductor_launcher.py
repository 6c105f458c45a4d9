"""`launcher.with_epilogue`: a functionalized graph's write-back, run on every call.

The pure graph's new values of mutated inputs are written back into them with NumPy's
unsafe cast, outputs come back as the graph's tuple, and an overlap between a mutated
input and another input sends the call to the barrier form. The write-back runs once per
iteration of a loop whose body breaks, so it calls no NumPy dispatcher's Python function.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from numpile_capture import TreeSpec
from numpile_inductor.graph_cache import Epilogue
from numpile_inductor.launcher import with_epilogue


def _add_into_first(a: Any, b: Any) -> tuple[Any, ...]:
    # A pure graph of `a += b; return a + 1`: its user output, then a's new value.
    new = a + b
    return (new + 1, new)


def _pair_spec() -> TreeSpec:
    return TreeSpec("tuple", (TreeSpec("leaf"), TreeSpec("leaf")))


def _epilogue(num_outputs: int, spec: TreeSpec) -> Epilogue:
    return Epilogue(spec, num_outputs, ((0, num_outputs),), ())


def _numpy_python_calls(fn: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    # The Python functions of NumPy's own modules that a call runs (its dispatchers).
    count = 0

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" and "/numpy/" in frame.f_code.co_filename:
            count += 1

    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, count


def test_the_write_back_casts_as_numpy_and_calls_no_numpy_python_function() -> None:
    run = with_epilogue(_add_into_first, _epilogue(1, TreeSpec("leaf")), _no_barrier)
    a = np.arange(4, dtype=np.int32)
    b = np.full(4, 0.75)
    result, calls = _numpy_python_calls(run, a, b)
    # a's new value is float64 (a + b) written back into int32 a: truncated, as NumPy's
    # `a[...] = a + b` and `np.copyto(a, a + b, casting="unsafe")` do.
    np.testing.assert_array_equal(a, np.array([0, 1, 2, 3], dtype=np.int32))
    np.testing.assert_array_equal(result, np.arange(4) + 1.75)
    # NumPy's `may_share_memory` dispatcher for the one overlap test, no `copyto` one.
    assert calls <= 1


def test_flat_outputs_come_back_as_a_tuple_of_the_graphs_outputs() -> None:
    def pure(a: Any, b: Any) -> tuple[Any, ...]:
        new = a * b
        return (new, b - 1.0, new)

    run = with_epilogue(pure, _epilogue(2, _pair_spec()), _no_barrier)
    a, b = np.ones(3), np.full(3, 2.0)
    first, second = run(a, b)
    np.testing.assert_array_equal(a, np.full(3, 2.0))
    np.testing.assert_array_equal(first, np.full(3, 2.0))
    np.testing.assert_array_equal(second, np.ones(3))


def test_a_mutated_input_overlapping_another_runs_the_barrier_form() -> None:
    ran: list[str] = []

    def barrier() -> Callable[..., Any]:
        def run(a: Any, b: Any) -> Any:
            ran.append("barrier")
            a += b
            return a + 1

        return run

    run = with_epilogue(_add_into_first, _epilogue(1, TreeSpec("leaf")), barrier)
    x = np.arange(6.0)
    run(x[:4], x[2:])
    assert ran == ["barrier"]
    run(np.zeros(4), np.ones(4))
    assert ran == ["barrier"]


def _no_barrier() -> Callable[..., Any]:
    raise AssertionError("no input overlaps another here")
