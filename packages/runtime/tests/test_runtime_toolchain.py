from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from pathlib import Path

import attrs
import pytest

import numpile_runtime as rt
import numpile_runtime.toolchain as toolchain_module


def test_finds_a_working_compiler() -> None:
    tc = rt.find_toolchain()
    assert tc.kind in ("gcc", "clang")
    assert os.path.isabs(tc.cc) and os.access(tc.cc, os.X_OK)
    assert tc.version[0].isdigit()
    assert tc.version in tc.version_line
    assert tc.compiler("c") == tc.cc
    assert rt.find_toolchain() is tc


def test_flags_keep_ieee_semantics() -> None:
    tc = rt.find_toolchain()
    flags = tc.flags()
    assert flags[: len(tc.base_flags)] == tc.base_flags
    assert "-O3" in flags
    assert "-ffp-contract=off" in flags
    for unsafe in ("-ffast-math", "-fno-math-errno", "-funsafe-math-optimizations", "-Ofast"):
        assert unsafe not in flags
    if tc.march_flag:
        assert tc.march_flag in flags
        assert tc.march_flag in ("-march=native", "-mcpu=native")
    assert set(tc.openmp_flags) <= set(flags)
    assert not set(tc.openmp_flags) & set(tc.flags(openmp=False))


def test_probe_finds_native_and_openmp_on_gcc() -> None:
    tc = rt.find_toolchain()
    if tc.kind != "gcc" or shutil.which("gcc") is None:
        pytest.skip("this check is for gcc on Linux")
    assert tc.march_flag == "-march=native"
    assert tc.openmp_flags == ("-fopenmp",)
    assert tc.target.split("-", 1)[1] not in ("", "native", "generic")


def test_toolchain_is_frozen_and_hashable() -> None:
    tc = rt.find_toolchain()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        tc.cc = "x"  # type: ignore[misc]
    assert hash(tc) == hash(attrs.evolve(tc))
    assert tc.identity != attrs.evolve(tc, march_flag="").identity
    assert tc.identity != attrs.evolve(tc, target="x86_64-other").identity


def test_unknown_language() -> None:
    with pytest.raises(ValueError, match="fortran"):
        rt.find_toolchain().compiler("fortran")


def test_cc_env_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    monkeypatch.setenv("CC", gcc)
    tc = rt.find_toolchain()
    assert tc.cc == gcc
    assert tc.kind == "gcc"
    assert rt.find_toolchain() is tc


def test_probe_is_cached_on_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    # Two spellings of one compiler: separate discoveries, one probe on disk.
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    monkeypatch.setenv("CC", gcc)
    first = rt.find_toolchain()
    assert rt.counters().get("compiler_invocation", 0) >= 1
    rt.reset_counters()
    monkeypatch.setenv("CC", os.path.join(os.path.dirname(gcc), ".", os.path.basename(gcc)))
    second = rt.find_toolchain()
    assert second is not first
    assert rt.counters().get("compiler_invocation", 0) == 0
    assert (second.march_flag, second.openmp_flags) == (first.march_flag, first.openmp_flags)


def test_known_toolchain_never_runs_the_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    monkeypatch.setenv("CC", gcc)
    assert rt.known_toolchain() is None  # a fresh cache: finding it would probe
    assert rt.counters().get("compiler_invocation", 0) == 0
    found = rt.find_toolchain()  # probes, and stores the probe
    assert rt.known_toolchain() is found
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    rt.reset_counters()
    again = rt.known_toolchain()  # a new process with the probe on disk
    assert again is not None and again.identity == found.identity
    assert rt.counters().get("compiler_invocation", 0) == 0
    monkeypatch.setenv("CC", "/nonexistent/bin/cc-missing")
    assert rt.known_toolchain() is None


