"""Capture first without sympy, where a process has not loaded it: the warm start's cut.

`import sympy` is about 0.3 s, most of a warm start (a new process whose kernel cache
holds the graph) of any function with a symbolic size or a loop index that its body
reads. Where sympy is not loaded yet, `capture_light_first` runs the capture inside
`numpile_guards.light_sizes()`: sizes and indices are `AffineSize` values, relations are
decided with integer arithmetic, and the graph prints as the sympy one would (the same
kernel cache key). Where the capture needs sympy (`NeedsSympy`: a guard the ranges do not
decide, `floor`, `Max`, a product of sizes, any site not taught the light path), it runs
again the sympy way, from the start, with the loop records of the first run dropped (so
does a light capture during which another thread loaded sympy). Only
backends that say `takes_light_sizes` (the inductor: see its `light_lowering`) see a
light graph; the dispatcher hands every other backend `sympy_sizes(graph)`.

    >>> capture_light_first(lambda: "captured")
    'captured'
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from numpile_guards import NeedsSympy, light_active, light_sizes

from .capture_events import forget_loops_after, loops_recorded

__all__ = ["capture_light_first", "takes_light_sizes"]

log = logging.getLogger("numpile.capture.light")

T = TypeVar("T")


def capture_light_first(capture: Callable[[], T]) -> T:
    """`capture()` as a light capture where sympy is not loaded (and this thread is not in
    one already: a nested capture follows the outer one), else, or where it needs sympy,
    `capture()` as is."""
    if "sympy" in sys.modules or light_active():
        return capture()
    recorded = loops_recorded()
    try:
        with light_sizes():
            result = capture()
        if "sympy" not in sys.modules:
            return result
        # Another thread (a background build) loaded sympy meanwhile: this thread's sites
        # that import it were not refused, so the light graph is not trusted.
        reason = "another thread loaded sympy during the capture"
    except NeedsSympy as needs:
        reason = str(needs)
    log.debug("light capture needs sympy (%s): capturing again with sympy", reason)
    forget_loops_after(recorded)
    return capture()


def takes_light_sizes(backend_fn: Any) -> bool:
    """Whether a backend takes a light capture's graph as is (`takes_light_sizes = True` on
    it): it converts with `sympy_sizes` before it lowers or runs the graph.

    >>> takes_light_sizes(print)
    False
    """
    return getattr(backend_fn, "takes_light_sizes", False) is True
