"""A loop body compiled when something first needs it: `LazyBody`.

A `for_loop` whose body does array work has two ways to run: the C loop of the graph's
module calls the body's kernels itself, or a host loop calls the body, compiled as a
module of its own, once per index. Which one the C code generator takes is known only
once the graph's module is generated, so the body is not compiled before then: the
backend compiles the bodies of the loops left to a host loop (`force`), and a body whose
loop runs as C is compiled only if its C loop ever hands an iteration back to the host
loop (another dtype, a failed check), on that first call. A cold compile of a loop that
runs as C thus builds one module, not two.

    >>> body = LazyBody(lambda: (lambda *args: sum(args)), fallback=lambda: print)
    >>> body.compiled
    False
    >>> body(1, 2)
    3
    >>> body.compiled
    True
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpile_runtime as rt

__all__ = ["LazyBody"]

log = logging.getLogger("numpile.inductor.loops")


class LazyBody:
    """A body's callable, compiled on `force()` or on its first call.

    `compile` builds the body (its errors propagate from `force()`, as a compile's do);
    `fallback` gives a callable that runs the body op by op, used when a compile that a
    call started fails: a call never raises a compile error that the compile step would
    have raised before the graph ran.
    """

    def __init__(
        self,
        compile: Callable[[], Callable[..., Any]],
        *,
        fallback: Callable[[], Callable[..., Any]],
    ) -> None:
        self._compile = compile
        self._fallback = fallback
        self._fn: Callable[..., Any] | None = None
        self._lock = rt.new_lock()

    @property
    def compiled(self) -> bool:
        """Whether the body's callable is made (compiled, or its op-by-op fallback)."""
        return self._fn is not None

    def force(self) -> Callable[..., Any]:
        """The compiled body, compiling it now if no call has yet; raises what the compile
        raises."""
        fn = self._fn
        if fn is not None:
            return fn
        with self._lock:
            if self._fn is None:
                self._fn = self._compile()
            return self._fn

    def __call__(self, *args: Any) -> Any:
        fn = self._fn
        if fn is None:
            fn = self._late()
        return fn(*args)

    def _late(self) -> Callable[..., Any]:
        try:
            return self.force()
        except Exception as error:  # any compile failure: the body runs op by op
            log.warning("a loop body did not compile (%s); it runs op by op with NumPy", error)
            with self._lock:
                if self._fn is None:
                    self._fn = self._fallback()
                return self._fn