def test_known_toolchain_does_not_wait_for_a_probe_in_another_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The build queue probes the compiler while capture runs (a fresh cache: no probe on
    # disk); a cold compile asks `known_toolchain` meanwhile and must go on (lowering its
    # graph) instead of waiting.
    found = rt.find_toolchain()
    rt.set_cache_dir(tmp_path / "no-probe-yet")
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    started = threading.Event()
    release = threading.Event()

    def slow_discovery(cc_env: str | None, cxx_env: str | None) -> rt.Toolchain:
        started.set()
        release.wait(30)
        return found

    monkeypatch.setattr("numpile_runtime.toolchain._discover", slow_discovery)
    prober = threading.Thread(target=rt.find_toolchain)
    prober.start()
    try:
        assert started.wait(30)
        answers: list[rt.Toolchain | None] = []
        asker = threading.Thread(target=lambda: answers.append(rt.known_toolchain()))
        asker.start()
        asker.join(5)
        assert answers == [None], "known_toolchain waited for another thread's probe"
    finally:
        release.set()
        prober.join(30)
    assert rt.known_toolchain() is found


def test_known_toolchain_waits_for_a_discovery_from_the_probe_on_disk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A warm start's build queue finds the toolchain from the probe an earlier process
    # stored (no compiler runs); a compile asking meanwhile gets it, rather than None and
    # a graph cache it then would not ask.
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    monkeypatch.setenv("CC", gcc)
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    found = rt.find_toolchain()  # probes, and stores the probe in this test's cache
    probed = rt.counters().get("compiler_invocation", 0)
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    started = threading.Event()
    release = threading.Event()
    real_discover = toolchain_module._discover

    def slow_discovery(cc_env: str | None, cxx_env: str | None) -> rt.Toolchain:
        started.set()
        release.wait(30)
        return real_discover(cc_env, cxx_env)

    monkeypatch.setattr("numpile_runtime.toolchain._discover", slow_discovery)
    finder = threading.Thread(target=rt.find_toolchain)
    finder.start()
    answers: list[rt.Toolchain | None] = []
    try:
        assert started.wait(30)
        asker = threading.Thread(target=lambda: answers.append(rt.known_toolchain()))
        asker.start()
        asker.join(0.5)
        assert answers == [], "known_toolchain answered before the discovery ended"
    finally:
        release.set()
        finder.join(30)
    asker.join(30)
    assert len(answers) == 1 and answers[0] is not None
    assert answers[0].identity == found.identity
    assert rt.counters().get("compiler_invocation", 0) == probed  # no compiler since


def test_missing_cc_names_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/bin/cc-missing")
    with pytest.raises(rt.CompilerNotFoundError) as info:
        rt.find_toolchain()
    message = str(info.value)
    assert "CC='/nonexistent/bin/cc-missing'" in message
    assert "install" in message
    assert "unset CC" in message


def test_no_compiler_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    # The process-wide table caches by CC/CXX only; PATH changes need a fresh lookup.
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    with pytest.raises(rt.CompilerNotFoundError, match=r"install gcc \(apt-get install gcc\)"):
        rt.find_toolchain()


def test_cc_that_does_not_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CC", str(fake))
    with pytest.raises(rt.CompilerNotFoundError, match="exit status 3"):
        rt.find_toolchain()


def test_missing_cxx_is_reported_on_use(monkeypatch: pytest.MonkeyPatch) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    monkeypatch.setenv("CC", gcc)
    monkeypatch.setenv("CXX", "/nonexistent/g++-missing")
    tc = rt.find_toolchain()
    assert tc.cxx == ""
    with pytest.raises(rt.CompilerNotFoundError, match="no C\\+\\+ compiler"):
        tc.compiler("c++")


@pytest.mark.parametrize(
    "planted",
    [
        {"march_flag": "-wrapper=/bin/false", "openmp_flags": []},
        {"march_flag": "-march=native", "openmp_flags": ["-fopenmp", "-fplugin=/tmp/x.so"]},
        {"target": "x86_64\n-wrapper"},
    ],
)
def test_planted_probe_flags_are_never_used(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: rt.CodeCache, planted: dict[str, object]
) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    monkeypatch.setenv("CC", gcc)
    honest = rt.find_toolchain()
    probes = 0
    for blob in (fresh_cache.root / "blobs").rglob("*.bin"):
        key = blob.name.removesuffix(".bin")
        probe = json.loads(fresh_cache.get_bytes(key) or b"{}")
        if "march_flag" in probe:
            fresh_cache.put_bytes(key, json.dumps({**probe, **planted}).encode())
            probes += 1
    assert probes == 1
    monkeypatch.setattr("numpile_runtime.toolchain._FOUND", {})
    again = rt.find_toolchain()
    assert again.flags() == honest.flags()
    assert again.target == honest.target
