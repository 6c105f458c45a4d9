"""Run-time sizes of a Triton call with dynamic shapes: bound from arrays, shapes evaluated.

A call compiled with `dynamic=True` learns its sizes (`s0`, `s1`, ...) from the shapes of
its inputs and extern results, then evaluates every shape and element count of its kernels
at those values. A loop body does that per iteration, so the work is split: what sympy
computes (a shape's symbols, their names) is done once per compiled call, and a call only
reads ints: `SizeBinding` copies an array's dims into the sizes, `RunTimeShape` looks up
the shape evaluated at the sizes' values (sympy substitutes once per new value).

    >>> import sympy
    >>> s0 = sympy.Symbol("s0", integer=True, positive=True)
    >>> sizes: dict[str, int] = {}
    >>> SizeBinding.of((s0, 3)).bind(np.zeros((5, 3)), sizes)
    >>> RunTimeShape.of((s0 - 2, 2 * s0)).at(sizes)
    (3, 10)
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

__all__ = ["RunTimeShape", "SizeBinding"]

# Evaluated shapes kept per `RunTimeShape`: a caller cycling through more size values
# than this evaluates again with sympy (correct, slower).
_KEPT_VALUES = 256


@attrs.frozen
class SizeBinding:
    """Which dims of a buffer's shape are bare size symbols: (axis, symbol name) pairs.

    >>> SizeBinding.of((3, 4)).axes
    ()
    """

    ndim: int
    axes: tuple[tuple[int, str], ...]

    @classmethod
    def of(cls, shape: tuple[Any, ...]) -> SizeBinding:
        """The binding of `shape`: its dims that are sympy symbols, by name."""
        axes = tuple(
            (axis, str(dim))
            for axis, dim in enumerate(shape)
            if not isinstance(dim, int) and getattr(dim, "is_Symbol", False)
        )
        return cls(len(shape), axes)

    def bind(self, value: Any, sizes: dict[str, int]) -> None:
        """Set each symbol's size from `value`'s shape (nothing when its rank differs)."""
        actual = getattr(value, "shape", None)
        if actual is None or len(actual) != self.ndim:
            return
        for axis, name in self.axes:
            sizes[name] = int(actual[axis])


@attrs.define
class RunTimeShape:
    """A shape of sympy sizes and its values at the size values met so far.

    >>> RunTimeShape.of((5, 6)).at({})
    (5, 6)
    """

    shape: tuple[Any, ...]
    symbols: tuple[str, ...]
    _values: dict[tuple[int, ...], tuple[int, ...]] = attrs.field(factory=dict)

    @classmethod
    def of(cls, shape: tuple[Any, ...]) -> RunTimeShape:
        """The shape with its symbols' names found once (sorted: a deterministic key)."""
        names: set[str] = set()
        for dim in shape:
            if not isinstance(dim, int):
                names.update(str(s) for s in getattr(dim, "free_symbols", ()))
        return cls(tuple(shape), tuple(sorted(names)))

    def at(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """The shape at `sizes` (symbol name -> value), as ints."""
        key = tuple([sizes[name] for name in self.symbols])
        known = self._values.get(key)
        if known is not None:
            return known
        by_name = dict(zip(self.symbols, key, strict=True))
        result = tuple(_substitute(dim, by_name) for dim in self.shape)
        if len(self._values) < _KEPT_VALUES:
            self._values[key] = result
        return result


def _substitute(dim: Any, by_name: dict[str, int]) -> int:
    if isinstance(dim, int | np.integer):
        return int(dim)
    import sympy  # late: only shapes with run-time sizes get here

    expr = sympy.sympify(dim)
    return int(expr.xreplace({s: by_name[str(s)] for s in expr.free_symbols}))
