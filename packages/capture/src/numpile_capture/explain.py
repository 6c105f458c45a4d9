"""`explain`: what capture makes of a function on given arguments, and how its loops run.

>>> import numpy as np
>>> def f(x):
...     return np.sin(x) + 1
>>> out = explain(f)(np.zeros(3))
>>> out.graph_count, out.graph_break_count
(1, 0)
"""

from __future__ import annotations

import functools
import logging
import types
import warnings
from collections.abc import Callable
from typing import Any

import attrs

from numpile_guards import CodeCache, Guard

from .backends import BackendFn, default_backend, eager, lookup_backend
from .capture_events import LoopNotKept, recording_loops
from .dispatch import (
    CaptureEvent,
    CaptureFallbackWarning,
    CompiledFunction,
    recording_captures,
)
from .graph import Graph
from .graph_sizes import sympy_sizes
from .light_capture import takes_light_sizes
from .loop_tiers import LoopTier, collecting_loop_tiers, merged_loop_tiers, synchronous_compiles

log = logging.getLogger("numpile.capture.explain")


@attrs.frozen
class BreakReason:
    """Why capture stopped, and where in the user's code."""

    reason: str
    filename: str | None
    lineno: int | None

    def __str__(self) -> str:
        where = f" ({self.filename}:{self.lineno})" if self.filename is not None else ""
        return f"{self.reason}{where}"


@attrs.frozen
class ExplainOutput:
    """The graphs capture produced, the breaks it met, and the guards it installed."""

    graphs: tuple[Graph, ...]
    break_reasons: tuple[BreakReason, ...]
    guards: tuple[Guard, ...]
    # NOTE: loops unrolled (or broken at) instead of kept as loop nodes, with the reason.
    loops_not_kept: tuple[LoopNotKept, ...] = ()
    # How the backend runs each graph's kept loops (one tuple per graph, see `loop_tiers`).
    loop_tiers: tuple[tuple[LoopTier, ...], ...] = ()
    # Loops whose compiled code handed a call to NumPy while `explain` ran the function.
    run_time_fallbacks: tuple[LoopTier, ...] = ()

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def ops_per_graph(self) -> tuple[tuple[str, ...], ...]:
        return tuple(
            tuple(node.op.name for node in graph.nodes if node.op is not None)
            for graph in self.graphs
        )

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    def __str__(self) -> str:
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Op count: {self.op_count}",
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines += [f"  {index + 1}. {reason}" for index, reason in enumerate(self.break_reasons)]
        if self.loops_not_kept:
            lines.append("Loops not kept as loops:")
            lines += [f"  {index + 1}. {loop}" for index, loop in enumerate(self.loops_not_kept)]
        for index, graph in enumerate(self.graphs):
            lines.append(f"Graph {index}:")
            lines += [f"  {line}" for line in str(graph).splitlines()]
            tiers = self.loop_tiers[index] if index < len(self.loop_tiers) else ()
            if tiers:
                lines.append(f"Loops of graph {index}:")
                lines += [f"  {tier}" for tier in tiers]
        if self.run_time_fallbacks:
            lines.append("Loops run with NumPy at run time:")
            lines += [f"  {tier}" for tier in self.run_time_fallbacks]
        if self.guards:
            lines.append("Guards:")
            lines += [f"  {guard}" for guard in self.guards]
        return "\n".join(lines)


def explain(fn: Callable[..., Any]) -> Callable[..., ExplainOutput]:
    """Return a function that runs `fn` compiled on its arguments and reports every capture.

    The call runs for real, with the backend `compile` would use (the best installed),
    built before the call runs (no background tier), so graph breaks are followed: the
    breaking instruction runs, and the resume functions after it are captured too. Under
    each graph, one line per kept loop says how the backend runs it and why not faster
    (`LoopTier`); loops whose compiled code handed the call to NumPy are listed after. It
    uses a private cache: nothing the user compiled is touched or reused. Compiled
    wrappers are explained through the function they wrap. Side effects of `fn` (prints,
    mutations) happen once.

        >>> def f(x):
        ...     y = x + 1
        ...     print("y")
        ...     return y * 2
        >>> explain(f)(np.ones(2)).graph_count  # doctest: +SKIP
        2
    """
    original = getattr(fn, "_numpile_original", fn)
    if not isinstance(original, types.FunctionType):
        raise TypeError(f"explain() needs a Python function, got {type(fn).__name__}")

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        caches: dict[types.CodeType, CodeCache] = {}

        def private_cache(code: types.CodeType) -> CodeCache:
            found = caches.get(code)
            if found is None:
                found = CodeCache(code.co_qualname, code.co_filename, code.co_firstlineno)
                caches[code] = found
            return found

        backend = _or_eager(lookup_backend(default_backend()))
        compiled = CompiledFunction(original, backend=backend, cache_provider=private_cache)
        with (
            recording_captures() as events,
            recording_loops() as loops,
            collecting_loop_tiers() as run_time,
            synchronous_compiles(),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore", CaptureFallbackWarning)
            compiled(*args, **kwargs)
        # NOTE: a capture that stops at a break traces the code before it again: one each.
        return attrs.evolve(
            _summarize(events),
            loops_not_kept=tuple(dict.fromkeys(loops)),
            run_time_fallbacks=merged_loop_tiers(run_time),
        )

    return run


def _or_eager(backend: BackendFn) -> BackendFn:
    # `backend`, or the eager backend for a graph it cannot compile here (CuPy arrays with no
    # GPU, say): explain reports every graph capture makes, as it did with eager alone.
    @functools.wraps(backend)
    def compile_or_run_eagerly(graph: Graph, example_inputs: Any, **kwargs: Any) -> Any:
        try:
            return backend(graph, example_inputs, **kwargs)
        except Exception as error:
            log.debug("explain runs a graph eagerly: its backend failed (%s)", error)
            graph = sympy_sizes(graph) if takes_light_sizes(backend) else graph
            return eager(graph, example_inputs)

    return compile_or_run_eagerly


def _summarize(events: list[CaptureEvent]) -> ExplainOutput:
    graphs = tuple(event.graph for event in events if event.graph is not None)
    # NOTE: a resume function that runs eagerly repeats the break that made it: not counted.
    reasons = tuple(
        BreakReason(event.break_reason, event.filename, event.lineno)
        for event in events
        if event.break_reason is not None and not (event.eager and event.internal)
    )
    guards = tuple(guard for event in events for guard in event.guards)
    tiers = tuple(event.loop_tiers for event in events if event.graph is not None)
    return ExplainOutput(graphs, reasons, guards, loop_tiers=tiers)
