"""A graph whose loops write only arrays it created (`out = np.empty_like(x)` filled by a C
loop) runs again with NumPy after a flag that warns (errstate.written_inputs):
eager's warnings, from the user's line, once per operation and iteration under "always".
On main it warned once, "divide by zero encountered in dim or for_loop"."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from numpile_capture import capture_function, written_inputs
from numpile_inductor import compile_graph


def _divisions(x: Any, y: Any) -> Any:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] / y[i]
    return out


def _in_place(x: Any, y: Any) -> Any:
    for i in range(x.shape[0]):
        x[i] = x[i] / y[i]
    return x


def _warnings_of(fn: Any, *args: Any) -> tuple[Any, list[tuple[str, int]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(str(w.message), w.lineno) for w in caught]


def test_a_loop_filling_a_new_array_warns_as_eager() -> None:
    x = np.array([1.0, 0.0, -2.0, 3.0, 0.0])
    y = np.array([0.0, 0.0, 1.0, 0.0, 2.0])
    compiled = compile_graph(capture_function(_divisions, (x, y), {}).graph)
    got, got_warnings = _warnings_of(compiled.fn, x, y)
    want, want_warnings = _warnings_of(_divisions, x, y)
    assert got.tobytes() == want.tobytes()
    assert got_warnings == want_warnings
    assert len(want_warnings) == 3


def test_only_arrays_made_inside_count_as_fresh() -> None:
    x, y = np.ones(3), np.ones(3)
    assert written_inputs(capture_function(_divisions, (x, y), {}).graph) == ()
    assert written_inputs(capture_function(_in_place, (x, y), {}).graph) not in ((), None)
