"""NumPy scalars' Python operators: a graph's NumPy run warns as eager's `a * b` does, and
capture keeps an op on constants that warns as a node (it warns on every call)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function, run_graph
from numpile_capture.dynamic_shapes import DynamicPolicy, capturing_with
from numpile_capture.scalar_operators import scalar_operator


def _recorded(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[tuple[str, int]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(str(w.message), w.lineno) for w in caught]


def _mixed(a: Any, b: Any) -> Any:
    return -(a * b) + 1, abs(a) // b


@pytest.mark.parametrize(
    "a, b",
    [
        (np.int8(-128), np.int8(2)),
        (np.int8(-128), np.int8(0)),
        (np.uint8(1), np.uint8(0)),
        (np.float32(3e38), np.float32(10)),
        (np.array(-128, np.int8), np.array(2, np.int8)),  # 0-d arrays: ufuncs, silent
    ],
    ids=repr,
)
def test_run_graph_warns_as_the_operators_on_numpy_scalars(a: Any, b: Any) -> None:
    with capturing_with(DynamicPolicy(None, loop_locals=True)):
        graph = capture_function(_mixed, (a, b), {}).graph
    expected, eager_warnings = _recorded(_mixed, a, b)
    got, graph_warnings = _recorded(run_graph, graph, (a, b))
    assert graph_warnings == eager_warnings
    assert [type(v) for v in got] == [type(v) for v in expected]
    np.testing.assert_array_equal(got, expected)


def test_scalar_operator_only_for_numpy_scalars() -> None:
    assert scalar_operator("add", (np.int8(1), 2)) is not None
    assert scalar_operator("add", (1, 2)) is None  # Python scalars keep the ufunc's dtype
    assert scalar_operator("add", (np.zeros(2), np.int8(1))) is None
    assert scalar_operator("sin", (np.float64(1.0),)) is None


def test_constants_that_warn_stay_ops_of_the_graph() -> None:
    def product(a: Any, b: Any) -> Any:
        return a * b, -b, a + b

    graph = capture_function(product, (np.int64(2**62), np.int64(4)), {}).graph
    # The overflowing product stays an op; -b and a + b fit, and are folded.
    assert [node.op.name for node in graph.nodes if node.op is not None] == ["multiply"]
    for _ in range(2):  # every run warns, from the user's line
        expected, eager_warnings = _recorded(product, np.int64(2**62), np.int64(4))
        got, graph_warnings = _recorded(run_graph, graph, ())
        assert graph_warnings == eager_warnings != []
        assert got == expected
