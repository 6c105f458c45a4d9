"""Random programs of views, in-place ops and reads: functionalized runs equal the original ones."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from numpile_autograd_aot import functionalize, run_functionalized
from numpile_capture import ArrayMeta, Graph, Node, get_op, run_graph


def _slice(draw: Any, size: int) -> slice:
    start = draw(st.integers(0, max(size - 1, 0)))
    step = draw(st.sampled_from([1, 2, -1]))
    if step < 0:
        return slice(None, None, -1)
    return slice(start, None, step)


def _program(draw: Any) -> Graph:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((4, 6), "float64"))
    y = graph.placeholder("y", ArrayMeta((6,), "float64"))
    values: list[Node] = [x, y]
    reads: list[Node] = []
    for _ in range(draw(st.integers(1, 8))):
        node = draw(st.sampled_from(values))
        meta = node.meta
        assert isinstance(meta, ArrayMeta)
        action = draw(st.sampled_from(["view", "transpose", "iadd", "imul", "setitem", "sin"]))
        if action == "view" and meta.ndim > 0:
            index = tuple(_slice(draw, d) for d in meta.shape)
            values.append(graph.call(get_op("getitem"), node, index=index))
        elif action == "transpose":
            axes = tuple(reversed(range(meta.ndim)))
            values.append(graph.call(get_op("transpose"), node, axes=axes))
        elif action in ("iadd", "imul"):
            other = draw(st.sampled_from([1.5, "self"]))
            operand = graph.call(get_op("cos"), node) if other == "self" else other
            name = "add_" if action == "iadd" else "multiply_"
            values.append(graph.call(get_op(name), node, operand))
        elif action == "setitem" and meta.ndim > 0:
            index = (_slice(draw, meta.shape[0]),)
            graph.call(get_op("setitem"), node, -2.0, index=index)
        else:
            result = graph.call(get_op("sin"), node)
            values.append(result)
            reads.append(result)
    outputs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
    graph.output = (*outputs, *reads[-2:])
    return graph


@settings(max_examples=60, deadline=None, database=None)
@given(st.data())
def test_random_mutation_programs(data: Any) -> None:
    graph = _program(data.draw)
    functional = functionalize(graph)
    expected_inputs = [np.arange(24.0).reshape(4, 6) / 7, np.linspace(-1, 1, 6)]
    got_inputs = [a.copy() for a in expected_inputs]
    expected = run_graph(graph, expected_inputs)
    got = run_functionalized(functional, got_inputs)
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_array_equal(have, want)
        for want_input, have_input in zip(expected_inputs, got_inputs, strict=True):
            assert np.shares_memory(want, want_input) == np.shares_memory(have, have_input)
    for want_input, have_input in zip(expected_inputs, got_inputs, strict=True):
        np.testing.assert_array_equal(have_input, want_input)
