"""explain(): graph count, break reasons with the user's line, ops per graph, guards."""

from __future__ import annotations

import numpy as np

from numpile_capture import compile_function, explain


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _prints(x: np.ndarray) -> np.ndarray:
    y = x + 1
    print("y")
    return y


def test_explain_reports_the_graph_ops_and_guards() -> None:
    out = explain(_softmax)(np.ones((2, 3), np.float32))
    assert out.graph_count == 1
    assert out.graph_break_count == 0
    assert out.ops_per_graph == (("max", "subtract", "exp", "sum", "divide"),)
    assert {guard.source.name for guard in out.guards} >= {"L['x']", "G['np']"}
    text = str(out)
    assert "Graph count: 1" in text
    assert "v1 = subtract(x, v0)" in text


def test_explain_reports_the_break_with_its_line() -> None:
    out = explain(_prints)(np.ones(3))
    assert out.graph_count == 1  # x + 1; the resume function only returns y
    assert out.ops_per_graph == (("add",),)
    assert out.graph_break_count == 1
    (reason,) = out.break_reasons
    assert "print" in reason.reason
    assert reason.filename == __file__
    assert reason.lineno == _prints.__code__.co_firstlineno + 2


def test_explain_sees_through_compiled_wrappers() -> None:
    compiled = compile_function(_softmax, backend="eager")
    assert explain(compiled)(np.ones((2, 3))).graph_count == 1
