"""`numpile.wait_for_compiles`: after it, a tiered function's next call runs compiled code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import numpile
import numpile_runtime as rt


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path) -> Iterator[None]:
    # An empty code cache: the first call misses it and starts a background build.
    previous = rt.default_cache()
    numpile.reset()
    rt.set_cache_dir(tmp_path / "cache")
    yield
    numpile.reset()
    rt.set_cache_dir(previous.root)


def test_after_waiting_the_next_call_runs_the_compiled_code() -> None:
    def scaled_sum(x: np.ndarray) -> np.ndarray:
        return (np.cos(x) * 3.0 + x).sum(axis=-1)

    compiled = numpile.compile(scaled_sum, options={"tiered": True})
    x = np.linspace(0.0, 1.0, 24).reshape(4, 6)
    rt.reset_counters()
    np.testing.assert_allclose(compiled(x), scaled_sum(x))
    assert rt.counters().get("inductor_tiered_numpy_call") == 1  # built in the background
    assert numpile.wait_for_compiles(120.0)
    numpy_calls = rt.counters().get("inductor_tiered_numpy_call", 0)
    np.testing.assert_allclose(compiled(x), scaled_sum(x))
    np.testing.assert_allclose(compiled(x), scaled_sum(x))
    assert rt.counters().get("inductor_tiered_numpy_call", 0) == numpy_calls
