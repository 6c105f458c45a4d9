"""Guard filters: the `guard_filter_fn` compile option and its ready-made helpers.

`compile(fn, options={"guard_filter_fn": f})` hands `f` one `GuardFilterEntry`
per guard of each new entry, before the guards are compiled; `f` returns one
bool per entry, True to keep that guard. Every guard dropped is an assumption
no longer checked: a call that breaks it runs the compiled code anyway, so the
helpers are named `..._unsafe`, as in `torch.compiler`.

    >>> import numpy as np
    >>> guards = [Guard(GuardKind.ID_MATCH, GlobalSource("np"), np)]
    >>> filter_guards(guards, skip_guard_on_globals_unsafe)
    ()
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .guard import Guard, GuardKind
from .source import AttrSource, GlobalSource, ItemSource, Source

log = logging.getLogger("numpile.guards")

GuardFilterFn = Callable[[list["GuardFilterEntry"]], Sequence[bool]]


def _root(source: Source) -> Source:
    while isinstance(source, AttrSource | ItemSource):
        source = source.base
    return source


@attrs.frozen
class GuardFilterEntry:
    """What a guard filter sees of one guard.

    `name` is the source's expression (`L['x']`, `G['scale']`), `kind` the
    guard kind's name (`"ARRAY_MATCH"`), `value` what the guard expects,
    `is_global` whether the value is read from the function's globals.

        >>> from numpile_guards import LocalSource
        >>> entry = GuardFilterEntry.of(Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int))
        >>> entry.name, entry.kind, entry.is_global
        ("L['n']", 'TYPE_MATCH', False)
    """

    name: str
    source: Source
    kind: str
    value: Any = attrs.field(eq=False)
    is_global: bool
    guard: Guard = attrs.field(repr=False)

    @classmethod
    def of(cls, guard: Guard) -> GuardFilterEntry:
        """The entry describing `guard`."""
        is_global = isinstance(_root(guard.source), GlobalSource)
        return cls(
            guard.source.name, guard.source, guard.kind.name, guard.expected, is_global, guard
        )


def filter_guards(guards: Sequence[Guard], fn: GuardFilterFn | None) -> tuple[Guard, ...]:
    """The guards `fn` keeps (all of them when `fn` is None).

    `fn` must return one bool per guard; anything else is a TypeError naming it.

        >>> from numpile_guards import GlobalSource
        >>> guards = [Guard(GuardKind.EQUALS_MATCH, GlobalSource("scale"), 2.0)]
        >>> filter_guards(guards, lambda entries: [True] * len(entries)) == tuple(guards)
        True
    """
    if fn is None:
        return tuple(guards)
    entries = [GuardFilterEntry.of(guard) for guard in guards]
    keep = list(fn(entries))
    if len(keep) != len(entries) or not all(isinstance(flag, bool) for flag in keep):
        raise TypeError(
            f"guard_filter_fn {getattr(fn, '__qualname__', fn)!r} must return one bool per "
            f"guard entry ({len(entries)} entries), got {keep!r}"
        )
    kept = tuple(guard for guard, flag in zip(guards, keep, strict=True) if flag)
    dropped = [str(guard) for guard, flag in zip(guards, keep, strict=True) if not flag]
    if dropped:
        log.debug("guard_filter_fn dropped %d guard(s): %s", len(dropped), "; ".join(dropped))
    return kept


def split_guard_filter(
    options: dict[str, Any] | None,
) -> tuple[GuardFilterFn | None, dict[str, Any] | None]:
    """`options` without its "guard_filter_fn" (None when nothing else is left), and that fn.

    A guard filter belongs to the dispatcher, not to the backend. Raises
    TypeError when it is not callable.

        >>> split_guard_filter({"guard_filter_fn": skip_all_guards_unsafe})
        (<function skip_all_guards_unsafe at ...>, None)
    """
    if not options or "guard_filter_fn" not in options:
        return None, options
    rest = {key: value for key, value in options.items() if key != "guard_filter_fn"}
    fn = options["guard_filter_fn"]
    if fn is not None and not callable(fn):
        raise TypeError(f"options['guard_filter_fn'] must be callable, got {fn!r}")
    return fn, (rest or None)


def skip_guard_on_globals_unsafe(entries: list[GuardFilterEntry]) -> list[bool]:
    """Drop every guard on a global (modules, functions, constants read through `G`).

    Unsafe: rebinding a global the function reads is no longer noticed.

        >>> compile(fn, options={"guard_filter_fn": skip_guard_on_globals_unsafe})  # doctest: +SKIP
    """
    return [not entry.is_global for entry in entries]


def keep_array_guards_unsafe(entries: list[GuardFilterEntry]) -> list[bool]:
    """Keep only the guards on arrays (type, dtype, shape, strides, shape relations).

    Unsafe: Python scalars, containers and globals are assumed never to change.

        >>> compile(fn, options={"guard_filter_fn": keep_array_guards_unsafe})  # doctest: +SKIP
    """
    array_kinds = (GuardKind.ARRAY_MATCH.name, GuardKind.SHAPE_RELATION.name)
    return [entry.kind in array_kinds for entry in entries]


def skip_all_guards_unsafe(entries: list[GuardFilterEntry]) -> list[bool]:
    """Drop every guard: the first compiled entry serves every later call.

    Unsafe: only for functions always called with the same kind of inputs.

        >>> compile(fn, options={"guard_filter_fn": skip_all_guards_unsafe})  # doctest: +SKIP
    """
    return [False for _ in entries]
