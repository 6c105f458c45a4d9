"""Tiered compilation: a new graph runs op by op with NumPy while its kernels build.

The first call of a new graph would otherwise wait for lowering, code generation and
the C compiler (most of a second on a small graph). With tiering, the inductor returns a
`TieredGraph` when the graph cache misses: its calls run the graph op by op with NumPy
(`run_graph`, tier 0: eager NumPy's results, warnings and in-place effects, from the
user's lines) while `background_build` compiles it; the first call after the build is
done switches to the compiled callable for good (tier 1). A graph cache hit never
tiers: loading a built module takes milliseconds.

A build that fails is handed to `on_failure`, which returns what runs from then on (the
op-by-op path when no compiler exists) or raises the compile error, on this call and
every later one, as a synchronous compile would have raised it on the first.

    >>> fn = TieredGraph(graph, build, on_failure)  # doctest: +SKIP
    >>> fn(x)  # NumPy, op by op, while `build()` runs  # doctest: +SKIP
    >>> fn.wait(); fn.tier  # doctest: +SKIP
    'compiled'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpile_runtime as rt
from numpile_capture import Graph, run_graph

from .background_build import BuildTicket, submit

__all__ = ["TieredGraph"]


class TieredGraph:
    """A graph's callable: NumPy op by op until its background build is done, then compiled.

    `build()` returns the compiled callable (it runs on the background worker);
    `on_failure(error)` returns the callable to use after a failed build, or raises.
    `tier` is "numpy" or "compiled"; `wait()` blocks until the build ended (tests and
    benchmarks that want tier 1 now).
    """

    __slots__ = ("_build", "_compiled", "_graph", "_on_failure", "_ticket")

    def __init__(
        self,
        graph: Graph,
        build: Callable[[], Callable[..., Any]],
        on_failure: Callable[[BaseException], Callable[..., Any]],
    ) -> None:
        self._graph = graph
        self._build = build
        self._on_failure = on_failure
        self._compiled: Callable[..., Any] | None = None
        self._ticket: BuildTicket = submit(build)

    def __call__(self, *args: Any) -> Any:
        compiled = self._compiled
        if compiled is not None:
            return compiled(*args)
        return self._call_tier0(args)

    @property
    def tier(self) -> str:
        """ "compiled" once a call switched (or `wait()` did), else "numpy"."""
        return "numpy" if self._compiled is None else "compiled"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build ends and switch to its result; whether it ended.

        Raises the build's error as a call would (after `on_failure`).
        """
        ticket = self._current_ticket()
        if not ticket.wait(timeout):
            return False
        if ticket.cancelled:  # a reset while it was queued: wait for the new build
            return self.wait(timeout)
        self._switch(ticket)
        return True

    def _current_ticket(self) -> BuildTicket:
        # A build dropped by `numpile.reset()`, or left pending by a parent process before a
        # fork, is submitted again: whoever still calls this graph still wants it compiled.
        ticket = self._ticket
        if ticket.cancelled or ticket.orphaned():
            ticket = self._ticket = submit(self._build)
        return ticket

    def _call_tier0(self, args: tuple[Any, ...]) -> Any:
        ticket = self._current_ticket()
        if ticket.done() and not ticket.cancelled:
            return self._switch(ticket)(*args)
        rt.count("inductor_tiered_numpy_call")
        return run_graph(self._graph, args)

    def _switch(self, ticket: BuildTicket) -> Callable[..., Any]:
        compiled = self._compiled
        if compiled is not None:
            return compiled
        if ticket.error is not None:
            compiled = self._on_failure(ticket.error)
        else:
            compiled = ticket.value
            rt.count("inductor_tiered_switch")
        assert compiled is not None
        self._compiled = compiled
        return compiled
