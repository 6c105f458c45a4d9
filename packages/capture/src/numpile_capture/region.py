"""A thread's nesting depth in a region of code: compiled regions, `disable`d regions.

>>> region = ThreadRegion()
>>> region.active
False
>>> with region.entered():
...     with region.entered():
...         region.depth
2
>>> region.active
False
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from numpile_guards import resume_gates, suspend_gates

__all__ = ["PLAIN_CALLS", "PlainCalls", "ThreadRegion"]


class ThreadRegion(threading.local):
    """How deep the current thread is inside a region (each thread counts its own).

    `entered()` is a context manager that nests; `active` is True inside at least one.
    """

    depth: int = 0

    @property
    def active(self) -> bool:
        """Whether the current thread is inside the region."""
        return self.depth > 0

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Count the enclosed code as inside the region, restoring the depth on exit."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1


class PlainCalls(ThreadRegion):
    """The region where compiled functions run as plain Python; while any thread is in it,
    the call gates (the hit path in C) decline, so every call asks its own thread's depth.

    Enter with `enter()` / `leave()` or `entered()`, never by writing `depth`.

    >>> region = PlainCalls()
    >>> region.enter(); region.depth
    1
    >>> region.leave(); region.active
    False
    """

    def enter(self) -> None:
        """One level deeper on this thread."""
        suspend_gates()
        self.depth += 1

    def leave(self) -> None:
        """One level out on this thread."""
        self.depth -= 1
        resume_gates()

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """As `ThreadRegion.entered`, with the gates suspended."""
        self.enter()
        try:
            yield
        finally:
            self.leave()


# NOTE: per thread, how deep it is in code where compiled functions run as plain Python:
# a capture in progress, a function under `disable(recursive=True)`. The dispatcher's fast
# path reads this one counter instead of asking each region.
PLAIN_CALLS = PlainCalls()
