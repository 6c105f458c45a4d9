"""The dispatch epoch: what advances it, and the hit check a cache gives for a found entry."""

from __future__ import annotations

from typing import Any

import numpy as np

from numpile_guards import (
    EPOCH,
    ArraySpec,
    CacheEntry,
    CodeCache,
    Guard,
    GuardKind,
    LocalSource,
    advance_epoch,
    clear_caches,
    compile_fetch,
    compile_guards,
)

X = LocalSource("x")


def entry_for(n: int, tag: Any = None) -> CacheEntry:
    spec = ArraySpec(np.ndarray, np.dtype("float64"), (n,), (8,))
    check = compile_guards([Guard(GuardKind.ARRAY_MATCH, X, spec)])
    return CacheEntry(check, compile_fetch([X]), lambda x: n, tag)


def test_advance_epoch_makes_a_new_current_object() -> None:
    before = EPOCH.current
    advance_epoch()
    assert EPOCH.current is not before


def test_adding_and_clearing_entries_advance_the_epoch() -> None:
    cache = CodeCache("f", "m.py", 1)
    before = EPOCH.current
    cache.add(entry_for(3))
    after_add = EPOCH.current
    assert after_add is not before
    cache.clear()
    assert EPOCH.current is not after_add
    after_clear = EPOCH.current
    clear_caches()
    assert EPOCH.current is not after_clear


def test_lookups_leave_the_epoch_alone() -> None:
    cache = CodeCache("f", "m.py", 1)
    cache.add(entry_for(3))
    before = EPOCH.current
    assert cache.lookup({"x": np.zeros(3)}, {}, None) is not None
    assert cache.lookup({"x": np.zeros(4)}, {}, None) is None
    assert cache.lookup({"x": np.zeros(4)}, {}, None, skip_guards_unsafe=True) is not None
    assert EPOCH.current is before


def test_hit_check_is_the_entrys_guards() -> None:
    cache = CodeCache("f", "m.py", 1)
    entry = entry_for(3)
    cache.add(entry)
    check = cache.hit_check(entry)
    assert check({"x": np.zeros(3)}, {}, None)
    assert not check({"x": np.zeros(4)}, {}, None)


def test_hit_check_of_a_lone_entry_under_skip_guards_unsafe_accepts_anything() -> None:
    # As `lookup` does: a lone entry for its tag is returned without checking anything.
    cache = CodeCache("f", "m.py", 1)
    entry = entry_for(3, tag="a")
    cache.add(entry)
    cache.add(entry_for(5, tag="b"))
    assert cache.hit_check(entry, skip_guards_unsafe=True)({"x": np.zeros(4)}, {}, None)


def test_hit_check_among_several_entries_under_skip_guards_unsafe_checks_the_guards() -> None:
    # Among several, the entry's full guards: stricter than the differing ones, never wrong.
    cache = CodeCache("f", "m.py", 1)
    entry = entry_for(3)
    cache.add(entry)
    cache.add(entry_for(4))
    check = cache.hit_check(entry, skip_guards_unsafe=True)
    assert check({"x": np.zeros(3)}, {}, None)
    assert not check({"x": np.zeros(4)}, {}, None)
