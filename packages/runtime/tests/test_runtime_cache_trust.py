"""The cache folder is private: made 0700, and a root others could write is refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import numpile_runtime as rt

posix_only = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes and owners")


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@posix_only
def test_folders_are_private_under_an_open_umask(tmp_path: Path, open_umask: None) -> None:
    cache = rt.CodeCache(tmp_path / "new" / "cache")
    cache.put_bytes("graph-1", b"x")
    folder = cache.folder("ab12", kind="cpp")
    assert _mode(cache.root) == 0o700
    for path in (folder, folder.parent, cache.root / "blobs", cache.root / "blobs" / "gr"):
        assert _mode(path) == 0o700, path


@posix_only
def test_world_writable_root_is_refused_with_a_warning(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="other users can write it") as record:
        cache = rt.CodeCache(shared)
    assert len(record) == 1
    assert cache.is_fallback
    assert cache.root != shared
    assert _mode(cache.root) == 0o700
    cache.put_bytes("k", b"still cached")
    assert cache.get_bytes("k") == b"still cached"
    assert list(shared.iterdir()) == []


@posix_only
def test_root_owned_by_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.warns(RuntimeWarning, match="owned by another user"):
        cache = rt.CodeCache(tmp_path)
    assert cache.is_fallback


def test_private_root_is_used(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    assert rt.CodeCache(tmp_path).root == tmp_path
