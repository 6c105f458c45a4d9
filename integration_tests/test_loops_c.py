"""Loops compiled whole to C through `numpile.compile`: one compile for many trip counts.

Each program runs compiled (inductor) and eagerly at several trip counts, 0 and 1
included; values, dtypes, in-place effects and errors must match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import numpile
from benchmarks.loop_programs import backward_substitution, crc_bits, gauss_seidel, sum_of_squares


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def _inputs(fn: Callable[..., Any], n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(n)
    if fn is sum_of_squares:
        return (rng.standard_normal(n),)
    if fn is crc_bits:
        return (rng.integers(0, 256, n),)
    square = rng.random((n, n))
    if fn is backward_substitution:
        return (np.triu(square) + n * np.eye(n),)
    return (square,)


@pytest.mark.parametrize(
    ("fn", "compiles"),
    # backward substitution's np.ones(n) keeps n symbolic: one entry for every size from 2
    [(sum_of_squares, 3), (gauss_seidel, 3), (backward_substitution, 3), (crc_bits, 3)],
)
def test_loop_matches_numpy_at_every_trip_count_as_c(
    fn: Callable[..., Any], compiles: int, caplog: pytest.LogCaptureFixture
) -> None:
    from numpile_guards import cache_for

    compiled = numpile.compile(fn, dynamic=True)
    with caplog.at_level(logging.INFO, logger="numpile.perf_hints"):
        for n in (3, 0, 1, 2, 17, 170):
            mine = [a.copy() for a in _inputs(fn, n)]
            eager = [a.copy() for a in _inputs(fn, n)]
            got, want = compiled(*mine), fn(*eager)
            assert type(got) is type(want)
            np.testing.assert_allclose(got, want, rtol=1e-13)
            for a, b in zip(mine, eager, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-13)
    # sizes 0 and 1 specialize; sizes from 2 share one entry
    assert len(cache_for(fn.__code__).entries) <= compiles
    assert not [r for r in caplog.records if "per iteration" in r.getMessage()]


def test_out_of_bounds_index_raises_after_the_writes_eager_made() -> None:
    def fill(x: Any, n: int) -> Any:
        for i in range(n):
            x[i] = i * 2.0
        return x

    compiled = numpile.compile(fill, dynamic=True)
    for n in (2, 3):
        compiled(np.zeros(5), n)
    mine, eager = np.zeros(5), np.zeros(5)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        compiled(mine, 9)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        fill(eager, 9)
    np.testing.assert_array_equal(mine, eager)


def last_index_and_chain(x: Any, n: int) -> Any:
    s = 0.0
    i = -1
    j = 7
    m = 3
    a, b = 0, 1
    for i in range(n):
        s += x[i] * x[i]
        m = j  # another carried value, read before this iteration sets it
        j = i * 2 + 1  # an int expression of the index
        a, b = b, a + b
    return s, i, j, m, a, b


def last_index_while(x: Any, n: int) -> Any:
    s = 0.0
    i = -1
    k = 0
    while k < n:
        i = k
        s += x[k] * x[k]
        k += 1
    return s, i, k


@pytest.mark.parametrize("fn", [last_index_and_chain, last_index_while])
def test_carried_index_is_a_c_local_with_eager_types_at_every_trip_count(
    fn: Callable[..., Any],
) -> None:
    import numpile_runtime as rt

    compiled = numpile.compile(fn, dynamic=True)
    x = np.random.default_rng(0).random(8)
    for n in (0, 1, 5):
        rt.reset_counters()
        got, want = compiled(x, n), fn(x, n)
        assert [type(v) for v in got] == [type(v) for v in want], n
        assert got == want, n
        assert not {"loop_op_by_op_runs", "loop_host_runs"} & set(rt.counters())


def test_host_loop_that_runs_no_iteration_gives_back_its_initial_objects() -> None:
    def doubling(x: Any, n: int) -> Any:
        s = 0.0
        for i in range(n):
            x = x * 2.0  # array work: a host loop of the compiled body
            s += x[i]
        return s, x

    compiled = numpile.compile(doubling, dynamic=True)
    x = np.arange(4.0)
    for n in (0, 2):
        got, want = compiled(x, n), doubling(x, n)
        assert type(got[0]) is type(want[0]) and got[0] == want[0], n
        np.testing.assert_array_equal(got[1], want[1])


def test_nested_loops_of_a_body_that_runs_op_by_op_run_as_c() -> None:
    # LU's outer body slices with shapes that follow `k` (no kernel takes it: op by op);
    # its i/j element loops run as C loops of their own, bit-exact with eager.
    import numpile_runtime as rt
    from benchmarks.unseen_loop_programs_more import lu_partial_pivoting

    compiled = numpile.compile(lu_partial_pivoting)
    for n in (0, 1, 5, 30):
        square = np.random.default_rng(n).standard_normal((n, n))
        compiled(square.copy())
        numpile.wait_for_compiles()
        rt.reset_counters()
        got, want = compiled(square.copy()), lu_partial_pivoting(square.copy())
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape, n
            np.testing.assert_array_equal(g, w)
        if n > 1:
            assert rt.counters().get("loop_nested_c_runs") == n, n


def _widely_scaled(n: int) -> Any:
    # Squares over eight decades: another order of the adds rounds differently (checked).
    rng = np.random.default_rng(n)
    return rng.standard_normal(n) * 10.0 ** rng.uniform(-2.0, 2.0, n)


def _lanes_sum(terms: Any, lanes: int) -> float:
    # `terms` summed as `lanes` partial sums (a SIMD reduction's order), then those in order.
    parts = [0.0] * lanes
    for k, term in enumerate(terms.tolist()):
        parts[k % lanes] += term
    return sum(parts, 0.0)


def test_a_carried_float_sum_adds_in_the_loops_order() -> None:
    # `s += x[i] * x[i]` is one add after another in Python: the compiled loop keeps that
    # order (bit-identical), though partial sums would run faster than the add latency.
    compiled = numpile.compile(sum_of_squares, dynamic=True)
    for n in (1000, 1003):
        x = _widely_scaled(n)
        want = sum_of_squares(x)
        assert all(_lanes_sum(x * x, lanes) != want for lanes in (2, 4, 8)), n
        assert float(np.sum(x * x)) != want, n  # NumPy's pairwise order differs too
        got = compiled(x)
        assert type(got) is type(want) and got == want, (n, got, want)
