"""Build jobs with a header and several translation units: a precompiled header built once
per cache folder and reused, corrupt or mismatched ones falling back to the header's text."""

from __future__ import annotations

import ctypes
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import numpile_runtime as rt
from numpile_runtime import builder, precompiled_header

# A small header (no Python.h: cheap to precompile), a global the units share, a static inline
# helper each unit compiles for itself.
_HEADER = """\
#include <math.h>
extern __attribute__((visibility("hidden"))) int g_base;
static inline int twice(int v) { return 2 * v; }
"""
_FIRST = """\
__attribute__((visibility("hidden"))) int g_base = 20;
int offset(void);
int answer(void) { return twice(g_base) + offset(); }
"""
_SECOND = """\
__attribute__((visibility("hidden"))) int offset(void) { return g_base / 10; }
"""


@pytest.fixture(autouse=True)
def _no_precompile_left() -> Iterator[None]:
    # A test's background precompile ends within it (its counters are not the next test's).
    precompiled_header._forget()
    yield
    assert rt.wait_for_queued_builds(timeout=60)


def _job(tag: int = 0) -> builder.BuildJob:
    # Jobs that differ in their first unit only (`tag`): the same header, so the same PCH.
    # Each test builds its own tags (a job built before is loaded from the process's memo).
    return builder.BuildJob(
        f"{_FIRST}/* {tag} */\n", header=_HEADER, more_sources=(_SECOND,), numpy_headers=False
    )


def _answer(tag: int = 0) -> int:
    (library,) = rt.build_many([_job(tag)])
    assert isinstance(library, ctypes.CDLL)
    return int(library.answer())


def _precompiled(cache: rt.CodeCache) -> tuple[str, Path]:
    # Precompile the jobs' header now (a build queues it; tests do not wait).
    plan = builder._plan(_job(), rt.find_toolchain())
    key = precompiled_header.header_key(plan.command, "c", _HEADER)
    header = precompiled_header.precompile(cache, key, plan.command, "c", _HEADER)
    assert header is not None
    return key, header


def _wait_for(event: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while rt.counters().get(event, 0) == 0:
        assert time.monotonic() < deadline, f"no {event} within {timeout} s: {rt.counters()}"
        time.sleep(0.05)


def test_units_compile_at_once_and_link_into_one_library(fresh_cache: rt.CodeCache) -> None:
    assert _answer() == 42
    sources = sorted(path.name.split(".", 1)[1] for path in fresh_cache.root.rglob("*.c"))
    assert sources == ["1.c", "c"]  # both units kept beside the library, as a single source is
    # Two compiles and a link (the header's precompile may follow on the build queue).
    assert rt.counters()["cache_miss"] == 1


def test_the_precompiled_header_is_built_once_and_used_by_later_builds(
    fresh_cache: rt.CodeCache,
) -> None:
    assert _answer(10) == 42  # compiled with the header's text; starts its precompile
    _wait_for("pch_build")
    assert _answer(11) == 42
    assert _answer(12) == 42
    counts = rt.counters()
    assert counts["pch_build"] == 1
    assert counts["pch_use"] == 2
    assert len(list(fresh_cache.root.rglob("*.h.gch"))) == 1
    # GCC reads it: `-H` marks a precompiled header it used with '!'.
    _, header = _precompiled(fresh_cache)
    plan = builder._plan(_job(), rt.find_toolchain())
    unit = fresh_cache.root / "unit.c"
    unit.write_text(_SECOND)
    shown = subprocess.run(
        [*plan.command, "-H", "-fsyntax-only", "-include", str(header), str(unit)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"! {header}.gch" in shown.stderr


def test_a_corrupt_precompiled_header_is_not_used_and_is_built_again(
    fresh_cache: rt.CodeCache,
) -> None:
    _, header = _precompiled(fresh_cache)
    gch = Path(f"{header}.gch")
    gch.write_bytes(b"gpch" + b"\0" * 64)  # its checksum no longer matches
    precompiled_header._forget()  # as a new process would find it
    rt.reset_counters()
    assert _answer(3) == 42
    assert "pch_use" not in rt.counters()
    _wait_for("pch_build")
    assert rt.counters()["pch_corrupt"] == 1
    assert gch.read_bytes()[:4] == b"gpch" and gch.stat().st_size > 1000


def test_a_precompiled_header_gcc_refuses_falls_back_to_the_text(
    fresh_cache: rt.CodeCache,
) -> None:
    # A .gch built with another macro set, planted with a checksum that matches: GCC
    # declines it and reads the header's text; the library is still right.
    key, header = _precompiled(fresh_cache)
    plan = builder._plan(_job(), rt.find_toolchain())
    gch = Path(f"{header}.gch")
    other = fresh_cache.root / "other.h.gch"
    subprocess.run(
        [*plan.command, "-DNP_OTHER=1", "-x", "c-header", str(header), "-o", str(other)],
        check=True,
        capture_output=True,
    )
    planted = gch.with_name(f".{gch.name}.planted")
    other.replace(planted)
    fresh_cache.put_artifact(key, ".h.gch", planted, kind="pch")
    precompiled_header._forget()
    rt.reset_counters()
    assert _answer(4) == 42
    assert rt.counters()["pch_use"] == 1
    assert "pch_fallback" not in rt.counters()


def test_a_build_failing_with_the_precompiled_header_is_built_with_the_text(
    fresh_cache: rt.CodeCache,
) -> None:
    # A .gch of other text under the header's key (it lacks `twice`): the units fail with it,
    # build again with the text, and the bad .gch is removed.
    key, header = _precompiled(fresh_cache)
    plan = builder._plan(_job(), rt.find_toolchain())
    wrong = fresh_cache.root / "wrong.h"
    wrong.write_text("#include <math.h>\n")
    built = fresh_cache.root / "wrong.h.gch"
    subprocess.run(
        [*plan.command, "-x", "c-header", str(wrong), "-o", str(built)],
        check=True,
        capture_output=True,
    )
    gch = Path(f"{header}.gch")
    planted = gch.with_name(f".{gch.name}.planted")
    built.replace(planted)
    fresh_cache.put_artifact(key, ".h.gch", planted, kind="pch")
    precompiled_header._forget()
    rt.reset_counters()
    assert _answer(5) == 42
    assert rt.counters()["pch_fallback"] == 1
    assert not gch.exists() or rt.counters().get("pch_build", 0) == 1
