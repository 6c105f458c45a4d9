"""An iteration's own Python scalar that a branch may keep, flagged at run time in C loops.

`s = 0.1` per row, then an inner `for` / `while` or a plain `if` whose branch may assign
`s = x[i, j]`: where no branch ran, eager's `s` is the Python float and `s * z[i]` with a
float32 `z` is a float32 product; where one ran it is float64. The C loop keeps a flag
per such value ("still the Python scalar", `EntryKept`) and computes both typings, the
flag choosing (loop_flag_typings.own_typing). On main capture did not keep these nests
(the inner loop unrolled or the enclosing loop ran in Python): each test fails there on
its explain check. Each program runs compiled and eagerly on rows whose branches run
never, sometimes and always, in both orders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from numpile_capture import C_LOOP, compile_function, explain, reset
from numpile_inductor import compile_graph


def stored_products(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        out[i] = s * z[i]
    return out


def stored_products_while(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        j = 0
        while j < x.shape[1] - 1 and x[i, j] < 2.0:
            if x[i, j] > 0.5:
                s = x[i, j]
            j += 1
        out[i] = s * z[i]
    return out


def stored_products_if(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float64)
    for i in range(x.shape[0]):
        s = 0.1
        if x[i, 0] > 0.5:
            s = x[i, 0]
        out[i] = s * z[i] + z[i]
    return out


def compared_products(x: Any, z: Any) -> Any:
    above = np.zeros(x.shape[0], dtype=np.bool_)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        above[i] = s * z[i] > np.float32(0.1) * z[i]
    return above


def branched_on_products(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.float32)
    for i in range(x.shape[0]):
        s = 0.1
        for j in range(x.shape[1]):
            if x[i, j] > 0.5:
                s = x[i, j]
        if s * z[i] > 0.08:  # the product's bits decide the branch
            out[i] = 1.0
    return out


def wrapped_int_products(x: Any, z: Any) -> Any:
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        s = 3
        for j in range(x.shape[1]):
            if x[i, j] > 5:
                s = x[i, j]
        out[i] = s * z[i]  # int32 (wrapping) on the Python int, int64 on an int64
    return out


def _float_rows() -> list[Any]:
    rows = np.random.default_rng(7).random((6, 5))
    mixed = rows.copy()
    mixed[::2] *= 0.4
    last_none = np.concatenate([rows[:3], rows[3:] * 0.4])
    cases = [rows * 0.4, mixed, last_none, rows + 0.5]
    return [*cases, *cases[::-1]]


def _int_rows() -> list[Any]:
    rows = np.random.default_rng(9).integers(6, 9, (6, 5))
    mixed = rows.copy()
    mixed[::2] = 1
    cases = [np.ones((6, 5), dtype=np.int64), mixed, rows]
    return [*cases, *cases[::-1]]


_Z32 = (np.random.default_rng(8).random(6) + 0.5).astype(np.float32)
_ZINT = np.full(6, 2**30 + 7, dtype=np.int32)

_CASES: list[tuple[Callable[..., Any], Callable[[], list[Any]], Any]] = [
    (stored_products, _float_rows, _Z32),
    (stored_products_while, _float_rows, _Z32),
    (stored_products_if, _float_rows, _Z32),
    (compared_products, _float_rows, _Z32),
    (branched_on_products, _float_rows, _Z32),
    (wrapped_int_products, _int_rows, _ZINT),
]


def _dispatched(fn: Callable[..., Any]) -> Callable[..., Any]:
    # `fn` through capture's dispatcher, each graph compiled by the inductor.
    reset()

    def backend(graph: Any, example_inputs: Any) -> Any:
        return compile_graph(graph).fn

    return compile_function(fn, backend=backend, dynamic=True)


@pytest.mark.parametrize(
    ("fn", "rows", "z"), _CASES, ids=lambda case: getattr(case, "__name__", "")
)
def test_ops_on_a_kept_python_scalar_give_eagers_bits(
    fn: Callable[..., Any], rows: Callable[[], list[Any]], z: Any
) -> None:
    compiled = _dispatched(fn)
    for x in rows():
        mine, eager = compiled(x, z), fn(x, z)
        assert type(mine) is type(eager)
        assert mine.dtype == eager.dtype
        assert mine.tobytes() == eager.tobytes(), (x, mine, eager)


@pytest.mark.parametrize(
    ("fn", "rows", "z"), _CASES, ids=lambda case: getattr(case, "__name__", "")
)
def test_the_nest_stays_one_c_loop_nest(
    fn: Callable[..., Any], rows: Callable[[], list[Any]], z: Any, numpy_runs: list[Any]
) -> None:
    reset()
    if z.dtype.kind == "i":
        z = z % 1000  # no overflow: eager's warning would run the loop with NumPy
    found = explain(fn)(rows()[1], z)
    assert found.graph_break_count == 0, found.break_reasons
    assert found.loops_not_kept == (), found.loops_not_kept
    tiers = [tier for graph in found.loop_tiers for tier in graph]
    assert [tier.tier for tier in tiers] == [C_LOOP], tiers
    assert found.run_time_fallbacks == ()
    assert numpy_runs == []
