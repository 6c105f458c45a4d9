"""`explain`: what capture makes of a function on given arguments, without running it compiled.

>>> import numpy as np
>>> def f(x):
...     return np.sin(x) + 1
>>> out = explain(f)(np.zeros(3))
>>> out.graph_count, out.graph_break_count
(1, 0)
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import attrs

from numpile_guards import Guard

from .capture_result import Unsupported
from .graph import Graph
from .tracer import capture_function


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
        for index, graph in enumerate(self.graphs):
            lines.append(f"Graph {index}:")
            lines += [f"  {line}" for line in str(graph).splitlines()]
        if self.guards:
            lines.append("Guards:")
            lines += [f"  {guard}" for guard in self.guards]
        return "\n".join(lines)


def explain(fn: Callable[..., Any]) -> Callable[..., ExplainOutput]:
    """Return a function that captures `fn` on its arguments and reports what happened.

    Compiled wrappers are explained through the function they wrap. Nothing is
    cached and nothing runs compiled.
    """
    original = getattr(fn, "_numpile_original", fn)
    if not isinstance(original, types.FunctionType):
        raise TypeError(f"explain() needs a Python function, got {type(fn).__name__}")

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        try:
            result = capture_function(original, args, kwargs)
        except Unsupported as exc:
            return ExplainOutput((), (BreakReason(exc.reason, exc.filename, exc.lineno),), ())
        return ExplainOutput((result.graph,), (), result.guards)

    return run
