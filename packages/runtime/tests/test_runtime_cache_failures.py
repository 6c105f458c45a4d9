"""Cache I/O failures of any kind degrade to building without the cache, never to an error."""

from __future__ import annotations

import errno
import itertools
from typing import Any

import pytest

import numpile_runtime as rt

_SERIAL = itertools.count()

CACHE_METHODS = [
    "folder",
    "get_artifact",
    "put_artifact",
    "lock",
    "reading",
    "temp_path",
    "write_text",
    "artifact_path",
]


def _disk_full(*args: Any, **kwargs: Any) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("method", CACHE_METHODS)
def test_a_failing_cache_still_builds(
    fresh_cache: rt.CodeCache, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    rt.find_toolchain()  # the probe itself is cached before the disk fills up
    monkeypatch.setattr(fresh_cache, method, _disk_full)
    value = 1000 + next(_SERIAL)
    lib = rt.build_library(f"int value(void) {{ return {value}; }}")
    assert lib.value() == value
    assert rt.counters().get("cache_io_error", 0) == 1


def test_an_unreadable_blob_is_a_miss(fresh_cache: rt.CodeCache) -> None:
    fresh_cache.put_bytes("graph-1", b"x")
    blob = next((fresh_cache.root / "blobs").rglob("graph-1.bin"))
    blob.unlink()
    blob.mkdir()  # reading it raises IsADirectoryError, an OSError
    assert fresh_cache.get_bytes("graph-1") is None
