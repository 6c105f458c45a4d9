"""An inner loop's own Python entry that a branch may keep, in C loops (issue 23).

`s = 0.1` per row, then an inner loop whose branch may assign `s = x[i, j]`: where no
branch ran, eager's `s` is the Python float and `t + s * z[i]` with a float32 `z` is
float32. Main compiled the nest to C with `s` a double, silently float64, and so a
plain `if` keeping it (capture's `own_entries` now leaves such an inner loop unkept, and
the loop around such an `if`). A store into a float array gives the
same either way: that nest stays one C loop nest. Each program runs compiled and eagerly
on rows whose branches run never, sometimes and always, in both orders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import compile_function, reset
from numpile_inductor import compile_graph


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
        while j < x.shape[1]:
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


def scaled_into_rows(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = s * z[i]
    return out


def stored_rows(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = s
    return out


def _data() -> list[Any]:
    rows = np.random.default_rng(7).random((6, 5))
    mixed = rows.copy()
    mixed[::2] *= 0.4
    last_none = np.concatenate([rows[:3], rows[3:] * 0.4])
    cases = [rows * 0.4, mixed, last_none, rows]
    return [*cases, *cases[::-1]]


_Z = np.random.default_rng(8).random(6).astype(np.float32)


def _dispatched(fn: Callable[..., Any]) -> Callable[..., Any]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor.
    reset()

    def backend(graph: Any, example_inputs: Any) -> Any:
        return compile_graph(graph).fn

    return compile_function(fn, backend=backend, dynamic=True)


def _runs_like_eager(fn: Callable[..., Any]) -> None:
    compiled = _dispatched(fn)
    for x in _data():
        mine, eager = compiled(x, _Z), fn(x, _Z)
        assert type(mine) is type(eager), (mine, eager)
        assert np.asarray(mine).dtype == np.asarray(eager).dtype, (mine, eager)
        assert np.asarray(mine).tobytes() == np.asarray(eager).tobytes(), (mine, eager)


@pytest.mark.parametrize(
    "fn",
    [weighted_rows, weighted_rows_int, weighted_rows_while, weighted_rows_if, scaled_into_rows],
    ids=lambda fn: fn.__name__,
)
def test_code_after_an_inner_loop_computes_on_eagers_python_entry(fn: Callable[..., Any]) -> None:
    _runs_like_eager(fn)


def test_an_inner_loop_whose_result_is_only_stored_stays_in_c(numpy_runs: list[Any]) -> None:
    _runs_like_eager(stored_rows)
    assert numpy_runs == []  # no loop ran with NumPy
