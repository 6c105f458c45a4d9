"""The `aot_eager` backend: functionalize the captured graph and run the pure graph with NumPy.

Registered under the entry-point group `numpile.backends`. It follows the
backend contract `(graph, example_inputs) -> callable`: the callable takes
the inputs positionally and returns `graph.output` evaluated, with the
graph's in-place effects on its inputs and its aliasing reproduced by the
functionalization epilogue. It is the reference for what the inductor gets.

    >>> fn = aot_eager(graph, example_inputs)  # doctest: +SKIP
    >>> fn(*example_inputs)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numpile_capture import Graph, has_loops, run_graph

from .functionalization import functionalize, run_functionalized

__all__ = ["aot_eager"]


def aot_eager(graph: Graph, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Compile `graph` by functionalizing it; the result runs the pure graph plus the epilogue.

    >>> from numpile_capture import ArrayMeta, Graph, get_op
    >>> import numpy as np
    >>> g = Graph()
    >>> x = g.placeholder("x", ArrayMeta((2,), "float64"))
    >>> g.output = g.call(get_op("add_"), x, 1.0)
    >>> data = np.zeros(2)
    >>> out = aot_eager(g, [data])(data)
    >>> data.tolist(), out is data
    ([1.0, 1.0], True)
    """
    try:
        functional = functionalize(graph)
    except NotImplementedError:
        if not has_loops(graph):
            raise
        # A loop writing arrays in place keeps them in place (a copy per call would lose
        # the writes of the iterations before an error): the graph runs as captured.

        def run_in_place(*inputs: Any) -> Any:
            return run_graph(graph, inputs)

        return run_in_place

    def run(*inputs: Any) -> Any:
        return run_functionalized(functional, inputs)

    return run
