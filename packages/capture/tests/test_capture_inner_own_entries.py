"""An inner loop's own Python entry that a branch may keep (`own_entries`).

`s = 0.1` per row, then an inner loop whose branch may assign `s = x[i, j]`: where no
branch ran, eager's `s` is still the Python float, and `t + s * z[i]` with a float32 `z`
is float32; where one ran it is float64. The inner loop is kept with the loop's types
(float64), so code of the enclosing body that computes on its result is not kept with
it: the inner loop is unrolled or the enclosing loop runs in Python (as for a plain `if`
whose branch keeps it). A store into a float array, or `x[i] / s` on a float64 row (NEP 50
promotes the Python float and the float64 alike), gives the same either way and keeps it.
0-d NumPy ops on it whose results stay in the iteration (`out[i] = s * z[i]`) keep it too:
a backend flags the value at run time and computes both typings (the C loops do).
Each program runs compiled and eagerly on rows whose branches run never, sometimes and
always.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import Graph, compile_function, explain
from numpile_capture.testing import assert_same_as_eager


def weighted_rows(x: Any, z: Any) -> Any:
    t = 0.0
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        t = t + s * z[i]
    return t


def weighted_rows_int(x: Any, z: Any) -> Any:
    t = 0
    for i in range(x.shape[0]):
        s = 3
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        t = t + s * z[i]
    return t


def weighted_rows_while(x: Any, z: Any) -> Any:
    t = 0.0
    for i in range(x.shape[0]):
        s = 0.1
        j = 0
        while j < x.shape[1] and x[i, j] < 0.9:
            if x[i, j] > 0.5:
                s = x[i, j]
            j += 1
        t = t + s * z[i]
    return t


def weighted_rows_if(x: Any, z: Any) -> Any:
    t = 0.0
    for i in range(x.shape[0]):
        s = 0.1
        if x[i, 0] > 0.5:
            s = x[i, 0]
        t = t + s * z[i]
    return t


def last_row_returned(x: Any, z: Any) -> Any:
    s = 0.0
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
    return s


def stored_rows(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = s
    return out


def divided_rows(x: Any, z: Any) -> Any:
    # `x[i] / s` on a float64 row: float64 on the Python float and on a float64 alike.
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        s = 0.5
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = x[i] / s
    return out


def divided_rows_float32(x: Any, z: Any) -> Any:
    # `x32[i] / s` on a float32 row: float32 on the Python float, float64 on a float64.
    x32 = x.astype(np.float32)
    out = np.zeros(x.shape, dtype=np.float64)
    for i in range(x.shape[0]):
        s = 0.5
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = x32[i] / s
    return out


def scaled_rows(x: Any, z: Any) -> Any:
    # float32 on the Python float, float64 on a float64: both typings, flagged.
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = s * z[i] + z[i]
    return out


def _data() -> list[Any]:
    rows = np.random.default_rng(7).random((6, 5))
    mixed = rows.copy()
    mixed[::2] *= 0.4
    last_none = np.concatenate([rows[:3], rows[3:] * 0.4])
    return [rows * 0.4, mixed, last_none, rows]


_Z = np.random.default_rng(8).random(6).astype(np.float32)

COMPUTED_ON = [
    weighted_rows,
    weighted_rows_int,
    weighted_rows_while,
    weighted_rows_if,
    last_row_returned,
    divided_rows_float32,
]


SAME_EITHER_WAY = [stored_rows, divided_rows]
FLAGGED = [scaled_rows]


@pytest.mark.parametrize(
    "fn", [*COMPUTED_ON, *SAME_EITHER_WAY, *FLAGGED], ids=lambda fn: fn.__name__
)
def test_inner_loops_keeping_their_own_python_entry_run_as_eager(fn: Callable[..., Any]) -> None:
    compiled = compile_function(fn, backend="eager", dynamic=True)
    for x in [*_data(), *_data()[::-1]]:
        assert_same_as_eager(compiled(x, _Z), fn(x, _Z))


def _inner_loops(graph: Graph) -> int:
    # How many loop nodes the bodies of `graph`'s loops hold.
    count = 0
    for node in graph.nodes:
        for _, value in node.params:
            if isinstance(value, Graph):
                count += sum(
                    inner.op is not None and inner.op.name in ("for_loop", "while_loop")
                    for inner in value.nodes
                )
    return count


@pytest.mark.parametrize("fn", COMPUTED_ON, ids=lambda fn: fn.__name__)
def test_an_inner_loop_whose_result_code_computes_on_is_not_kept(fn: Callable[..., Any]) -> None:
    report = explain(fn)(_data()[1], _Z)
    reasons = [str(loop) for loop in report.loops_not_kept]
    assert any("the Python scalar" in reason for reason in reasons), reasons
    assert all(_inner_loops(graph) == 0 for graph in report.graphs)


@pytest.mark.parametrize("fn", [*SAME_EITHER_WAY, *FLAGGED], ids=lambda fn: fn.__name__)
def test_an_inner_loop_whose_result_gives_the_same_either_way_stays_a_loop(
    fn: Callable[..., Any],
) -> None:
    report = explain(fn)(_data()[1], _Z)
    assert report.loops_not_kept == ()
    assert sum(_inner_loops(graph) for graph in report.graphs) == 1
