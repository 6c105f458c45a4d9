"""Recompile tooling: `CompileProfiler` (why each recompile happened) and `compile_times`.

`CompileProfiler` watches every compiled function while its block runs: the
captures made (graphs, graph breaks, eager fallbacks) and the recompiles,
each with the guard that failed, as recorded by the code caches.

    >>> with CompileProfiler() as prof:  # doctest: +SKIP
    ...     f(np.zeros(8)); f(np.zeros(9))
    >>> print(prof.report())  # doctest: +SKIP
    f (model.py:3): 2 compiles, 1 recompile
      recompile 1: L['x'].shape[0]: expected 8, got 9

It is also an observation-only backend, as in the seeds:
`compile(f, backend=prof)` runs each graph with NumPy and counts it.

`compile_times()` reports the seconds spent per compile stage (capture,
guards, aot, lowering, codegen, C++ build), from the runtime's timers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

from numpile_guards import CodeCache, RecompileReason, all_caches
from numpile_runtime import compile_time_calls
from numpile_runtime import compile_times as _stage_seconds

from .capture_events import CaptureEvent, recording_captures
from .graph import Graph
from .interpreter import run_graph

# NOTE: the stages of one compile, in pipeline order; `compile_times` lists them first and
# every other timed stage (toolchain discovery, module loads, ...) after them.
STAGES = (
    "capture",
    "guards",
    "aot",
    "inductor_lowering",
    "inductor_codegen",
    "inductor_build",
    "cpp_build",
)


def compile_times(repr: Literal["str", "csv"] = "str") -> str:
    """Time spent per compile stage since the start (or `numpile_runtime.reset_compile_times`).

    `repr="str"`: a table of stage, calls, total and mean seconds;
    `repr="csv"`: the same rows as CSV text with a header line. Nested stages
    overlap (`inductor_build` contains `cpp_build`).

        >>> print(compile_times())  # doctest: +SKIP
        stage              calls   total (s)    mean (s)
        capture                2      0.0123      0.0062
    """
    seconds = _stage_seconds()
    calls = compile_time_calls()
    names = [stage for stage in STAGES if stage in seconds]
    names += [stage for stage in seconds if stage not in STAGES]
    rows = [(name, calls.get(name, 0), seconds[name]) for name in names]
    if repr == "csv":
        lines = ["stage,calls,total_s,mean_s"]
        lines += [f"{name},{n},{total:.6f},{total / max(n, 1):.6f}" for name, n, total in rows]
        return "\n".join(lines) + "\n"
    if repr != "str":
        raise ValueError(f"compile_times(repr=...) takes 'str' or 'csv', got {repr!r}")
    width = max([len("stage"), *(len(name) for name in names)]) + 2
    lines = [f"{'stage':<{width}}{'calls':>7}{'total (s)':>12}{'mean (s)':>12}"]
    for name, n, total in rows:
        lines.append(f"{name:<{width}}{n:>7}{total:>12.4f}{total / max(n, 1):>12.4f}")
    if not rows:
        lines.append("(nothing compiled yet)")
    return "\n".join(lines)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


class CompileProfiler:
    """Records why each compiled function recompiled while the `with` block ran.

    `recompiles` lists the `RecompileReason`s (function, file, line, the
    failing guard of every cached entry); `captures` the captures made;
    `report()` says it all in words, per function.

        >>> with CompileProfiler() as prof:
        ...     pass
        >>> prof.recompiles
        []
    """

    def __init__(self) -> None:
        self.captures: list[CaptureEvent] = []
        # Graphs compiled with this profiler as the backend, and their op count.
        self.graph_count = 0
        self.op_count = 0
        self._baseline: dict[int, tuple[CodeCache, int]] = {}
        self._recompiles: list[RecompileReason] | None = None
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> CompileProfiler:
        self._baseline = {
            id(cache): (cache, len(cache.recompile_reasons)) for cache in all_caches()
        }
        self._recompiles = None
        self._stack = contextlib.ExitStack()
        self.captures = self._stack.enter_context(recording_captures())
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._recompiles = self._collect()
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def __call__(self, graph: Graph, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        """Observation-only backend: count the graph, run it with NumPy op by op."""
        self.graph_count += 1
        self.op_count += sum(1 for node in graph.nodes if node.op is not None)

        def run_profiled(*inputs: Any) -> Any:
            return run_graph(graph, inputs)

        return run_profiled

    @property
    def recompiles(self) -> list[RecompileReason]:
        """Every recompile seen so far (all threads), in the order they happened per function."""
        if self._recompiles is not None:
            return list(self._recompiles)
        return self._collect()

    def _collect(self) -> list[RecompileReason]:
        found: list[RecompileReason] = []
        for cache in all_caches():
            _, start = self._baseline.get(id(cache), (cache, 0))
            reasons = cache.recompile_reasons
            # A numpile.reset() inside the block empties the list: count from its start.
            found += reasons[start if start <= len(reasons) else 0 :]
        return found

    def report(self) -> str:
        """Per function: compiles, recompiles with the failed guard, graph breaks, eager runs.

        >>> CompileProfiler().report().splitlines()[0]
        'numpile CompileProfiler: 0 compiles, 0 recompiles, 0 graph breaks'
        """
        recompiles = self.recompiles
        user = [event for event in self.captures if not event.internal]
        breaks = [event for event in self.captures if event.break_reason and not event.eager]
        eager = [event for event in self.captures if event.eager]
        lines = [
            f"numpile CompileProfiler: {_plural(len(user), 'compile')}, "
            f"{_plural(len(recompiles), 'recompile')}, {_plural(len(breaks), 'graph break')}"
        ]
        if self.graph_count:
            lines.append(
                f"  as a backend: {_plural(self.graph_count, 'graph')}, "
                f"{_plural(self.op_count, 'op')}"
            )
        lines += self._recompile_lines(recompiles, user)
        if breaks:
            lines.append("graph breaks:")
            lines += [f"  {event.name}: {_where(event)}" for event in breaks]
        if eager:
            lines.append("ran eagerly (could not be captured):")
            lines += [f"  {event.name}: {_where(event)}" for event in eager]
        if not recompiles:
            lines.append("no recompiles.")
        return "\n".join(lines)

    def _recompile_lines(
        self, recompiles: list[RecompileReason], user: list[CaptureEvent]
    ) -> list[str]:
        by_function: dict[tuple[str, str, int], list[RecompileReason]] = {}
        for reason in recompiles:
            key = (reason.function, reason.filename, reason.lineno)
            by_function.setdefault(key, []).append(reason)
        lines: list[str] = []
        for (function, filename, lineno), reasons in by_function.items():
            compiles = sum(1 for event in user if event.name == function)
            lines.append(
                f"{function} ({filename}:{lineno}): {_plural(compiles, 'compile')}, "
                f"{_plural(len(reasons), 'recompile')}"
            )
            for index, reason in enumerate(reasons, 1):
                first, *others = reason.failures or ("no cached entry matched",)
                lines.append(f"  recompile {index}: {first}")
                lines += [f"    older entry {n}: {text}" for n, text in enumerate(others, 1)]
            hint = _hint(reasons)
            if hint:
                lines.append(f"  hint: {hint}")
        return lines


def _where(event: CaptureEvent) -> str:
    reason = event.break_reason or "unknown reason"
    if event.filename is None:
        return reason
    return f"{reason} ({event.filename}:{event.lineno})"


def _hint(reasons: list[RecompileReason]) -> str | None:
    # What to do about the most common causes, judged from the newest entry's failure.
    texts = [reason.failures[0] for reason in reasons if reason.failures]
    if texts and all(".shape[" in text or ".ndim" in text for text in texts):
        return (
            "sizes change between calls: keep dynamic=None (the default) or mark the dim "
            "with numpile.mark_dynamic(x, dim)"
        )
    if texts and all(".dtype" in text for text in texts):
        return "dtypes change between calls: cast the inputs to one dtype before the call"
    return None
