"""The eager tier: a backend's callable may hand a call back to the user's Python function.

Tiered compilation answers a new graph's first calls before its compiled code exists. A
backend usually does that itself (NumPy runs the graph op by op), but for a graph with
kept loops op by op is 10-100x slower than the Python loop the graph came from. Such a
callable raises `NotCompiledYet` instead, before it reads any input, and the dispatcher
runs the captured function eagerly for that call: the plain Python loop, with eager's
values, warnings and in-place effects.

The dispatcher offers this only where the graph is the whole function (no graph break,
no resume function), so that running the function again is the same as running the
graph: `offer_eager_tier(compiled)` calls the callable's `accept_eager_tier()` when it has
one. A callable never offered the tier must not raise `NotCompiledYet`.

    >>> class Callable:
    ...     eager = False
    ...     def accept_eager_tier(self):
    ...         self.eager = True
    >>> c = Callable()
    >>> offer_eager_tier(c)
    >>> c.eager
    True
"""

from __future__ import annotations

from typing import Any

__all__ = ["NotCompiledYet", "offer_eager_tier"]


class NotCompiledYet(Exception):  # noqa: N818 (a signal between layers, not an error)
    """Raised by a backend's callable that accepted the eager tier: run the function eagerly.

    It is raised before the callable reads or writes any input.

        >>> raise NotCompiledYet("loop graph of f")
        Traceback (most recent call last):
        numpile_capture.eager_tier.NotCompiledYet: loop graph of f
    """


def offer_eager_tier(compiled: Any) -> None:
    """Tell a backend's callable that its caller runs the function eagerly on `NotCompiledYet`."""
    accept = getattr(compiled, "accept_eager_tier", None)
    if accept is not None:
        accept()
