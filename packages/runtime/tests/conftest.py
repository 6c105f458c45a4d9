"""Fixtures for the runtime tests: every test gets its own empty code cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import numpile_runtime as rt


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path: Path) -> Iterator[rt.CodeCache]:
    """Point the process-wide cache at an empty folder and zero the metrics."""
    previous = rt.default_cache()
    cache = rt.set_cache_dir(tmp_path / "cache")
    rt.reset_counters()
    rt.reset_compile_times()
    yield cache
    rt.set_cache_dir(previous.root)
