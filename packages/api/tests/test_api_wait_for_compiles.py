"""`numpile.wait_for_compiles`: after it, a tiered function's next call runs compiled code."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

import numpile
import numpile_runtime as rt
from numpile_inductor.background_build import submit

# graph_cache off: the graph misses the graph cache and tiers every run (the builder's own
# cache still makes the rebuilt module cheap).
TIERED = {"tiered": True, "graph_cache": False}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    numpile.reset()
    yield
    numpile.reset()


def scaled_sum(x: np.ndarray) -> np.ndarray:
    return (np.cos(x) * 3.0 + x).sum(axis=-1)


def test_after_waiting_the_next_call_runs_the_compiled_code() -> None:
    # The background worker is busy for a moment: the graph's build waits behind that work,
    # so only a wait that waits sees it done.
    released = threading.Event()
    submit(lambda: released.wait(60))
    threading.Timer(0.5, released.set).start()
    compiled = numpile.compile(scaled_sum, options=TIERED)
    x = np.linspace(0.0, 1.0, 24).reshape(4, 6)
    rt.reset_counters()
    np.testing.assert_allclose(compiled(x), scaled_sum(x))
    assert rt.counters().get("inductor_tiered_numpy_call") == 1  # the build is queued
    assert numpile.wait_for_compiles(120.0)
    np.testing.assert_allclose(compiled(x), scaled_sum(x))
    np.testing.assert_allclose(compiled(x), scaled_sum(x))
    assert rt.counters().get("inductor_tiered_numpy_call") == 1
    assert rt.counters().get("inductor_tiered_switch") == 1
