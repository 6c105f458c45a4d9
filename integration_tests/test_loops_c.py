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
            if n == 0 and fn is crc_bits:
                # TODO(issue 23): after an empty loop `crc` is still the Python int, and
                # eager's `crc ^ 0xFFFFFFFF` stays one; the graph computes it as int64.
                continue
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
