"""The eager tier: a backend's callable that raises `NotCompiledYet` has the function run eagerly.

Offered only for a graph that is the whole function; every call gives eager's values and
in-place effects exactly once, on the first call, on a remembered hit and after the switch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    Graph,
    NotCompiledYet,
    compile_function,
    graph_break,
    run_graph,
)


class _Tiered:
    """A backend's callable that hands its first `eager_calls` calls back when offered."""

    def __init__(self, graph: Graph, eager_calls: int) -> None:
        self.graph = graph
        self.eager_calls = eager_calls
        self.offered = False
        self.graph_runs = 0

    def accept_eager_tier(self) -> None:
        self.offered = True

    def __call__(self, *args: Any) -> Any:
        if self.offered and self.eager_calls > 0:
            self.eager_calls -= 1
            raise NotCompiledYet("not built yet")
        self.graph_runs += 1
        return run_graph(self.graph, args)


pytestmark = pytest.mark.usefixtures("fresh_dispatch")


def _backend(made: list[_Tiered], eager_calls: int) -> Any:
    def backend(graph: Graph, example_inputs: Any) -> Any:
        made.append(_Tiered(graph, eager_calls))
        return made[-1]

    return backend


def _bump(x: Any) -> Any:
    x += 1.0
    return np.sin(x) * 2.0


def test_calls_handed_back_run_the_function_once_and_match_eager() -> None:
    made: list[_Tiered] = []
    compiled = compile_function(_bump, backend=_backend(made, eager_calls=3))
    x, expected_x = np.arange(5.0), np.arange(5.0)
    for _ in range(5):  # the compile, remembered hits (the fast path), then the graph
        got = compiled(x)
        want = _bump(expected_x)
        np.testing.assert_array_equal(x, expected_x)  # written once per call, as eager
        np.testing.assert_array_equal(got, want)
    assert len(made) == 1
    assert made[0].offered
    assert made[0].eager_calls == 0
    assert made[0].graph_runs == 2


def _with_break(x: Any) -> Any:
    y = x * 2.0
    graph_break()
    return y + 1.0


def test_the_tier_is_offered_only_to_a_graph_that_is_a_whole_function() -> None:
    # The graph before the break is not: running `_with_break` again would redo its work.
    # The code after it is a resume function of its own, whose graph is offered the tier:
    # a call handed back runs that resume function eagerly.
    made: list[_Tiered] = []
    compiled = compile_function(_with_break, backend=_backend(made, eager_calls=3))
    x = np.arange(4.0)
    for _ in range(5):
        got = compiled(x)
        np.testing.assert_array_equal(got, _with_break(x))
    offered = {str(node.op.name) for t in made if t.offered for node in t.graph if node.op}
    kept = {str(node.op.name) for t in made if not t.offered for node in t.graph if node.op}
    assert "multiply" in kept
    assert "add" in offered
    assert all(t.eager_calls == 0 for t in made if t.offered)
