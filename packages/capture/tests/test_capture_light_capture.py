"""The light capture's protocol: first without sympy, again with it where that is needed;
and the conversion of a light graph for the backends."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
import sympy

from numpile_capture import has_light_sizes, sympy_sizes
from numpile_capture.capture_events import (
    LoopNotKept,
    record_loop_not_kept,
    recording_loops,
)
from numpile_capture.graph import Graph
from numpile_capture.light_capture import capture_light_first, takes_light_sizes
from numpile_capture.meta import ArrayMeta, ScalarMeta
from numpile_capture.op import get_op
from numpile_guards import AffineSize, NeedsSympy, light_active


@pytest.fixture
def no_sympy(monkeypatch: pytest.MonkeyPatch) -> None:
    # As in a fresh process: the capture must not see sympy loaded. The stub captures below
    # import nothing, so the module objects of this process stay the only ones.
    monkeypatch.delitem(sys.modules, "sympy")


def test_a_capture_runs_light_where_sympy_is_not_loaded(no_sympy: None) -> None:
    seen: list[bool] = []

    def capture() -> str:
        seen.append(light_active())
        return "graph"

    assert capture_light_first(capture) == "graph"
    assert seen == [True]


def test_a_capture_that_needs_sympy_runs_again_with_its_loop_records_dropped(
    no_sympy: None,
) -> None:
    seen: list[bool] = []

    def capture() -> str:
        seen.append(light_active())
        record_loop_not_kept(LoopNotKept(f"light={light_active()}", None, None))
        if light_active():
            raise NeedsSympy("floor of a size")
        return "graph"

    with recording_loops() as loops:
        record_loop_not_kept(LoopNotKept("an earlier capture", None, None))
        assert capture_light_first(capture) == "graph"
    assert seen == [True, False]
    assert [record.reason for record in loops] == ["an earlier capture", "light=False"]


def test_a_light_capture_during_which_sympy_was_loaded_runs_again(no_sympy: None) -> None:
    seen: list[bool] = []

    def capture() -> str:
        seen.append(light_active())
        sys.modules["sympy"] = sympy  # as a background build's import would
        return "graph"

    assert capture_light_first(capture) == "graph"
    assert seen == [True, False]


def test_with_sympy_loaded_a_capture_is_the_sympy_one() -> None:
    assert capture_light_first(light_active) is False
    assert not takes_light_sizes(lambda graph, inputs: None)


def _light_loop_graph() -> Graph:
    # `x[: s0 - i0]` inside a loop body over `i0`, the shapes a light capture gives.
    s0, i0 = AffineSize.symbol("s0"), AffineSize.symbol("i0")
    body = Graph()
    body.placeholder("i", ScalarMeta(int))
    row = body.placeholder("x", ArrayMeta((s0,), np.float64, (1,)))
    body.output = body.add_node(
        get_op("getitem"),
        (row, (slice(None, s0 - i0, None),)),
        {},
        ArrayMeta((s0 - i0,), np.float64, (1,)),
    )
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((s0,), np.float64, (1,)))
    graph.output = graph.add_node(get_op("sin"), (x,), {"body": body}, x.meta)
    return graph


def test_sympy_sizes_converts_every_light_size_and_prints_alike() -> None:
    light = _light_loop_graph()
    converted = sympy_sizes(light)
    assert has_light_sizes(light) and not has_light_sizes(converted)
    assert str(converted) == str(light)
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    i0 = sympy.Symbol("i0", integer=True)
    body: Any = converted.nodes[-1].kwargs["body"]
    assert body.nodes[-1].meta.shape == (s0 - i0,)
    assert body.nodes[-1].inputs[1] == (slice(None, s0 - i0, None),)
    assert body.nodes[-1].inputs[0] is body.nodes[1]
    assert converted.output is converted.nodes[-1]
    assert sympy_sizes(converted) is converted
