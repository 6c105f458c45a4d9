"""Array work in a loop body: whether compiling the pieces of a body that breaks pays.

A loop that capture does not keep because its body graph-breaks would run, iteration
after iteration, the compiled pieces of its body (resume functions whose index is a
run-time input) with the breaking instruction in Python between them. Each piece's call
costs a few microseconds (guards, fetching its inputs, the compiled call, the hand-over to
the next piece): more than a scalar body's whole Python, and more than NumPy takes for a
few cheap operations on thousands of elements. So the body is worth compiling only when
its array work is large enough for fused kernels to win that back.

The work of a node is counted in element-operations: the elements of its largest array
(its result; the operands too for an operation that computes on them, not for one that
only picks elements or makes a view), times `EXPENSIVE_WEIGHT` for a transcendental
function or a library call, which cost NumPy several times an arithmetic operation per
element. A symbolic size counts at the largest value the shape environment estimates for it
(`ShapeEnv.largest_hint`: the sizes seen now, a loop index at the end of its range, so
`x[: i + 1]` counts as all of `x`); one it cannot bound (a data-dependent size), or a loop
kept inside the body (its iterations run in C), counts as `PIECES_PAY_AT` on its own. A
store `x[index] = value` counts the elements of its value, not all of `x`. A body traced up
to its break with less work than `PIECES_PAY_AT` runs whole in plain Python instead
(`loop_region`), at eager's speed.

The tracer sums the work of the nodes it adds (`Tracer.array_work`), so a loop compares the
sum before and after tracing its body, nested bodies and inlined calls included.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> from numpile_capture.graph import Graph
    >>> g = Graph()
    >>> small = g.placeholder("a", ArrayMeta((8,), "float64"))
    >>> large = g.placeholder("b", ArrayMeta((100_000,), "float64"))
    >>> array_work([g.call(get_op("add"), small, small)])
    8
    >>> array_work([g.call(get_op("sin"), small)])
    64
    >>> pays_for_pieces(array_work([g.call(get_op("add"), large, large)]))
    True
"""

from __future__ import annotations

from collections.abc import Iterable

from .dynamic_shapes import active_shape_env
from .graph import Graph, Node
from .meta import ArrayMeta
from .op import OpKind

# NOTE: where compiled pieces started to beat the body's NumPy on the dev VM: a body of
# sin, multiply and add on 1024 float64 elements (10,240 element-operations here) ran 2.4x
# faster as pieces; two arithmetic operations on 4096 elements (8,192) ran 3x slower, and
# still 1.3x slower on 16384 (docs/performance_notes.md, loops whose body breaks).
PIECES_PAY_AT = 8192

# NOTE: NumPy's time per element of a transcendental or a library call against an add.
EXPENSIVE_WEIGHT = 8

# NOTE: element-wise functions whose per-element cost is several arithmetic operations'.
_EXPENSIVE = frozenset(
    {
        "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
        "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10",
        "log1p", "power", "float_power", "cbrt", "hypot",
    }
)  # fmt: skip

# NOTE: kinds whose node only picks elements or makes a view: what it reads costs nothing
# until an operation computes on it, so only its result's size counts.
_SELECTING = frozenset({OpKind.VIEW, OpKind.INDEXING})


def array_work(nodes: Iterable[Node]) -> int:
    """The element-operations of `nodes` (see the module docstring); placeholders do none."""
    return sum(_work(node) for node in nodes)


def pays_for_pieces(work: int) -> bool:
    """Whether a breaking body with `work` element-operations is worth compiling as pieces."""
    return work >= PIECES_PAY_AT


def _work(node: Node) -> int:
    if node.op is None:
        return 0
    subgraphs = [(name, value) for name, value in node.params if isinstance(value, Graph)]
    if any(name == "body" for name, _ in subgraphs):
        return PIECES_PAY_AT  # a kept loop: its iterations run compiled
    branches = sum(array_work(graph.nodes) for _, graph in subgraphs)  # a cond's
    metas = [node.meta]
    if node.op.kind is OpKind.MUTATION and any(name == "index" for name, _ in node.params):
        # A store `x[index] = value` writes the value's elements, not all of `x` (its result).
        metas = [value.meta for value in node.inputs[1:] if isinstance(value, Node)]
    elif node.op.kind not in _SELECTING:
        metas += [value.meta for value in node.inputs if isinstance(value, Node)]
    largest = 1
    for meta in metas:
        if not isinstance(meta, ArrayMeta):
            continue
        size = _elements(meta)
        if size is None:
            return PIECES_PAY_AT  # a size with no bound at capture time
        largest = max(largest, size)
    weight = EXPENSIVE_WEIGHT if _is_expensive(node) else 1
    return branches + weight * largest


def _elements(meta: ArrayMeta) -> int | None:
    # The elements at the largest sizes the shape environment estimates (its sizes' hints,
    # indices anywhere in their bounds): a product of ints, never a symbolic one (which a
    # light capture would have to hand to sympy).
    env = active_shape_env()
    total = 1
    for dim in meta.shape:
        largest = dim if isinstance(dim, int) else None
        if largest is None and env is not None:
            largest = env.largest_hint(dim)
        if largest is None:
            return None
        total *= max(largest, 0)
    return total


def _is_expensive(node: Node) -> bool:
    assert node.op is not None
    return node.op.name in _EXPENSIVE or node.op.kind is OpKind.EXTERN
