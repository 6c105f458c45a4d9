"""Source fingerprints: content digests, read from the code cache while the files' stats hold."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import numpile_runtime as rt
from numpile_runtime.source_fingerprint import _fingerprint


@pytest.fixture(autouse=True)
def new_process() -> Iterator[None]:
    # Each call below stands for a fresh process: no in-process memo.
    _fingerprint.cache_clear()
    yield
    _fingerprint.cache_clear()


def _package(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 2\n")
    (root / "notes.txt").write_text("not code\n")
    (root / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0" * 16)
    return root


def _fresh(*folders: Path) -> str:
    _fingerprint.cache_clear()
    return rt.source_fingerprint(*folders)


def test_the_digest_follows_the_code_and_nothing_else(tmp_path: Path) -> None:
    package = _package(tmp_path / "pkg")
    first = _fresh(package)
    (package / "notes.txt").write_text("changed\n")
    (package / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\1" * 16)
    assert _fresh(package) == first
    (package / "sub" / "b.py").write_text("y = 3\n")
    changed = _fresh(package)
    assert changed != first
    (package / "sub" / "b.py").write_text("y = 2\n")  # same bytes again, a newer mtime
    assert _fresh(package) == first
    (package / "c.py").write_text("")
    assert _fresh(package) not in (first, changed)


def test_the_same_code_elsewhere_has_the_same_digest(tmp_path: Path) -> None:
    # Keys built from it stay shareable between machines and checkouts.
    assert _fresh(_package(tmp_path / "one" / "pkg")) == _fresh(_package(tmp_path / "two" / "pkg"))


def test_a_later_process_with_unchanged_files_reads_no_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = _package(tmp_path / "pkg")
    first = _fresh(package)

    real_open = builtins.open

    def unread(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).endswith(".py"):
            raise AssertionError(f"{file} was read")
        return real_open(file, *args, **kwargs)  # the cache's own entry

    monkeypatch.setattr(builtins, "open", unread)
    assert _fresh(package) == first
    # A file whose size or mtime moved is read again (and fails here).
    os.utime(package / "a.py", ns=(0, 12345))
    with pytest.raises(AssertionError, match=r"a\.py was read"):
        _fresh(package)


def test_a_stored_digest_of_the_wrong_shape_is_computed_again(
    tmp_path: Path, fresh_cache: rt.CodeCache
) -> None:
    package = _package(tmp_path / "pkg")
    first = _fresh(package)
    (blob,) = (fresh_cache.root / "blobs").rglob("source-fingerprint-*")
    key = blob.name.removesuffix(".bin")
    fresh_cache.put_bytes(key, b"short")
    assert _fresh(package) == first
    assert fresh_cache.get_bytes(key) == first.encode()
