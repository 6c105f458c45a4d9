"""Lowering and C generation without sympy: the first try of a cache miss in a fresh process.

`import sympy` is about 0.3 s of CPU, a third of a loop's cold first call. Most graphs need
nothing of it: their sizes are ints and a light capture's `AffineSize` values, and their
loop indices are affine (`s0 - i0 - 1`, `64*x0 + x1`). `light_first` lowers and generates
such a graph inside `numpile_guards.light_sizes()`: the loop variables are `AffineSize`
symbols (`index.loop_var`), index arithmetic stays affine, and `index.c_index` prints it as
sympy's C printer would. Every inductor module reads sympy through `sympy` below, which
imports it on first use and, on a light try, raises `NeedsSympy` instead: any site that needs
sympy (a product of symbols, `FloorDiv`, `ModularIndexing`, a dynamic shape's stride symbol)
ends the try, and the graph is lowered again with sympy sizes. A case not handled costs
time, never different code: both ways generate the same C (`test_inductor_light_lowering`).

    >>> light_first(lambda graph, light: light, "g", convert=lambda g: g)
    True
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from numpile_guards import NeedsSympy, light_active, light_sizes
from numpile_runtime import count

__all__ = ["light_first", "sympy"]

log = logging.getLogger("numpile.inductor.light")

T = TypeVar("T")
G = TypeVar("G")


class _LazySympy:
    # The sympy module, imported on first attribute access (not when an inductor module is
    # imported). On a light try it refuses every attribute, whether or not another thread
    # loaded sympy meanwhile: a light lowering takes the same branches in every process.
    def __getattr__(self, name: str) -> Any:
        if light_active():
            raise NeedsSympy(f"sympy.{name} in the inductor (light lowering)")
        import sympy as module

        return getattr(module, name)


sympy: Any = _LazySympy()


def light_first(
    build: Callable[[G, bool], T], graph: G, *, convert: Callable[[G], G], light: bool = True
) -> T:
    """`build(graph, True)` inside `light_sizes()` where `light`; where that needs sympy (or
    `light` is False), `build(convert(graph), False)`.

    `convert` is `numpile_capture.sympy_sizes` for a graph: the sympy way's sizes. `build`
    must leave no state behind when it is stopped half way (it runs again from the start).
    A light try inside a light capture (a loop body compiled during capture) is not made.

    >>> light_first(lambda g, light: (g, light), "g", convert=lambda g: g + "'", light=False)
    ("g'", False)
    """
    if light and not light_active():
        try:
            with light_sizes():
                return build(graph, True)
        except NeedsSympy as needs:
            count("inductor_light_lowering_fallback")
            log.debug("light lowering needs sympy (%s): lowering again with sympy", needs)
    return build(convert(graph), False)
