"""Python float arithmetic in loops of kernels (codegen/c/loop_float_scalars.py): the body
rewritten with float64 0-d NumPy ops where that gives eager's values and types, the carried
float a C double, and eager's results (a Python float back) on the C loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, capture_function
from numpile_inductor import compile_graph
from numpile_inductor.codegen.c.loop_float_scalars import retype_python_floats


def _body(fn: Any, *args: Any) -> Graph:
    graph = capture_function(fn, args, {}).graph
    (loop,) = [n for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]
    body: Graph = dict(loop.params)["body"]
    return body


def _steps(y: Any, steps: int) -> Any:
    t = 0.0
    for _ in range(steps):
        y = y + 0.1 * (np.sin(t + 0.05) - y)
        t += 0.1
    return y, t


def test_float_arithmetic_becomes_float64_ops() -> None:
    body = retype_python_floats(_body(_steps, np.ones(4), 3))
    text = str(body)
    assert "py_binary" not in text
    assert "add(t, 0.05)  # float64[]" in text
    assert "add(t, 0.1)  # float64[]" in text


def test_a_rewrite_that_changes_a_type_is_refused() -> None:
    # `y32 * (t * 0.5)`: a Python float is weak beside float32 (NEP 50), a float64 0-d
    # value is not: the product would become float64.
    def scaled(y: Any, steps: int) -> Any:
        t = 1.0
        for _ in range(steps):
            y = y * (t * 0.5)
            t += 1.0
        return y, t

    with pytest.raises(ValueError, match="changes multiply's type"):
        retype_python_floats(_body(scaled, np.ones(4, dtype=np.float32), 3))


@pytest.mark.parametrize("steps", [0, 1, 6])
def test_a_carried_float_runs_in_the_c_loop_and_comes_back_a_python_float(steps: int) -> None:
    def run(y: Any) -> Any:
        return _steps(y, steps)

    y = np.linspace(0.0, 1.0, 7)
    compiled = compile_graph(capture_function(run, (y,), {}).graph)
    got_y, got_t = compiled.fn(y)
    want_y, want_t = run(y)
    assert type(got_t) is type(want_t)
    assert got_t == want_t
    assert got_y.dtype == want_y.dtype
    np.testing.assert_array_equal(got_y, want_y)
    # A C loop calling kernels (even for 0 trips: this graph's range is a constant).
    assert "static PyObject *loop_" in compiled.source and "_k0(" in compiled.source


def test_float32_arrays_beside_a_python_float_keep_their_dtype() -> None:
    def scaled(y: Any) -> Any:
        t = 1.0
        for _ in range(4):
            y = y * (t * 0.5)
            t += 1.0
        return y, t

    y = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    got_y, got_t = compile_graph(capture_function(scaled, (y,), {}).graph).fn(y)
    want_y, want_t = scaled(y)
    assert got_y.dtype == np.float32
    np.testing.assert_array_equal(got_y, want_y)
    assert type(got_t) is float and got_t == want_t
