"""Gradients and loops: grad unrolls the loops it differentiates; a loop node in a graph
that is differentiated is an error naming the loop and its line, never a wrong gradient."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_autograd_aot import build_joint, functionalize, grad
from numpile_capture import capture_function


def polynomial(x: Any) -> Any:
    y = x
    for _ in range(3):
        y = y * x + 1.0
    return y.sum()


def test_grad_through_a_range_loop_is_exact() -> None:
    x = np.arange(3.0)
    np.testing.assert_allclose(grad(polynomial)(x), 4 * x**3 + 2 * x + 1)


def test_joint_graph_of_a_loop_node_names_the_loop() -> None:
    graph = capture_function(polynomial, (np.arange(3.0),), {}).graph
    assert any(node.op is not None and node.op.name == "for_loop" for node in graph.nodes)
    functional = functionalize(graph)
    line = polynomial.__code__.co_firstlineno + 2
    with pytest.raises(NotImplementedError, match=rf"grad through the loop at .*:{line} "):
        build_joint(functional.graph, (0,), (0,))
