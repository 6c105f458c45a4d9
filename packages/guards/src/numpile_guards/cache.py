"""Per-code-object caches of compiled entries, and the registry of all of them.

A `CodeCache` belongs to one code object (all closures and copies of a
function share it; guards on `F` tell them apart). It holds ordered
`CacheEntry`s (newest first), each a compiled guard check, a compiled input
fetch and the compiled callable, plus the recorded reasons of every
recompile and the flags that make the function run eagerly.

    >>> cache = cache_for(fn.__code__)  # doctest: +SKIP
    >>> entry = cache.lookup(L, G, F, tag="eager")  # doctest: +SKIP

An entry carries a `tag` (the backend and options it was compiled for);
lookups only consider entries with an equal tag, and the size limit counts
entries per tag, so compiling one function with two backends is not a
recompile.
"""

from __future__ import annotations

import logging
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .check import CheckFn, FetchFn, GuardCheck, compile_guards
from .epoch import advance_epoch
from .guard import ArraySpec, Guard, GuardKind
from .reasons import RecompileReason
from .source import Source

log = logging.getLogger("numpile.guards")

DEFAULT_SIZE_LIMIT = 8


@attrs.frozen
class CacheEntry:
    """One compiled version of a function, valid while `check` passes.

    `fetch(L, G, F)` returns the compiled callable's inputs as a tuple;
    `compiled(*inputs)` runs it. `metadata` is free-form (graph, backend name).

        >>> entry = CacheEntry(check, fetch, compiled, tag="eager")  # doctest: +SKIP
    """

    check: GuardCheck
    fetch: FetchFn = attrs.field(repr=False)
    compiled: Callable[..., Any] = attrs.field(repr=False)
    tag: Any = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    # NOTE: when set (a graph break), the dispatcher calls `tail(*inputs)` on a hit and
    # finishes the tail calls it returns itself: one Python frame less per recursion level
    # than calling `compiled`, which does the same in a frame of its own.
    tail: Callable[..., Any] | None = attrs.field(default=None, repr=False)
    # NOTE: the sources `fetch` reads, in order, when known: the dispatcher then fuses the
    # check, the fetch and the call into one function (`compile_entry`).
    inputs: tuple[Source, ...] | None = attrs.field(default=None, repr=False)

    def run(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> Any:
        """Fetch the inputs and call the compiled callable."""
        return self.compiled(*self.fetch(L, G, F))


def _expected_key(guard: Guard) -> Any:
    # What makes two guards "the same check": kind, source and expected value.
    expected = guard.expected
    if isinstance(expected, ArraySpec):
        return (expected.type, str(expected.dtype), expected.shape, expected.strides)
    if guard.kind is GuardKind.SHAPE_RELATION:
        return ("relation", str(expected))
    try:
        hash(expected)
    except TypeError:
        return ("repr", type(expected), repr(expected))
    return ("value", type(expected), expected)


def _guard_key(guard: Guard) -> tuple[Any, ...]:
    return (guard.kind, guard.source.name, _expected_key(guard))


def differentiating_guards(guard_lists: Sequence[Sequence[Guard]]) -> list[tuple[Guard, ...]]:
    """For each list, the guards that are not shared by every list.

    Checking only these tells the entries apart, assuming the inputs are one
    of the kinds already seen (the `skip_guard_eval_unsafe` contract).

        >>> a, b, c = guards  # doctest: +SKIP
        >>> differentiating_guards([[a, b], [a, c]])  # doctest: +SKIP
        [(b,), (c,)]
    """
    if not guard_lists:
        return []
    keyed = [{_guard_key(guard): guard for guard in guards} for guards in guard_lists]
    common = set(keyed[0])
    for keys in keyed[1:]:
        common &= set(keys)
    return [tuple(guard for key, guard in keys.items() if key not in common) for keys in keyed]


def _accept(L: dict[str, Any], G: dict[str, Any], F: Any) -> bool:
    # The hit check of a lone entry under `skip_guards_unsafe`.
    return True


class CodeCache:
    """The compiled entries of one code object, newest first, with recompile bookkeeping.

    `eager_reason` set means "run this function eagerly from now on" (it
    could not be captured); `limit_warned` records that the size-limit
    warning was given. `clear()` forgets everything.

        >>> cache = CodeCache("f", "model.py", 3)
        >>> cache.lookup({}, {}, None) is None
        True
    """

    def __init__(
        self, name: str, filename: str, lineno: int, *, size_limit: int = DEFAULT_SIZE_LIMIT
    ) -> None:
        self.name = name
        self.filename = filename
        self.lineno = lineno
        self.size_limit = size_limit
        # NOTE: newest first, as a new entry is the most likely to match the next call.
        self.entries: list[CacheEntry] = []
        self.recompile_reasons: list[RecompileReason] = []
        self.eager_reason: str | None = None
        self.limit_warned = False
        self._diff_checks: dict[Any, list[tuple[GuardCheck, CacheEntry]]] = {}

    def __repr__(self) -> str:
        where = f"{self.filename}:{self.lineno}"
        return f"CodeCache({self.name} at {where}, {len(self.entries)} entries)"

    def entries_for(self, tag: Any = None) -> list[CacheEntry]:
        """The entries compiled for `tag`, newest first."""
        return [entry for entry in self.entries if entry.tag == tag]

    def lookup(
        self,
        L: dict[str, Any],
        G: dict[str, Any],
        F: Any,
        tag: Any = None,
        *,
        skip_guards_unsafe: bool = False,
    ) -> CacheEntry | None:
        """The first entry for `tag` whose guards pass, or None.

        With `skip_guards_unsafe`, a lone entry is returned without checking
        anything, and among several only the guards that differ between them
        are checked (unsafe: assumes no new kind of input arrives).
        """
        if skip_guards_unsafe:
            return self._lookup_unsafe(L, G, F, tag)
        for entry in self.entries:
            # NOTE: `is` first: the dispatcher passes the very tag object it stored.
            if (entry.tag is tag or entry.tag == tag) and entry.check.fn(L, G, F):
                return entry
        return None

    def _lookup_unsafe(
        self, L: dict[str, Any], G: dict[str, Any], F: Any, tag: Any
    ) -> CacheEntry | None:
        checks = self._diff_checks.get(tag)
        if checks is None:
            candidates = self.entries_for(tag)
            diffs = differentiating_guards([entry.check.guards for entry in candidates])
            checks = [
                (compile_guards(guards), entry)
                for guards, entry in zip(diffs, candidates, strict=True)
            ]
            self._diff_checks[tag] = checks
        if len(checks) == 1:
            return checks[0][1]
        for check, entry in checks:
            if check.fn(L, G, F):
                return entry
        return None

    def hit_check(self, entry: CacheEntry, *, skip_guards_unsafe: bool = False) -> CheckFn:
        """What decides that `entry`, found by `lookup`, still fits the next call (checked
        first on that call): its guards, or, with `skip_guards_unsafe` and `entry` alone for
        its tag, nothing (as `lookup` itself would check nothing)."""
        if skip_guards_unsafe and len(self.entries_for(entry.tag)) == 1:
            return _accept
        return entry.check.fn

    def hit_guards(
        self, entry: CacheEntry, *, skip_guards_unsafe: bool = False
    ) -> tuple[Guard, ...]:
        """The guards `hit_check` checks, in its order (none where it checks nothing).

        >>> CodeCache("f", "m.py", 1).hit_guards(entry)  # doctest: +SKIP
        (Guard(...),)
        """
        if skip_guards_unsafe and len(self.entries_for(entry.tag)) == 1:
            return ()
        return entry.check.guards

    def add(self, entry: CacheEntry) -> None:
        """Put `entry` first (newest)."""
        # NOTE: a new list, swapped in whole, so a lookup running on another thread
        # iterates a consistent snapshot.
        self.entries = [entry, *self.entries]
        self._diff_checks.clear()
        advance_epoch()

    def is_full(self, tag: Any = None, limit: int | None = None) -> bool:
        """True when `tag` already has `limit` (default `size_limit`) entries."""
        limit = self.size_limit if limit is None else limit
        return len(self.entries_for(tag)) >= limit

    def failures(
        self, L: dict[str, Any], G: dict[str, Any], F: Any, tag: Any = None
    ) -> tuple[str, ...]:
        """The first failing guard of each entry for `tag`, newest first (slow path)."""
        texts: list[str] = []
        for entry in self.entries_for(tag):
            text = entry.check.failure(L, G, F)
            texts.append("all guards pass" if text is None else text)
        return tuple(texts)

    def record_recompile(
        self, L: dict[str, Any], G: dict[str, Any], F: Any, tag: Any = None
    ) -> RecompileReason:
        """Record (and return) why the entries for `tag` were all rejected on this call."""
        reason = RecompileReason(self.name, self.filename, self.lineno, self.failures(L, G, F, tag))
        self.recompile_reasons.append(reason)
        return reason

    def clear(self) -> None:
        """Forget every entry, reason and flag."""
        self.entries = []
        self.recompile_reasons.clear()
        self.eager_reason = None
        self.limit_warned = False
        self._diff_checks.clear()
        advance_epoch()


# NOTE: the registry of every CodeCache, keyed weakly by code object so a function that
# goes away takes its cache with it; `clear_caches` (numpile.reset) walks it.
_CACHES: weakref.WeakKeyDictionary[types.CodeType, CodeCache] = weakref.WeakKeyDictionary()


def cache_for(code: types.CodeType) -> CodeCache:
    """The `CodeCache` of `code`, created on first use.

    >>> cache_for(f.__code__) is cache_for(f.__code__)  # doctest: +SKIP
    True
    """
    cache = _CACHES.get(code)
    if cache is None:
        cache = CodeCache(code.co_qualname, code.co_filename, code.co_firstlineno)
        _CACHES[code] = cache
    return cache


def all_caches() -> list[CodeCache]:
    """Every live `CodeCache`, in creation order."""
    return list(_CACHES.values())


def clear_caches() -> None:
    """Clear every `CodeCache` (entries, reasons, eager flags).

    >>> clear_caches()
    """
    for cache in list(_CACHES.values()):
        cache.clear()
    advance_epoch()
    log.debug("cleared %d code caches", len(_CACHES))
