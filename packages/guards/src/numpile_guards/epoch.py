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

The call gates (the hit path in C, `numpile_runtime.call_gate`) read the same facts from
`VALIDITY`, two 64-bit words they read without calling into Python: `[0]` the generation,
advanced with the epoch, and `[1]` how many regions are open, in any thread, where
compiled functions run as plain Python (`suspend_gates`): while any is, every gate
declines and calls take the Python path, which asks the calling thread.

    >>> generation = VALIDITY[0]
    >>> advance_epoch()
    >>> VALIDITY[0] == generation + 1
    True
"""

from __future__ import annotations

import array

from numpile_runtime import new_lock

__all__ = [
    "EPOCH",
    "VALIDITY",
    "DispatchEpoch",
    "advance_epoch",
    "gate_generation",
    "resume_gates",
    "suspend_gates",
]


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

# NOTE: the words call gates read (see the module doc); written under `_WORDS_LOCK` only
# (read-modify-write of an array item is not atomic between threads), read without it.
VALIDITY = array.array("q", [0, 0])
_WORDS_LOCK = new_lock()


def advance_epoch() -> None:
    """Start a new epoch: every remembered hit is looked up again on its next call.

    >>> advance_epoch()
    """
    # NOTE: the epoch object first, then the generation: a gate armed by `gate_generation`
    # after a lookup in the old epoch either fails its epoch test or holds the old number.
    EPOCH.current = object()
    with _WORDS_LOCK:
        VALIDITY[0] += 1


def gate_generation(epoch: object) -> int | None:
    """The generation to arm a gate with for a hit found in `epoch` (read before the
    lookup), or None when the epoch has moved on since (the hit may be stale).

    >>> gate_generation(EPOCH.current) == VALIDITY[0]
    True
    """
    generation = VALIDITY[0]
    if epoch is not EPOCH.current:
        return None
    return generation


def suspend_gates() -> None:
    """Open a region where compiled functions run as plain Python: gates decline until
    the matching `resume_gates()` (counted, over all threads).

    >>> suspend_gates(); resume_gates()
    """
    with _WORDS_LOCK:
        VALIDITY[1] += 1


def resume_gates() -> None:
    """Close a region `suspend_gates()` opened.

    >>> suspend_gates(); resume_gates(); VALIDITY[1] >= 0
    True
    """
    with _WORDS_LOCK:
        VALIDITY[1] -= 1
