"""A stand-in capture the dispatch tests share: any f(x) becomes `x + 1`, guarded on x."""

from __future__ import annotations

from typing import Any

from numpile_capture import CaptureResult, Graph, get_op, meta_of
from numpile_guards import ArraySpec, Guard, GuardKind, LocalSource


class PlusOne:
    """Captures any f(x) as `x + 1`, guarded on x's metadata; counts captures."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        self.calls += 1
        (x,) = args or tuple(kwargs.values())
        graph = Graph()
        node = graph.placeholder("x", meta_of(x))
        graph.output = graph.call(get_op("add"), node, 1)
        spec = ArraySpec(type(x), x.dtype, tuple(x.shape), tuple(x.strides))
        return CaptureResult(
            graph, (LocalSource("x"),), (Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec),)
        )


def minus_one(x: Any) -> Any:
    """The function the stand-in captures (eagerly it subtracts, so a hit is visible)."""
    return x - 1
