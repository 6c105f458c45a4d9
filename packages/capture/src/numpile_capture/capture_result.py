"""What one capture produces: the contract between the tracer and the dispatcher.

The tracer (`capture_function`) interprets a function's bytecode on one set of
arguments and returns a `CaptureResult`, or raises `Unsupported` when it meets
something it cannot capture yet.
"""

from __future__ import annotations

import attrs

from numpile_guards import Guard, Source

from .graph import Graph


@attrs.frozen
class CaptureResult:
    """A captured graph, where its inputs come from, and what it assumed.

    `input_sources[i]` says where placeholder `i` of `graph` is fetched at call
    time. `graph.output` is the function's return value as a pytree of nodes
    and constants. `guards` must all hold for the graph to be reused.
    """

    graph: Graph
    input_sources: tuple[Source, ...]
    guards: tuple[Guard, ...]


class Unsupported(Exception):  # noqa: N818 - it names the event, as Dynamo's does
    """Capture met code it cannot capture yet.

    `reason` says what ("not supported yet: <what>"); `filename` and `lineno`
    point at the user's line.
    """

    def __init__(self, reason: str, filename: str | None = None, lineno: int | None = None):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        where = f" ({filename}:{lineno})" if filename is not None else ""
        super().__init__(f"{reason}{where}")
