from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import numpile_runtime as rt


def _all_files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def test_bytes_round_trip_and_overwrite(fresh_cache: rt.CodeCache) -> None:
    assert fresh_cache.get_bytes("graph-abc") is None
    fresh_cache.put_bytes("graph-abc", b"first")
    assert fresh_cache.get_bytes("graph-abc") == b"first"
    fresh_cache.put_bytes("graph-abc", b"")
    assert fresh_cache.get_bytes("graph-abc") == b""
    payload = bytes(range(256)) * 1000
    fresh_cache.put_bytes("graph-abc", payload)
    assert fresh_cache.get_bytes("graph-abc") == payload
    # atomic writes leave no temporary files behind
    assert [p.name for p in _all_files(fresh_cache.root / "blobs")] == ["graph-abc.bin"]


@pytest.mark.parametrize("key", ["", "../escape", "a/b", "-lead", "x" * 201, "sp ace"])
def test_invalid_keys_are_rejected(fresh_cache: rt.CodeCache, key: str) -> None:
    with pytest.raises(ValueError, match="invalid cache key"):
        fresh_cache.put_bytes(key, b"")
    with pytest.raises(ValueError, match="invalid cache key"):
        fresh_cache.get_bytes(key)


def test_cache_key_is_unambiguous_and_stable() -> None:
    assert rt.cache_key("ab", "c") != rt.cache_key("a", "bc")
    assert rt.cache_key("a", "b") == rt.cache_key(b"a", b"b")
    assert rt.cache_key("x") == rt.cache_key("x")
    assert rt.cache_key() != rt.cache_key("")
    assert len(rt.cache_key("x")) == 64


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated
        lambda raw: raw[:-1] + bytes([raw[-1] ^ 1]),  # one bit flipped in the data
        lambda raw: b"garbage",  # no header
        lambda raw: b"",  # empty file
        lambda raw: raw + b"x",  # trailing junk
    ],
)
def test_corrupt_blob_reads_as_missing(fresh_cache: rt.CodeCache, damage: object) -> None:
    fresh_cache.put_bytes("k1", b"precious data")
    path = next(iter(_all_files(fresh_cache.root / "blobs")))
    assert callable(damage)
    path.write_bytes(damage(path.read_bytes()))
    assert fresh_cache.get_bytes("k1") is None
    assert rt.counters()["cache_corrupt"] == 1
    fresh_cache.put_bytes("k1", b"rewritten")
    assert fresh_cache.get_bytes("k1") == b"rewritten"


def test_artifact_checksum(fresh_cache: rt.CodeCache) -> None:
    key = rt.cache_key("artifact")
    assert fresh_cache.get_artifact(key, ".so", kind="cpp") is None
    produced = fresh_cache.temp_path(key, ".so", kind="cpp")
    produced.write_bytes(b"\x7fELF fake shared object")
    path = fresh_cache.put_artifact(key, ".so", produced, kind="cpp", meta={"note": "x"})
    assert not produced.exists()
    assert fresh_cache.get_artifact(key, ".so", kind="cpp") == path
    path.write_bytes(b"\x7fELF fake shared objecT")  # same size, other content
    assert fresh_cache.get_artifact(key, ".so", kind="cpp") is None
    path.write_bytes(b"\x7fELF")  # truncated
    assert fresh_cache.get_artifact(key, ".so", kind="cpp") is None


def test_artifact_without_sidecar_is_incomplete(fresh_cache: rt.CodeCache) -> None:
    key = rt.cache_key("no-sidecar")
    produced = fresh_cache.temp_path(key, ".so", kind="cpp")
    produced.write_bytes(b"data")
    path = fresh_cache.put_artifact(key, ".so", produced, kind="cpp")
    path.with_name(path.name + ".meta.json").unlink()
    assert fresh_cache.get_artifact(key, ".so", kind="cpp") is None


def test_env_var_is_read_when_the_cache_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMPILE_CACHE_DIR", str(tmp_path / "from-env"))
    cache = rt.CodeCache()
    assert cache.root == tmp_path / "from-env"
    assert cache.root.is_dir()
    monkeypatch.setenv("NUMPILE_CACHE_DIR", str(tmp_path / "later"))
    assert cache.root == tmp_path / "from-env"
    assert rt.set_cache_dir(None).root == tmp_path / "later"
    assert rt.default_cache().root == tmp_path / "later"


def test_default_cache_is_process_wide(tmp_path: Path) -> None:
    cache = rt.set_cache_dir(tmp_path / "elsewhere")
    assert rt.default_cache() is cache
    assert rt.default_cache() is rt.default_cache()


def test_unwritable_dir_falls_back_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match="cannot write its cache folder") as record:
        cache = rt.CodeCache(blocker / "cache")
    assert len(record) == 1
    assert cache.is_fallback
    assert cache.root != blocker / "cache"
    cache.put_bytes("k", b"still cached")
    assert cache.get_bytes("k") == b"still cached"


def test_writable_dir_is_not_a_fallback(fresh_cache: rt.CodeCache) -> None:
    assert not fresh_cache.is_fallback
    assert list(fresh_cache.root.iterdir()) == []  # the write probe leaves nothing


def test_concurrent_writers_of_one_key(fresh_cache: rt.CodeCache) -> None:
    payloads = [bytes([i]) * 100_000 for i in range(8)]

    def write(data: bytes) -> None:
        for _ in range(20):
            fresh_cache.put_bytes("shared", data)
            got = fresh_cache.get_bytes("shared")
            assert got in payloads

    threads = [threading.Thread(target=write, args=(data,)) for data in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fresh_cache.get_bytes("shared") in payloads
    assert len(_all_files(fresh_cache.root / "blobs")) == 1


def test_clear_removes_entries(fresh_cache: rt.CodeCache) -> None:
    fresh_cache.put_bytes("k", b"1")
    fresh_cache.clear()
    assert fresh_cache.get_bytes("k") is None
    fresh_cache.put_bytes("k", b"2")
    assert fresh_cache.get_bytes("k") == b"2"


def test_lock_is_exclusive_across_threads(fresh_cache: rt.CodeCache) -> None:
    inside = 0
    peak = 0
    guard = threading.Lock()

    def hold() -> None:
        nonlocal inside, peak
        with fresh_cache.lock("ab12", kind="cpp"):
            with guard:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.005)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=hold) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1
