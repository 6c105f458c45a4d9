"""How much array work a node counts (`body_work`): what decides that a breaking loop runs
in Python. Operations on 0-d values and on small arrays of static size do too little to pay
for compiled pieces; large arrays, transcendental functions on mid-size ones, arrays whose
size is only known at run time, and a kept loop do enough."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, compile_function, get_op, reset
from numpile_capture.body_work import EXPENSIVE_WEIGHT, PIECES_PAY_AT, array_work, pays_for_pieces
from numpile_capture.capture_events import recording_captures
from numpile_capture.graph import Graph
from numpile_guards import ShapeEnv


def _placeholder(graph: Graph, shape: tuple[Any, ...]) -> Any:
    return graph.placeholder("a", ArrayMeta(shape, "float64"))


@pytest.mark.parametrize(
    ("op", "shape", "pays"),
    [
        ("add", (), False),
        ("add", (1024,), False),
        ("add", (PIECES_PAY_AT,), True),
        ("add", (100, 100), True),
        ("sin", (PIECES_PAY_AT // EXPENSIVE_WEIGHT - 1,), False),
        ("sin", (PIECES_PAY_AT // EXPENSIVE_WEIGHT,), True),
    ],
)
def test_an_elementwise_op_pays_past_the_work_line(
    op: str, shape: tuple[int, ...], pays: bool
) -> None:
    graph = Graph()
    a = _placeholder(graph, shape)
    node = graph.call(get_op(op), a, a) if op == "add" else graph.call(get_op(op), a)
    assert pays_for_pieces(array_work([node])) is pays


def test_picking_an_element_of_a_large_array_is_no_work_but_reducing_it_is() -> None:
    graph = Graph()
    large = _placeholder(graph, (PIECES_PAY_AT * 4,))
    element = graph.call(get_op("element"), large, index=(3,))
    total = graph.call(get_op("sum"), large)
    assert array_work([large, element]) == 1
    assert pays_for_pieces(array_work([total]))


def test_an_array_of_run_time_size_counts_as_enough_work() -> None:
    env = ShapeEnv()
    size = env.create_symbol(5, "L['x'].shape[0]")
    graph = Graph()
    node = graph.call(get_op("negative"), _placeholder(graph, (size,)))
    assert pays_for_pieces(array_work([node]))


def _kept_inner_loop(x: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(3):
            s = s + x[i] * j  # a kept loop inside a breaking body: its iterations run in C
        print(i)
    return s


def test_a_loop_kept_inside_a_breaking_body_is_enough_work() -> None:
    reset()
    compiled = compile_function(_kept_inner_loop, backend="eager")
    x = np.arange(36.0)  # small: only the kept loop is work
    with (
        contextlib.redirect_stdout(io.StringIO()),
        recording_captures() as events,
        pytest.warns(Warning),
    ):
        got = compiled(x)
    reset()
    np.testing.assert_allclose(got, _kept_inner_loop(x))
    reasons = [event.break_reason or "" for event in events]
    assert not any("the whole loop runs in Python" in reason for reason in reasons)
