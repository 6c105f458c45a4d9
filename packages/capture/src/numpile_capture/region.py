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

__all__ = ["PLAIN_CALLS", "ThreadRegion"]


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


# NOTE: per thread, how deep it is in code where compiled functions run as plain Python:
# a capture in progress, a function under `disable(recursive=True)`. The dispatcher's fast
# path reads this one counter instead of asking each region.
PLAIN_CALLS = ThreadRegion()
