"""`share_forward_loops`: a loop that computes another's carried values (the stacking loop of
a loop VJP) takes that loop's place, so the forward runs once; a pair it cannot move is left
as it is."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_autograd_aot import build_joint, functionalize
from numpile_autograd_aot.loop_sharing import share_forward_loops
from numpile_capture import (
    ArrayMeta,
    Graph,
    ScalarMeta,
    add_loop,
    capture_function,
    get_op,
    run_graph,
)


def _doubling_body() -> Graph:
    body = Graph()
    body.placeholder("i", ScalarMeta(int))
    y = body.placeholder("y", ArrayMeta((3,), "float64"))
    body.output = (body.call(get_op("multiply"), y, 2.0),)
    return body


def _loops(graph: Graph) -> list[Any]:
    return [n for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]


def test_the_twin_loop_and_what_it_reads_move_to_the_original_loops_place() -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((3,), "float64"))
    (out,) = add_loop(graph, (0, 4, 1), [x], [], _doubling_body(), ())
    total = graph.call(get_op("sum"), out)
    # The twin: same loop, from a copy made after the original (it moves with it).
    start = graph.call(get_op("multiply"), x, 1.0)
    (twin_out,) = add_loop(graph, (0, 4, 1), [start], [], _doubling_body(), ())
    graph.output = (total, twin_out)
    original, twin = _loops(graph)
    value = np.arange(3.0)
    want = run_graph(graph, (value,))
    replaced = share_forward_loops(graph, {original: twin})
    assert len(_loops(graph)) == 1 and replaced[original] is twin
    ops = [n.op.name for n in graph.nodes if n.op is not None]
    assert ops == ["multiply", "for_loop", "loop_output", "sum"]
    assert graph.nodes[0] is x  # nodes before the moved loop stay the same objects
    got = run_graph(graph, (value,))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_twin_that_reads_the_originals_results_is_left_alone() -> None:
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((3,), "float64"))
    (out,) = add_loop(graph, (0, 4, 1), [x], [], _doubling_body(), ())
    (twin_out,) = add_loop(graph, (0, 4, 1), [out], [], _doubling_body(), ())
    graph.output = (twin_out,)
    original, twin = _loops(graph)
    nodes = list(graph.nodes)
    assert share_forward_loops(graph, {original: twin}) == {}
    assert share_forward_loops(graph, {}) == {}
    assert graph.nodes == nodes


def test_the_joint_graph_of_a_loop_runs_its_forward_once() -> None:
    # The stacking loop gives the forward's results: one loop before the reverse one, and
    # the joint graph's values are the loop's.
    def recurrence(x: Any) -> Any:
        h = x
        s = 0.0
        for i in range(5):
            h = np.tanh(h * 0.5 + x)
            s = s + h[0] * i
        return h.sum() + s

    x = np.random.default_rng(0).uniform(-1, 1, 3)
    graph = functionalize(capture_function(recurrence, (x,), {}).graph).graph
    joint = build_joint(graph, (0,), (0,))
    forward_loops = _loops(joint.graph)
    assert len(forward_loops) == 2  # the stacking loop and the reverse loop
    body = forward_loops[0].kwargs["body"]
    assert any(n.op is not None and n.op.name == "setitem_at" for n in body.nodes)
    (values, _) = run_graph(joint.graph, (x, np.float64(1.0)))
    assert values[0] == recurrence(x)
