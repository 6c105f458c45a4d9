"""CodeCache: entries, lookup order, tags, limits, recompile reasons, unsafe lookup, registry."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_guards import (
    ArraySpec,
    CacheEntry,
    CodeCache,
    Guard,
    GuardKind,
    LocalSource,
    RecompileReason,
    all_caches,
    cache_for,
    clear_caches,
    compile_fetch,
    compile_guards,
    differentiating_guards,
)

X = LocalSource("x")


def shape_guard(n: int) -> Guard:
    return Guard(GuardKind.ARRAY_MATCH, X, ArraySpec(np.ndarray, np.dtype("float64"), (n,), (8,)))


def entry_for(n: int, tag: Any = None, extra: list[Guard] | None = None) -> CacheEntry:
    guards = [shape_guard(n), *(extra or [])]
    return CacheEntry(compile_guards(guards), compile_fetch([X]), lambda x: ("entry", n), tag)


def test_lookup_finds_matching_entry_and_runs_it() -> None:
    cache = CodeCache("f", "m.py", 1)
    cache.add(entry_for(3))
    cache.add(entry_for(4))
    assert [e.compiled(None) for e in cache.entries] == [("entry", 4), ("entry", 3)]
    found = cache.lookup({"x": np.zeros(3)}, {}, None)
    assert found is not None
    assert found.run({"x": np.zeros(3)}, {}, None) == ("entry", 3)
    assert cache.lookup({"x": np.zeros(5)}, {}, None) is None


def test_tags_separate_entries_and_limits() -> None:
    cache = CodeCache("f", "m.py", 1, size_limit=2)
    cache.add(entry_for(3, tag="eager"))
    cache.add(entry_for(4, tag="eager"))
    cache.add(entry_for(3, tag="other"))
    assert cache.lookup({"x": np.zeros(4)}, {}, None, "other") is None
    assert cache.is_full("eager")
    assert not cache.is_full("other")
    assert not cache.is_full("eager", limit=3)


def test_recompile_reasons_name_each_entry() -> None:
    cache = CodeCache("f", "m.py", 7)
    cache.add(entry_for(3))
    cache.add(entry_for(4))
    reason = cache.record_recompile({"x": np.zeros(5)}, {}, None)
    assert reason.failures == (
        "L['x'].shape[0]: expected 4, got 5",
        "L['x'].shape[0]: expected 3, got 5",
    )
    assert cache.recompile_reasons == [reason]
    text = str(reason)
    assert text.splitlines()[0] == "Recompiling function f in m.py:7"
    assert "- entry 1: L['x'].shape[0]: expected 3, got 5" in text


def test_unsafe_lookup_checks_only_differentiating_guards() -> None:
    common = Guard(GuardKind.EQUALS_MATCH, LocalSource("n"), 1)
    cache = CodeCache("f", "m.py", 1)
    cache.add(entry_for(3, extra=[common]))
    L_wrong_n = {"x": np.zeros(3), "n": 2}
    assert cache.lookup(L_wrong_n, {}, None) is None
    # One entry: nothing is checked at all.
    assert cache.lookup(L_wrong_n, {}, None, skip_guards_unsafe=True) is cache.entries[0]
    cache.add(entry_for(4, extra=[common]))
    # Two entries: the shared guard on n is skipped, the shape still picks the entry.
    found = cache.lookup({"x": np.zeros(3), "n": 2}, {}, None, skip_guards_unsafe=True)
    assert found is not None
    assert found.compiled(None) == ("entry", 3)
    found = cache.lookup({"x": np.zeros(4), "n": 2}, {}, None, skip_guards_unsafe=True)
    assert found is not None
    assert found.compiled(None) == ("entry", 4)


def test_differentiating_guards() -> None:
    a = Guard(GuardKind.EQUALS_MATCH, LocalSource("n"), 1)
    b3, b4 = shape_guard(3), shape_guard(4)
    assert differentiating_guards([[a, b3], [a, b4]]) == [(b3,), (b4,)]
    assert differentiating_guards([[a, b3]]) == [()]
    assert differentiating_guards([]) == []
    unhashable = Guard(GuardKind.DICT_KEYS, LocalSource("d"), ["k"])
    assert differentiating_guards([[unhashable], [unhashable]]) == [(), ()]


def test_clear_forgets_everything() -> None:
    cache = CodeCache("f", "m.py", 1)
    cache.add(entry_for(3))
    cache.record_recompile({"x": np.zeros(2)}, {}, None)
    cache.eager_reason = "unsupported"
    cache.limit_warned = True
    cache.clear()
    assert cache.entries == []
    assert cache.recompile_reasons == []
    assert cache.eager_reason is None
    assert not cache.limit_warned


def test_registry_is_per_code_object() -> None:
    def make() -> Any:
        def f() -> int:
            return 1

        return f

    f1, f2 = make(), make()
    assert cache_for(f1.__code__) is cache_for(f2.__code__)
    assert cache_for(f1.__code__) is not cache_for(test_registry_is_per_code_object.__code__)
    cache = cache_for(f1.__code__)
    assert cache.name.endswith("make.<locals>.f")
    assert cache in all_caches()
    cache.add(entry_for(1))
    clear_caches()
    assert cache.entries == []


def test_recompile_reason_str() -> None:
    reason = RecompileReason("g", "a.py", 2, ("one", "two"))
    assert str(reason).splitlines()[2:] == ["  - entry 0: one", "  - entry 1: two"]
