"""How much work compiling a node saves (`body_work`): what decides that a breaking loop runs
in Python. Cheap arithmetic and library calls save nothing at any size; transcendental
functions on mid-size arrays, fused chains of element-wise operations on large ones,
transcendentals on arrays whose size is only known at run time, and a kept loop save enough;
an in-place update pays its write-back."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pytest

from numpile_capture import ArrayMeta, compile_function, get_op, reset
from numpile_capture.body_work import COSTS, PIECES_PAY_AT, array_work, pays_for_pieces
from numpile_capture.capture_events import recording_captures
from numpile_capture.graph import Graph, Node
from numpile_guards import ShapeEnv


def _placeholder(graph: Graph, shape: tuple[Any, ...]) -> Any:
    return graph.placeholder("a", ArrayMeta(shape, "float64"))


@pytest.mark.parametrize("size", [1, 1024, PIECES_PAY_AT, 200_000])
def test_cheap_arithmetic_saves_nothing_at_any_size(size: int) -> None:
    graph = Graph()
    a = _placeholder(graph, (size,))
    node = graph.call(get_op("add"), a, a)
    assert array_work([node]) == 0
    assert not pays_for_pieces(array_work([node]))


@pytest.mark.parametrize(
    ("size", "pays"),
    [
        (PIECES_PAY_AT // COSTS.transcendental - 1, False),
        (PIECES_PAY_AT // COSTS.transcendental, True),
    ],
)
def test_a_transcendental_pays_past_the_line(size: int, pays: bool) -> None:
    graph = Graph()
    node = graph.call(get_op("sin"), _placeholder(graph, (size,)))
    assert array_work([node]) == COSTS.transcendental * size
    assert pays_for_pieces(array_work([node])) is pays


@pytest.mark.parametrize("length", [1, 2, 5])
def test_a_chain_of_k_elementwise_ops_saves_k_minus_one_passes(length: int) -> None:
    graph = Graph()
    node = _placeholder(graph, (1000,))
    chain: list[Node] = []
    for _ in range(length):
        node = graph.call(get_op("multiply"), node, 0.5)
        chain.append(node)
    assert array_work(chain) == (length - 1) * 1000 * COSTS.fused_pass


def test_a_value_made_before_the_iteration_is_no_intermediate() -> None:
    # A piece receives the arrays made before its iteration stored: reading one saves no pass.
    graph = Graph()
    before = graph.call(get_op("copy"), _placeholder(graph, (1000,)))
    inside = graph.call(get_op("multiply"), before, 0.5)
    assert array_work([inside], fused={inside}) == 0
    assert array_work([inside], fused={before, inside}) == 1000 * COSTS.fused_pass


def test_an_in_place_update_pays_its_write_back() -> None:
    # `a += b * 0.5` (updates_printing): the fused pass and the write-back cancel out.
    graph = Graph()
    a = _placeholder(graph, (200_000,))
    b = _placeholder(graph, (200_000,))
    scaled = graph.call(get_op("multiply"), b, 0.5)
    update = graph.call(get_op("add_"), a, scaled)
    assert array_work([scaled, update]) == 0
    assert array_work([update]) == (COSTS.fused_pass - COSTS.write_back) * 200_000


def test_a_library_call_saves_nothing() -> None:
    graph = Graph()
    a = _placeholder(graph, (100_000,))
    joined = graph.call(get_op("concatenate"), a, a, axis=0)
    assert array_work([joined]) == 0


def test_picking_an_element_or_reducing_saves_nothing_reducing_a_sine_does() -> None:
    graph = Graph()
    large = _placeholder(graph, (PIECES_PAY_AT * 4,))
    element = graph.call(get_op("element"), large, index=(3,))
    total = graph.call(get_op("sum"), large)
    sines = graph.call(get_op("sin"), large)
    assert array_work([large, element, total]) == 0
    assert pays_for_pieces(array_work([sines, graph.call(get_op("sum"), sines)]))


def test_an_array_of_run_time_size_pays_when_its_node_saves_work() -> None:
    env = ShapeEnv()
    size = env.create_symbol(5, "L['x'].shape[0]")
    graph = Graph()
    a = _placeholder(graph, (size,))
    assert pays_for_pieces(array_work([graph.call(get_op("sin"), a)]))
    assert not pays_for_pieces(array_work([graph.call(get_op("negative"), a)]))


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
