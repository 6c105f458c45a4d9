"""Which nodes count as array work (`body_work`): what decides that a breaking loop runs in
Python. Operations on 0-d values and on small arrays of static size do none; an operation
on a larger array, or on one whose size is only known at run time, and a kept loop do."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, compile_function, get_op, reset
from numpile_capture.body_work import SMALL_NUMEL, array_work
from numpile_capture.capture_events import recording_captures
from numpile_capture.graph import Graph
from numpile_guards import ShapeEnv


def _placeholder(graph: Graph, shape: tuple[Any, ...]) -> Any:
    return graph.placeholder("a", ArrayMeta(shape, "float64"))


@pytest.mark.parametrize(
    ("shape", "work"),
    [((), 0), ((3,), 0), ((SMALL_NUMEL,), 0), ((SMALL_NUMEL + 1,), 1), ((40, 40), 1)],
)
def test_a_pointwise_op_works_on_arrays_past_the_small_size(
    shape: tuple[int, ...], work: int
) -> None:
    graph = Graph()
    assert array_work([graph.call(get_op("sin"), _placeholder(graph, shape))]) == work


def test_picking_an_element_of_a_large_array_is_no_work_but_reducing_it_is() -> None:
    graph = Graph()
    large = _placeholder(graph, (SMALL_NUMEL * 4,))
    element = graph.call(get_op("element"), large, index=(3,))
    total = graph.call(get_op("sum"), large)
    assert array_work([large, element]) == 0
    assert array_work([total]) == 1


def test_an_array_of_run_time_size_counts_as_work() -> None:
    env = ShapeEnv()
    size = env.create_symbol(5, "L['x'].shape[0]")
    graph = Graph()
    assert array_work([graph.call(get_op("sin"), _placeholder(graph, (size,)))]) == 1


def _kept_inner_loop(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(3):
            s = s + x[i] * j  # a kept loop inside a breaking body: its iterations run in C
        print(i)
    return s


def test_a_loop_kept_inside_a_breaking_body_is_work() -> None:
    reset()
    compiled = compile_function(_kept_inner_loop, backend="eager")
    x = np.arange(36.0)  # small: only the kept loop is work
    with recording_captures() as events, pytest.warns(Warning):
        got = compiled(x)
    reset()
    np.testing.assert_allclose(got, _kept_inner_loop(x))
    reasons = [event.break_reason or "" for event in events]
    assert not any("the whole loop runs in Python" in reason for reason in reasons)
