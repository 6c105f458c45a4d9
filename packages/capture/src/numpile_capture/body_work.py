"""Array work in a loop body: whether compiling the pieces of a body that breaks pays.

A loop that capture does not keep because its body graph-breaks would run, iteration
after iteration, the compiled pieces of its body (resume functions whose index is a
run-time input) with the breaking instruction in Python between them. Each piece's call
costs a few microseconds (guards, fetching its inputs, the compiled call, the hand-over to
the next piece), more than NumPy takes for one operation on a few hundred elements, and
more than the Python of a scalar body takes whole. So such a body is worth compiling only
when it does array work: an operation on an array of more than `SMALL_NUMEL` elements, or
of a size known only at run time, or a loop kept inside it (a kept loop runs its
iterations in C). A body traced up to its break without any runs whole in plain Python
instead (`loop_region`), with eager's speed.

The tracer counts array work as nodes are added (`Tracer.array_work`), so a loop compares
the count before and after tracing its body, nested bodies and inlined calls included.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> from numpile_capture.graph import Graph
    >>> g = Graph()
    >>> small = g.placeholder("a", ArrayMeta((8,), "float64"))
    >>> large = g.placeholder("b", ArrayMeta((100_000,), "float64"))
    >>> array_work([g.call(get_op("sin"), small)]), array_work([g.call(get_op("sin"), large)])
    (0, 1)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .graph import Graph, Node
from .meta import ArrayMeta
from .op import OpKind

# NOTE: about where NumPy's time for one operation stops being its call overhead (about a
# microsecond): below it a compiled piece (a few microseconds a call) cannot win back its
# own call by fusing (docs/performance_notes.md, loops whose body breaks).
SMALL_NUMEL = 1024

# NOTE: kinds whose node only picks elements or makes a view: what it reads costs nothing
# until an operation computes on it, so only its result's size counts.
_SELECTING = frozenset({OpKind.VIEW, OpKind.INDEXING})


def array_work(nodes: Iterable[Node]) -> int:
    """How many of `nodes` do array work (see the module docstring); placeholders do none."""
    return sum(1 for node in nodes if _does_array_work(node))


def _does_array_work(node: Node) -> bool:
    if node.op is None:
        return False
    subgraphs = [value for _, value in node.params if isinstance(value, Graph)]
    if any(name == "body" for name, value in node.params if isinstance(value, Graph)):
        return True  # a kept loop: its iterations run compiled
    if any(array_work(graph.nodes) for graph in subgraphs):
        return True  # a branch (cond) that does
    if _large(node.meta):
        return True
    if node.op.kind in _SELECTING:
        return False
    return any(_large(value.meta) for value in node.inputs if isinstance(value, Node))


def _large(meta: Any) -> bool:
    if not isinstance(meta, ArrayMeta):
        return False
    numel = meta.numel
    return not isinstance(numel, int) or numel > SMALL_NUMEL
