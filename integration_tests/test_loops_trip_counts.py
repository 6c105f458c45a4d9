"""Trip counts never specialize (issue 23): the benchmark's loop workloads, compiled with
the default options (`dynamic=None`, the inductor), run at trip counts 0, 1, 5 and 50 (or
matrix orders 5, 50, 17) from one compiled graph, with NumPy's values; every workload
called at its trip count and then at 10x compiles once (a size that bounds a loop and
reaches an allocation, `np.zeros(cr.shape[0])`, stays symbolic).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import numpile
from benchmarks.loops import find_loop_workloads
from numpile_capture.capture_events import recording_captures


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def _check(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _check(g, w)
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "trips"),
    [
        ("gauss_seidel", (0, 1, 5, 50)),
        ("jacobi_2d", (0, 1, 5, 50)),
        ("particles", (0, 1, 5, 50)),
        ("triangular_solves", (5, 50, 17)),
        ("levinson_durbin", (5, 50, 17)),
    ],
)
def test_one_compile_across_trip_counts(name: str, trips: tuple[int, ...]) -> None:
    workload = find_loop_workloads([name])[0]
    compiled = numpile.compile(workload.fn)
    with recording_captures() as events:
        for trip in trips:
            args = workload.inputs(trip)
            _check(compiled(*args), workload.fn(*args))
    assert not any(event.eager for event in events)
    assert sum(1 for event in events if event.graph is not None) == 1


@pytest.mark.parametrize("name", [workload.name for workload in find_loop_workloads(None)])
def test_ten_times_the_trip_count_hits_the_same_entry(name: str) -> None:
    workload = find_loop_workloads([name])[0]
    compiled = numpile.compile(workload.fn)
    with recording_captures() as events:
        for trip in (workload.quick_trips, workload.quick_trips * 10):
            args = workload.inputs(trip)
            _check(compiled(*args), workload.fn(*args))
    assert not any(event.eager for event in events)
    assert sum(1 for event in events if event.graph is not None) == 1
