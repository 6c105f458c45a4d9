"""The dispatch epoch: one object that changes whenever a remembered cache hit may go stale.

A compiled function remembers the entry its last call hit, with the epoch it was found
in, and checks that entry's guards first on the next call. The remembered hit is used
only while `EPOCH.current` is still the object it was found in: a single `is`
comparison. Whatever could change what a lookup returns advances the epoch: an entry
added to or cleared from any `CodeCache`, and, from the layers above, a new stance.

    >>> before = EPOCH.current
    >>> advance_epoch()
    >>> EPOCH.current is before
    False
"""

from __future__ import annotations

__all__ = ["EPOCH", "DispatchEpoch", "advance_epoch"]


class DispatchEpoch:
    """Holds the current epoch object; `current` is read on every compiled call.

    >>> DispatchEpoch().current is not None
    True
    """

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: object = object()


# NOTE: the process-wide epoch (a module global by design: every thread sees one stance
# and one set of caches). Replaced, never mutated, so a reader needs no lock.
EPOCH = DispatchEpoch()


def advance_epoch() -> None:
    """Start a new epoch: every remembered hit is looked up again on its next call.

    >>> advance_epoch()
    """
    EPOCH.current = object()
