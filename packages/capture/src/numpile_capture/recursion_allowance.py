"""The recursion allowance: Python's recursion limit widened by the frames numpile adds.

A compiled function that calls itself graph-breaks at the call, so each level of the user's
recursion runs through numpile's own frames as well: the dispatcher's `__call__`,
`_dispatch` on a slow path, and the break runner's `run_tail`. Left alone, those cost 2 to 3
of the limit's units per level where eager costs 1, and a recursion that eager runs 990
levels deep would fail at about 330. The break runner widens the limit by `units_at(depth)`
while it runs the user's break code and narrows it back after, so the user's recursion meets
the limit about where eager does. Shallow breaks, the common case, pay nothing: a change of
the limit costs about a microsecond, so the first `DEEP` nested levels are granted at once
when the nesting reaches `DEEP`, and each level after that its own units. Changes are
relative and made under a lock, so threads that recurse at the same time leave the limit
where they found it.

    >>> units_at(0), units_at(DEEP) == (DEEP + 1) * NUMPILE_UNITS
    (0, True)
    >>> units_at(DEEP + 1) == NUMPILE_UNITS
    True
    >>> before = sys.getrecursionlimit()
    >>> widen(units_at(DEEP))
    >>> sys.getrecursionlimit() - before == (DEEP + 1) * NUMPILE_UNITS
    True
    >>> narrow(units_at(DEEP))
    >>> sys.getrecursionlimit() == before
    True
"""

from __future__ import annotations

import sys

from numpile_runtime import new_lock

__all__ = ["DEEP", "NUMPILE_UNITS", "narrow", "units_at", "widen"]

# NOTE: the limit's units numpile's frames take per compiled recursion level on the fast
# path: `__call__` (1: the break function calls it as a bound method, see `break_runner`) and
# `run_tail` (1). A slow-path level also runs `_dispatch`, and a callee called another way
# (`obj.method(...)`) goes through `tp_call`, which 3.11 counts once more: not counted, as
# granting more than numpile takes would let a runaway recursion outgrow the C stack before
# the limit stops it.
NUMPILE_UNITS = 2

# NOTE: the nesting of break functions in one thread from which the limit is widened: a
# recursion reaching it gets the levels below it at once, then each level its own.
DEEP = 16

_LOCK = new_lock()

# NOTE: units a `narrow` could not take back (the stack was deeper than the narrower limit
# then: the user lowered it meanwhile); the next `narrow` takes them back first.
_owed = 0


def units_at(depth: int) -> int:
    """The units to widen the limit by for a break function run at nesting `depth`."""
    if depth < DEEP:
        return 0
    return NUMPILE_UNITS if depth > DEEP else (DEEP + 1) * NUMPILE_UNITS


def widen(units: int) -> None:
    """Raise Python's recursion limit by `units`."""
    with _LOCK:
        sys.setrecursionlimit(sys.getrecursionlimit() + units)


def narrow(units: int) -> None:
    """Take back a `widen(units)` (and any earlier one that could not be taken back)."""
    global _owed
    with _LOCK:
        units += _owed
        limit = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(max(limit - units, 1))
        except RecursionError:
            _owed = units  # too deep for the narrower limit now: try again next time
        else:
            _owed = 0
