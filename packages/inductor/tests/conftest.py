"""Fixtures the inductor's tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import numpile_runtime as rt


@pytest.fixture
def fresh_cache(tmp_path: Path) -> Iterator[Path]:
    """An empty code cache (and graph cache) under `tmp_path` for the test; the previous
    cache folder afterwards."""
    previous = rt.default_cache().root
    root = tmp_path / "cache"
    rt.set_cache_dir(root)
    yield root
    rt.set_cache_dir(previous)
