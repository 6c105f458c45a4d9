"""Which results of a loop body may be a carried local's entry object (`may_hold_entry`).

A backend that carries `t` as a NumPy value gives back the very object `t` entered the
loop as where no branch assigned it; it asks capture which of the body's outputs may be
that object: passed along by a `cond` branch, a nested `cond`, an inner loop, never by a
value computed from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, capture_function, explain, may_hold_entry


def picked(x: Any, n: int) -> Any:
    t = 0.0
    u = 1.0
    for i in range(n):
        if x[i] > 0.5:  # noqa: SIM102 - the branches under test
            if x[i] > 0.7:
                t = x[i]
        u = x[i] * 2.0
    return t, u


def picked_in_inner_loop(x: Any) -> Any:
    t = -1.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > t:
                t = x[i, j]
    return t


def computed_in_a_branch(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 0.5:  # noqa: SIM108 - the branches under test
            t = t + x[i]
        else:
            t = x[i]
    return t


def _body(fn: Any, *args: Any) -> Graph:
    graph = capture_function(fn, args, {}).graph
    (loop,) = [node for node in graph.nodes if node.op is not None and node.op.name == "for_loop"]
    body: Graph = dict(loop.params)["body"]
    return body


@pytest.mark.parametrize(
    ("fn", "args", "held", "held_without_loops"),
    [
        pytest.param(picked, (np.zeros(4), 4), {0}, {0}, id="nested-conds"),
        pytest.param(picked_in_inner_loop, (np.zeros((2, 3)),), {0}, set(), id="inner-loop"),
        pytest.param(computed_in_a_branch, (np.zeros(4), 4), set(), set(), id="computed"),
    ],
)
def test_a_body_output_may_hold_the_entry_object_where_a_path_passes_it_along(
    fn: Any, args: Any, held: set[int], held_without_loops: set[int]
) -> None:
    body = _body(fn, *args)
    seeds = [body.placeholders[1]]
    assert may_hold_entry(body, seeds) == held
    assert may_hold_entry(body, seeds, through_loops=False) == held_without_loops


def computed_on_after_the_loop(x: Any, n: int) -> Any:
    t = 0.0
    for i in range(n):
        if x[i] > 0.5:
            t = x[i]
    return t * np.float32(2.0)


def test_the_graph_ends_after_a_loop_whose_branches_decide_a_type_read_after_it() -> None:
    (reason,) = explain(computed_on_after_the_loop)(np.zeros(4), 4).break_reasons
    assert "depends on the branches its body took" in str(reason)
    assert explain(picked)(np.zeros(4), 4).graph_break_count == 0  # only returned
