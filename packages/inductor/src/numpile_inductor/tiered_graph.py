"""Tiered compilation: a new graph runs op by op with NumPy while its kernels build.

The first call of a new graph would otherwise wait for lowering, code generation and
the C compiler (most of a second on a small graph). With tiering, the inductor returns a
`TieredGraph` when the graph cache misses: its calls run the graph op by op with NumPy
(`run_graph`, tier 0: eager NumPy's results, warnings and in-place effects, from the
user's lines) while `background_build` compiles it; the first call after the build is
done switches to the compiled callable for good (tier 1). A graph cache hit never
tiers: loading a built module takes milliseconds.

A graph with kept loops is not run op by op (each iteration's ops would run from
Python, 10-100x slower than the loop it came from): built with `op_by_op=False`, its
calls before the switch raise `NotCompiledYet` when the dispatcher offered the eager tier
(the graph is the whole function, which then runs as plain Python; see
`numpile_capture.eager_tier`), and otherwise wait for the build.

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
from numpile_capture import Graph, NotCompiledYet, run_graph

from .background_build import BuildTicket, submit

__all__ = ["TieredGraph"]


class TieredGraph:
    """A graph's callable: NumPy op by op until its background build is done, then compiled.

    `build()` returns the compiled callable (it runs on the background worker);
    `on_failure(error)` returns the callable to use after a failed build, or raises.
    `tier` is "numpy" or "compiled"; `wait()` blocks until the build ended (tests and
    benchmarks that want tier 1 now). With `op_by_op=False` (loop graphs) the calls before
    the switch raise `NotCompiledYet` once `accept_eager_tier()` was called, and otherwise
    wait for the build.
    """

    __slots__ = (
        "_build",
        "_compiled",
        "_eager_tier",
        "_graph",
        "_on_failure",
        "_op_by_op",
        "_ticket",
    )

    def __init__(
        self,
        graph: Graph,
        build: Callable[[], Callable[..., Any]],
        on_failure: Callable[[BaseException], Callable[..., Any]],
        *,
        op_by_op: bool = True,
    ) -> None:
        self._graph = graph
        self._build = build
        self._on_failure = on_failure
        self._op_by_op = op_by_op
        self._eager_tier = False
        self._compiled: Callable[..., Any] | None = None
        self._ticket: BuildTicket = submit(build)

    def accept_eager_tier(self) -> None:
        """The caller runs the function eagerly on `NotCompiledYet` (see the module doc)."""
        self._eager_tier = True

    @property
    def eager_tier(self) -> bool:
        """Whether calls before the switch hand the call back to the function (loop graphs)."""
        return self._eager_tier and not self._op_by_op

    @staticmethod
    def not_compiled(*args: Any) -> Any:
        """A callable that always hands the call back (`on_failure` of an eager-tier graph)."""
        raise NotCompiledYet("the graph's background build failed")

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
        if self._op_by_op:
            rt.count("inductor_tiered_numpy_call")
            return run_graph(self._graph, args)
        if self.eager_tier:
            rt.count("inductor_tiered_eager_call")
            raise NotCompiledYet("the graph's background build is not done")
        self.wait()
        assert self._compiled is not None
        return self._compiled(*args)

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
