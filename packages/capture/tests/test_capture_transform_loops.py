"""Loops in a function a transform's rule inlines (`TransformCall.inline`).

`inline(fn, args, kwargs)` unrolls `fn`'s loops (forward mode and `vmap` need them
unrolled); `keep_loops=True` keeps a `for` loop over a range as a `for_loop` node whose trip
count stays unspecialized, as outside a transform (an int input bounding it becomes a graph
input); `pin_trip_counts=True` pins its bounds to ints instead (`loop_ranges.pinned`: a
loop VJP that needs the trip count), so an int input bounding it is read and guarded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from numpile_capture import (
    TransformCall,
    capture_function,
    compile_function,
    register_transform,
    reset,
    run_graph,
)
from numpile_capture.capture_events import recording_captures
from numpile_capture.loop_ranges import RangeIterVar, pinned
from numpile_capture.variables import ConstantVar


def _recurrence(x: Any, n: int) -> Any:
    h = x
    for _ in range(n):
        h = np.tanh(h * 0.5 + 0.25)
    return h


def _transform(keep_loops: bool, *, pin: bool = False) -> Any:
    def transformed(x: Any, n: int) -> Any:
        return _recurrence(x, n)

    def expand(call: TransformCall) -> Any:
        return call.inline(_recurrence, call.args, {}, keep_loops=keep_loops, pin_trip_counts=pin)

    return register_transform(transformed, expand, "a test transform")


def _loops(graph: Any) -> list[Any]:
    return [n for n in graph.nodes if n.op is not None and n.op.name == "for_loop"]


@pytest.mark.parametrize("keep_loops", [False, True])
def test_inline_keeps_the_loop_only_when_asked(keep_loops: bool) -> None:
    transformed = _transform(keep_loops)
    x = np.linspace(-1, 1, 3)

    def caller(x: Any, n: int) -> Any:
        return transformed(x, n) * 2.0

    result = capture_function(caller, (x, 6), {})
    loops = _loops(result.graph)
    assert len(loops) == (1 if keep_loops else 0)
    if keep_loops:
        assert loops[0].inputs[:3] == (0, 6, 1)
    tanh_count = sum(1 for n in result.graph.nodes if n.op is not None and n.op.name == "tanh")
    assert tanh_count == (0 if keep_loops else 6)
    assert len(result.graph.placeholders) == 1  # x; the trip count is a constant
    np.testing.assert_allclose(run_graph(result.graph, [x]), _recurrence(x, 6) * 2, rtol=1e-13)


@pytest.mark.parametrize("pin", [False, True])
def test_a_kept_loop_under_a_transform_has_pinned_bounds_only_when_asked(pin: bool) -> None:
    # Pinned, the int bounding the loop is read (guarded): each new trip count is a new
    # entry with its own constant bounds. Else it widens to an input, as outside a
    # transform: one entry serves every trip count.
    reset()
    transformed = _transform(True, pin=pin)
    compiled = compile_function(lambda x, n: transformed(x, n) + 1.0, backend="eager")
    x = np.linspace(-1, 1, 3)
    with recording_captures() as events:
        for n in (2, 5, 9, 0):
            np.testing.assert_allclose(compiled(x, n), _recurrence(x, n) + 1.0, rtol=1e-13)
    graphs = [event.graph for event in events if event.graph is not None]
    stops = [_loops(graph)[0].inputs[1] for graph in graphs]
    if pin:
        assert stops == [2, 5, 9, 0]
    else:
        assert [getattr(stop, "name", stop) for stop in stops] == ["n"]
    reset()


def test_pinned_reads_constant_and_input_bounds() -> None:
    iterator = RangeIterVar((ConstantVar(1), ConstantVar(7), ConstantVar(2)))
    assert [bound.value for bound in pinned(iterator).bounds] == [1, 7, 2]
