"""NumPy's floating-point error state: "raise", "call", "print" and "log" behave as in eager.

Each test runs a compiled graph's callable in both its forms: the Python one (what the
Python hit path calls) and the C one a call gate calls (`numpile_runtime.gate_form`, an
`ErrstateCall`), which must behave the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import numpile_runtime as rt
from numpile_capture import CompiledFunction, capture_function
from numpile_inductor import compile_graph


def _divide_then_add(x: Any, y: Any) -> Any:
    return np.sin(x) / y + 1


def _log_in_place(x: Any) -> Any:
    x += 1.0
    x *= 2.0
    return np.log(x).sum()


@pytest.fixture(params=["python", "c"])
def form(request: pytest.FixtureRequest) -> str:
    # Which form of a compiled callable a test calls: the Python one or the C one.
    if request.param == "c" and rt.gate_module() is None:
        pytest.skip("no call gate extension here (no C compiler, or NUMPILE_CALL_GATE=0)")
    return str(request.param)


def _compiled(fn: Callable[..., Any], *args: Any, form: str = "python") -> Callable[..., Any]:
    copies = [a.copy() for a in args]
    compiled = compile_graph(capture_function(fn, tuple(copies), {}).graph).fn
    if form == "python":
        return compiled
    c_form = rt.gate_form(compiled)
    assert c_form is not compiled
    return c_form


@pytest.mark.parametrize("setting", ["divide", "all"])
def test_a_raising_error_state_raises_numpys_floating_point_error(setting: str, form: str) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y, form=form)
    with np.errstate(**{setting: "raise"}):
        with pytest.raises(FloatingPointError) as expected:
            _divide_then_add(x, y)
        with pytest.raises(FloatingPointError) as got:
            compiled(x, y)
        np.testing.assert_array_equal(compiled(x, np.ones(8)), _divide_then_add(x, np.ones(8)))
    assert str(got.value) == str(expected.value) == "divide by zero encountered in divide"


def test_error_callbacks_see_what_eager_reports(form: str) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y, form=form)
    seen: list[tuple[str, int]] = []
    old = np.seterrcall(lambda kind, flag: seen.append((kind, flag)))
    try:
        with np.errstate(all="call"):
            expected = _divide_then_add(x, y)
            eager_calls = list(seen)
            seen.clear()
            got = compiled(x, y)
    finally:
        np.seterrcall(old)
    np.testing.assert_array_equal(got, expected)
    assert seen == eager_calls == [("divide by zero", 1)]


def test_in_place_graphs_mutate_once_under_a_raising_state(form: str) -> None:
    x = np.array([-2.0, 0.5, 3.0])
    compiled = _compiled(_log_in_place, x, form=form)
    eager_x, compiled_x = x.copy(), x.copy()
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            _log_in_place(eager_x)
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            compiled(compiled_x)
    # NumPy wrote the updates before the log raised; so did the op-by-op run, once each.
    np.testing.assert_array_equal(compiled_x, eager_x)


def test_kernels_run_unless_a_flag_the_state_checks_is_raised(
    numpy_reruns: list[int], form: str
) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y, form=form)
    with np.errstate(all="ignore"):
        compiled(x, y)
    with np.errstate(divide="ignore", invalid="warn"):
        compiled(x, y)
    compiled(x, np.ones(8))  # warns on division by zero, but divides by none
    with np.errstate(all="raise"):
        compiled(x, np.ones(8))  # raises on any error, but meets none
    with np.errstate(over="raise", divide="ignore"):
        compiled(x, y)  # the division by zero is ignored: the kernels' result stands
    assert numpy_reruns == []
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        compiled(x, y)  # a flag the state warns about: op by op, for NumPy's warning
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        compiled(x, y)  # and one it raises on: op by op, for NumPy's error
    assert numpy_reruns == [1, 1]


def _matmul_then_log(a: Any, b: Any) -> Any:
    return np.log(a @ b)


def test_a_module_calling_numpy_itself_runs_op_by_op_under_a_strict_state(
    numpy_reruns: list[int], form: str
) -> None:
    # matmul runs inside the module as a NumPy call, which would raise inside it: under a
    # strict state such a graph runs op by op from the start.
    a = np.full((2, 2), np.inf)
    b = np.zeros((2, 2))
    compiled = _compiled(_matmul_then_log, a, b, form=form)
    raising = np.errstate(invalid="raise")
    with raising, pytest.raises(FloatingPointError, match="invalid value encountered in matmul"):
        compiled(a, b)
    assert numpy_reruns == [1]


def test_a_global_seterr_is_seen_by_later_calls(numpy_reruns: list[int], form: str) -> None:
    x, y = np.ones(8), np.zeros(8)
    compiled = _compiled(_divide_then_add, x, y, form=form)
    with np.errstate(divide="ignore"):
        compiled(x, y)
        old = np.seterr(divide="raise")
        try:
            with pytest.raises(FloatingPointError):
                compiled(x, y)
        finally:
            np.seterr(**old)
        compiled(x, y)
    assert numpy_reruns == [1]


def _overflowing_rows(x: Any) -> Any:
    # A loop writing a fresh array: a graph that cannot run again after its module ran
    # (its flags give the module's own warning, after the call).
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * 1e300 * 1e300
    return out


def test_a_graph_that_cannot_run_again_warns_ignores_and_raises_as_eager(form: str) -> None:
    x = np.array([1.0, 0.0, -2.0])
    compiled = _compiled(_overflowing_rows, x, form=form)
    with np.errstate(over="ignore"):
        want = _overflowing_rows(x)
        for _ in range(2):  # the second call of a state is the C form's own
            np.testing.assert_array_equal(compiled(x), want)
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="overflow"):
            np.testing.assert_array_equal(compiled(x), want)
    with np.errstate(over="raise"):
        for _ in range(2):
            with pytest.raises(FloatingPointError, match="overflow"):
                compiled(x)


def test_the_c_form_answers_calls_and_the_python_path_each_new_state() -> None:
    # The C form runs the module with no Python frame while NumPy's error state is the one
    # the module was told about; a new state goes through the Python path once, which tells
    # the module; the results are the Python form's, bit for bit.
    if rt.gate_module() is None:
        pytest.skip("no call gate extension here (no C compiler, or NUMPILE_CALL_GATE=0)")
    x, y = np.linspace(-3.0, 3.0, 8), np.linspace(0.5, 2.0, 8)
    python = _compiled(_divide_then_add, x, y)
    c_form = _compiled(_divide_then_add, x, y, form="c")
    for setting in ("ignore", "warn", "raise"):
        with np.errstate(all=setting):
            hits = c_form.hits
            first = c_form(x, y)
            assert c_form.hits == hits  # a state the module was not told: the Python path
            second = c_form(x, y)
            assert c_form.hits == hits + 1
            np.testing.assert_array_equal(first, python(x, y))
            np.testing.assert_array_equal(second, first)
    np.testing.assert_allclose(c_form(x, y), _divide_then_add(x, y), rtol=1e-15)  # sin's ulp
    c_form.disarm()  # what unloading the module does: the Python path from then on
    hits = c_form.hits
    np.testing.assert_array_equal(c_form(x, y), python(x, y))
    assert c_form.hits == hits


def _sum_of_squares(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def test_compiled_functions_reach_the_module_through_the_c_form() -> None:
    # A compiled function's hits go through its call gate to the C form (no Python frame),
    # with NumPy's error state still honoured on every call.
    gates = rt.gate_module()
    if gates is None:
        pytest.skip("no call gate extension here (no C compiler, or NUMPILE_CALL_GATE=0)")
    f = CompiledFunction(_sum_of_squares, backend="inductor")
    x = np.linspace(0.0, 1.0, 50)
    for _ in range(3):  # compile, remember (the gate armed), through the gate
        f(x)
    hits = gates.errstate_total_hits()
    assert f(x) == _sum_of_squares(x)
    assert gates.errstate_total_hits() == hits + 1
    big = np.full(4, 1e200)
    with np.errstate(over="raise"):
        for _ in range(2):
            with pytest.raises(FloatingPointError, match="overflow"):
                f(big)
    with np.errstate(over="ignore"):
        assert f(big) == _sum_of_squares(big) == np.inf
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert f(big) == np.inf
