"""The cache's size cap: least-recently-used sweeps, entries of older versions, entries in use
by other processes, and concurrent writers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import numpile_runtime as rt
from numpile_runtime import cache_eviction
from numpile_runtime.cache_eviction import entries

KB = 1024


def _age(cache: rt.CodeCache, key: str, seconds_ago: float) -> None:
    path = cache.root / "blobs" / key[:2] / f"{key}.bin"
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))


def test_a_write_past_the_cap_removes_least_recently_used_entries(tmp_path: Path) -> None:
    cache = rt.CodeCache(tmp_path, max_bytes=10 * KB)
    for i in range(8):
        cache.put_bytes(f"k{i}", bytes(KB))
        _age(cache, f"k{i}", 100 - i)  # k0 oldest
    assert cache.get_bytes("k0") is not None  # a hit makes k0 the most recently used
    for i in range(8, 12):
        cache.put_bytes(f"k{i}", bytes(KB))
    info = cache.info()
    assert info.size_bytes <= 10 * KB
    assert cache.get_bytes("k0") is not None
    assert cache.get_bytes("k1") is None  # the least recently used went first
    assert cache.get_bytes("k11") is not None
    assert rt.counters()["cache_evicted"] >= 1


def test_entries_of_other_numpile_versions_go_after_the_next_write(tmp_path: Path) -> None:
    old = rt.CodeCache(tmp_path)
    old.put_bytes("from-old-version", b"x" * 100)
    assert rt.wait_for_queued_builds(timeout=60)
    (tmp_path / "VERSION").write_text("numpile==0.0.1\n")
    new = rt.CodeCache(tmp_path)
    assert new.get_bytes("from-old-version") is not None  # reading cleans nothing
    new.put_bytes("from-this-version", b"y")
    assert rt.wait_for_queued_builds(timeout=60)  # the removal is the build queue's idle work
    assert new.get_bytes("from-old-version") is None
    assert new.get_bytes("from-this-version") == b"y"
    assert "numpile-runtime==" in new.info().versions


@pytest.mark.parametrize("marker", [None, "numpile==0.0.1", "this process's"])
def test_the_installed_versions_are_read_by_the_build_queue_not_by_the_first_write(
    tmp_path: Path, marker: str | None
) -> None:
    # Reading them (importlib.metadata: about 30 ms of CPU) stays off the thread of a first
    # compile's writes, in a fresh folder, one of another version and one of this version.
    if marker == "this process's":
        rt.CodeCache(tmp_path).put_bytes("earlier", b"x")
        assert rt.wait_for_queued_builds(timeout=60)
    elif marker is not None:
        (tmp_path / "VERSION").write_text(marker + "\n")
    program = textwrap.dedent(
        f"""
        import json, sys, threading
        importers = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name == "importlib.metadata":
                    importers.append(threading.current_thread().name)
                return None

        sys.meta_path.insert(0, Watch())
        import numpile_runtime as rt
        cache = rt.CodeCache({str(tmp_path)!r})
        cache.put_bytes("k", b"v")
        assert rt.wait_for_queued_builds(timeout=120)
        marker = (cache.root / "VERSION").read_text()
        print(json.dumps({{"importers": importers, "marker": marker}}))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", program], check=True, timeout=180, capture_output=True, text=True
    )
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["importers"] == ["numpile-build-queue"]
    assert "numpile-runtime==" in report["marker"]
    assert rt.CodeCache(tmp_path).get_bytes("k") == b"v"


def test_an_entry_being_loaded_is_never_evicted(tmp_path: Path) -> None:
    cache = rt.CodeCache(tmp_path)
    tmp = cache.folder("ab12", kind="cpp") / ".ab12.tmp.so"
    tmp.write_bytes(b"shared object")
    path = cache.put_artifact("ab12", ".so", tmp, kind="cpp")
    with cache.reading("ab12", kind="cpp"):
        result = cache.evict(0)
        assert result.skipped_in_use == 1
        assert cache.get_artifact("ab12", ".so", kind="cpp") == path
    assert cache.evict(0).removed_entries == 1
    assert not path.exists()
    assert cache.info().entry_count == 0


def test_an_entry_another_process_is_loading_is_kept(tmp_path: Path) -> None:
    cache = rt.CodeCache(tmp_path)
    tmp = cache.folder("cd34", kind="cpp") / ".cd34.tmp.so"
    tmp.write_bytes(b"shared object")
    cache.put_artifact("cd34", ".so", tmp, kind="cpp")
    holder = textwrap.dedent(
        f"""
        import sys, time, numpile_runtime as rt
        cache = rt.CodeCache({str(tmp_path)!r})
        with cache.reading("cd34", kind="cpp"):
            print("holding", flush=True)
            sys.stdin.readline()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "holding"
        assert cache.evict(0).removed_entries == 0
        assert cache.get_artifact("cd34", ".so", kind="cpp") is not None
    finally:
        process.communicate("\n", timeout=60)
    assert cache.evict(0).removed_entries == 1


def test_a_loaded_build_survives_a_sweep_and_is_rebuilt_when_gone(fresh_cache: rt.CodeCache):
    source = "int seventeen(void) { return 17; }"
    assert rt.build_library(source).seventeen() == 17
    fresh_cache.evict(0)
    assert [e for e in entries(fresh_cache.root) if e.kind == "cpp"] == []
    # A fresh process-level build finds nothing and compiles again.
    rt.reset_counters()
    path = rt.compile_library(source)
    assert path.exists()
    assert rt.counters()["compiler_invocation"] == 1


WRITER = textwrap.dedent(
    """
    import sys, numpile_runtime as rt
    cache = rt.CodeCache(sys.argv[1], max_bytes=int(sys.argv[2]))
    name = sys.argv[3]
    for i in range(60):
        data = (name + str(i)).encode() * 300
        cache.put_bytes(f"{name}-{i}", data)
        got = cache.get_bytes(f"{name}-{i}")
        assert got is None or got == data, "a read returned another entry's bytes"
    print("ok")
    """
)


def test_a_file_removed_between_listing_and_stat_is_not_an_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = rt.CodeCache(tmp_path)
    cache.put_bytes("kept", bytes(KB))
    cache.put_bytes("gone", bytes(KB))
    real_files = cache_eviction._files

    def files_then_remove(folder: Path) -> list[os.DirEntry[str]]:
        listing = real_files(folder)
        for item in listing:
            if item.name.startswith("gone"):  # another process's sweep, between listing and stat
                os.unlink(item.path)
        return listing

    monkeypatch.setattr(cache_eviction, "_files", files_then_remove)
    found = entries(tmp_path)
    assert [entry.files[0].name for entry in found] == ["kept.bin"]


def test_concurrent_writers_stay_near_the_cap(tmp_path: Path) -> None:
    cap = 100 * KB
    tmp_path = tmp_path / "shared"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(cap), f"w{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.strip() == "ok"
    written = 4 * 60 * 300 * 3
    info = rt.CodeCache(tmp_path, max_bytes=cap).info()
    size = info.size_bytes
    assert written > 2 * cap
    # The writers share the size (usage.json, under its lock): whoever passes the cap sweeps.
    assert size <= cap, info
