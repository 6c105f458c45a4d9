"""The hit path's entry function: binding, guards, fetch and call fused per entry.

A warm call runs one generated function with the compiled function's own parameters
(`numpile_guards.compile_entry`). These tests pin what must not change with it: results
equal to eager, guard failures that still miss, Python's own TypeError for arguments that
do not bind, exceptions of the compiled code raised once and never answered by an eager
run, and the functions whose parameter names keep the unfused path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import CompiledFunction, Graph, register_backend, run_graph
from numpile_guards import cache_for

SCALE = 2.0


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _compiled(fn: Any, **options: Any) -> Any:
    return CompiledFunction(fn, backend="eager", **options)


def _warm(compiled: Any, *args: Any, **kwargs: Any) -> Any:
    compiled(*args, **kwargs)
    return compiled(*args, **kwargs)


def scaled_sum(x: Any, y: Any, n: int = 3) -> Any:
    return (x * SCALE + y) * n


def test_a_warm_call_runs_one_entry_function_over_the_parameters() -> None:
    f = _compiled(scaled_sum)
    x, y = np.arange(4.0), np.ones(4)
    np.testing.assert_array_equal(_warm(f, x, y), scaled_sum(x, y))
    enter = f._hit.enter
    assert enter is not None
    # The guards read the parameters themselves, not a dict of them.
    assert "def scaled_sum(x, y, n=_d[0]):" in enter.source
    assert "L[" not in enter.source
    np.testing.assert_array_equal(f(x, y, n=4), scaled_sum(x, y, n=4))
    np.testing.assert_array_equal(f(y=y, x=x), scaled_sum(x, y))


def test_guard_failures_of_the_entry_function_still_recompile() -> None:
    global SCALE
    f = _compiled(scaled_sum, dynamic=False)
    x, y = np.arange(4.0), np.ones(4)
    _warm(f, x, y)
    entries = len(cache_for(scaled_sum.__code__).entries)
    # Another shape, dtype, int value and global: each is a miss and a new entry.
    np.testing.assert_array_equal(
        f(np.arange(5.0), np.ones(5)), scaled_sum(np.arange(5.0), np.ones(5))
    )
    np.testing.assert_array_equal(f(x.astype(np.float32), y), scaled_sum(x.astype(np.float32), y))
    np.testing.assert_array_equal(f(x, y, 7), scaled_sum(x, y, 7))
    SCALE = 3.0
    try:
        np.testing.assert_array_equal(f(x, y), scaled_sum(x, y))
    finally:
        SCALE = 2.0
    assert len(cache_for(scaled_sum.__code__).entries) > entries


def first_plus_second(x: Any, y: Any) -> Any:
    return x[: y.shape[0]] + y


def test_size_relations_are_checked_over_the_parameters() -> None:
    f = _compiled(first_plus_second, dynamic=True)
    _warm(f, np.arange(6.0), np.ones(6))
    _warm(f, np.arange(9.0), np.ones(9))
    for n, m in ((9, 9), (7, 3), (4, 4), (12, 5)):
        x, y = np.arange(float(n)), np.ones(m)
        np.testing.assert_array_equal(f(x, y), first_plus_second(x, y))


def test_wrong_arguments_raise_pythons_own_type_error() -> None:
    f = _compiled(scaled_sum)
    x, y = np.arange(3.0), np.ones(3)
    _warm(f, x, y)
    assert f._hit.enter is not None
    for args, kwargs in (((x,), {}), ((x, y, 1, 2), {}), ((x, y), {"m": 1}), ((x,), {"x": y})):
        with pytest.raises(TypeError) as ours:
            f(*args, **kwargs)
        with pytest.raises(TypeError) as eager:
            scaled_sum(*args, **kwargs)
        assert str(ours.value) == str(eager.value)


def bump(x: Any) -> Any:
    x += 1.0
    return x


@register_backend(name="entry_function_raises")
def _raising_backend(graph: Graph, example_inputs: Any) -> Any:
    # Runs the graph, but raises TypeError (before writing anything) on its third call: an
    # error of the compiled code.
    calls = []

    def run(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise TypeError("raised by the compiled code")
        return run_graph(graph, args)

    return run


def test_a_type_error_of_the_compiled_code_is_raised_once_and_never_rerun_eagerly() -> None:
    f = CompiledFunction(bump, backend="entry_function_raises")
    x = np.zeros(3)
    _warm(f, x)
    np.testing.assert_array_equal(x, 2.0)
    assert f._hit.enter is not None
    with pytest.raises(TypeError, match="raised by the compiled code"):
        f(x)
    # An eager run after the error would have added one more.
    np.testing.assert_array_equal(x, 2.0)
    np.testing.assert_array_equal(f(x), 3.0)


def shadowing(x: Any, len: Any, G: Any, _c0: Any) -> Any:
    return x + len * G - _c0


def test_parameters_named_like_the_entrys_own_names_keep_the_unfused_path() -> None:
    f = _compiled(shadowing)
    args = (np.arange(3.0), np.ones(3), 2.0, 1.0)
    np.testing.assert_array_equal(_warm(f, *args), shadowing(*args))
    assert f._hit.enter is None
    np.testing.assert_array_equal(f(*args), shadowing(*args))


def _adder(step: float) -> Any:
    def add(x: Any) -> Any:
        return x + step

    return add


def test_closures_of_one_code_each_get_their_own_cell() -> None:
    one, two = _compiled(_adder(1.0)), _compiled(_adder(2.0))
    x = np.zeros(3)
    for _ in range(3):
        np.testing.assert_array_equal(one(x), x + 1.0)
        np.testing.assert_array_equal(two(x), x + 2.0)
