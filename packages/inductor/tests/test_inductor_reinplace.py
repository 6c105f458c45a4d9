"""Reinplacing (`reinplace.py`): a region update of an input stores into the input's memory
when nothing reads the old contents afterwards, and stays a copy otherwise; values and
input effects match NumPy either way, overlapping right-hand sides included."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import capture_function
from numpile_inductor import compile_graph

RNG = np.random.default_rng(24)


def _compiled(fn: Callable[..., Any], *args: Any) -> Any:
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    return compile_graph(capture_function(fn, copies, {}).graph, options={"graph_cache": False})


def _yee_update(e: Any, h: Any) -> None:
    e[:, 1:, :] -= 0.5 * (h[:, 1:, :] - h[:, :-1, :])
    e[1:, :, :] += 0.25 * h[:-1, :, :]


def _shift_into_itself(x: Any) -> None:
    # The right-hand side reads the region it overwrites, shifted: NumPy reads it first.
    x[1:] = x[:-1] * 2.0


def _chain_of_shifts(x: Any) -> None:
    # The second update reads the first's result: that one stays a copy, the second stores
    # into the copy.
    x[1:] = x[:-1] * 2.0
    x[:-1] += x[1:]


def _old_value_read_after(x: Any) -> Any:
    # `y` reads the old x; its kernel may run after the update, so x stays a copy.
    y = x * 2.0
    x[1:] = 5.0
    return y + x


def _update_of_a_temporary(x: Any) -> Any:
    t = x * 3.0
    t[::2] = -1.0
    return t


CASES: list[tuple[Callable[..., Any], Callable[[], tuple[Any, ...]], bool]] = [
    (_yee_update, lambda: (RNG.random((5, 6, 7)), RNG.random((5, 6, 7))), True),
    (_shift_into_itself, lambda: (RNG.random(9),), True),
    (_chain_of_shifts, lambda: (RNG.random(9),), True),
    (_old_value_read_after, lambda: (RNG.random(9),), False),
    (_update_of_a_temporary, lambda: (RNG.random(9),), False),
]


@pytest.mark.parametrize(
    ("fn", "inputs", "in_place"), CASES, ids=lambda c: getattr(c, "__name__", "")
)
def test_region_updates_match_numpy(
    fn: Callable[..., Any], inputs: Callable[[], tuple[Any, ...]], in_place: bool
) -> None:
    args = inputs()
    compiled = _compiled(fn, *args)
    assert ("view_scatter_" in compiled.extern_ops) is in_place
    mine = tuple(a.copy() for a in args)
    theirs = tuple(a.copy() for a in args)
    got, want = compiled.fn(*mine), fn(*theirs)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def _two_fields(e: Any, g: Any, h: Any) -> None:
    # Two independent region updates (as fdtd_3d_h's three): both store in place. (The
    # graph's inputs come in the order of first use: e, g, h.)
    e[:, 1:, :] -= 0.5 * (g[:, 1:, :] - g[:, :-1, :])
    h[1:, :, :] += 0.25 * g[:-1, :, :]


def test_in_place_updates_write_the_inputs_not_copies() -> None:
    e, g, h = (RNG.random((4, 5, 6)) for _ in range(3))
    compiled = _compiled(_two_fields, e, g, h)
    assert compiled.extern_ops == ["view_scatter_", "view_scatter_"]
    addresses = [a.__array_interface__["data"][0] for a in (e, h)]
    want_e, want_h = e.copy(), h.copy()
    _two_fields(want_e, g, want_h)
    compiled.fn(e, g, h)
    assert [a.__array_interface__["data"][0] for a in (e, h)] == addresses
    np.testing.assert_array_equal(e, want_e)
    np.testing.assert_array_equal(h, want_h)


def test_aliasing_inputs_still_match_numpy() -> None:
    # e and h share memory: the epilogue's overlap check runs the barrier graph.
    base = RNG.random((2, 5, 6, 7))
    compiled = _compiled(_yee_update, base[0].copy(), base[1].copy())
    mine, theirs = base.copy(), base.copy()
    compiled.fn(mine[0], mine[0][::-1])
    _yee_update(theirs[0], theirs[0][::-1])
    np.testing.assert_array_equal(mine, theirs)


def _two_updates(e: Any, h: Any) -> None:
    e[1:] -= 0.5 * h[1:]
    h[1:] += e[:-1] * h[:-1]


def test_a_flag_after_an_update_replays_on_untouched_inputs() -> None:
    # The second update's product raises "invalid" (0 * inf); NumPy's op-by-op replay must
    # start from the inputs as they were, so the first update is applied once.
    e, h = np.ones(6), np.ones(6)
    compiled = _compiled(_two_updates, e, h)
    assert "view_scatter_" in compiled.extern_ops
    e[0] = 0.0
    h[0] = np.inf
    mine, theirs = (e.copy(), h.copy()), (e.copy(), h.copy())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled.fn(*mine)
    with warnings.catch_warnings(record=True) as expected:
        warnings.simplefilter("always")
        _two_updates(*theirs)
    assert expected
    assert [str(w.message) for w in caught] == [str(w.message) for w in expected]
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_store_at_a_run_time_int_into_an_input_writes_it_in_place() -> None:
    # A resumed loop's piece `out[i] = x[i] * 2.0` with `i` a run-time int: functionalized,
    # the store is a `setitem_at_scatter` (a copy of all of `out` per call, written back);
    # reinplaced, it stores into `out` itself.
    from numpile_capture import ArrayMeta, Graph, ScalarMeta, ScalarSlot, get_op
    from numpile_capture.loop_index import opaque_int

    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((9,), "float64"))
    out = graph.placeholder("out", ArrayMeta((9,), "float64"))
    i = graph.placeholder("i", ScalarMeta(int))
    slot = (ScalarSlot(0, opaque_int(None)),)
    value = graph.call(get_op("multiply"), graph.call(get_op("getitem_at"), x, i, index=slot), 2.0)
    graph.call(get_op("setitem_at"), out, value, i, index=slot)
    graph.output = ()
    compiled = compile_graph(graph, options={"graph_cache": False})
    assert "setitem_at" in compiled.extern_ops
    assert "setitem_at_scatter" not in compiled.extern_ops
    x_value, mine = RNG.random(9), np.zeros(9)
    address = mine.__array_interface__["data"][0]
    for k in (0, 4, 8, -1):
        compiled.fn(x_value, mine, k)
    want = np.zeros(9)
    for k in (0, 4, 8, -1):
        want[k] = x_value[k] * 2.0
    np.testing.assert_array_equal(mine, want)
    assert mine.__array_interface__["data"][0] == address
    with pytest.raises(IndexError):
        compiled.fn(x_value, mine, 9)
