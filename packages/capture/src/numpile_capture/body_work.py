"""Array work in a loop body: whether compiling the pieces of a body that breaks pays.

A loop that capture does not keep because its body graph-breaks would run, iteration
after iteration, the compiled pieces of its body (resume functions whose index is a
run-time input) with the breaking instruction in Python between them. Each piece's call
costs a few microseconds (guards, fetching its inputs, the compiled call, the hand-over to
the next piece): more than a scalar body's whole Python, and more than NumPy takes for a
few cheap operations on thousands of elements. So the body is worth compiling only when
its array work is large enough for fused kernels to win that back.

The work of a node is what compiling it saves against NumPy, in element-passes (one cheap
element-wise operation's pass over one element), at the size of its largest array (its
result; the operands too for an operation that computes on them, not for one that only
picks elements or makes a view), by the rows of `COSTS`:

- a transcendental function saves most of its NumPy time per element
  (`PieceCosts.transcendental` passes);
- an operation that reads the result of an element-wise one saves a pass per such operand,
  since the fused kernel never stores that intermediate (`PieceCosts.fused_pass`): a chain
  of k element-wise operations saves k - 1 passes;
- an in-place update or a store costs a pass (`PieceCosts.write_back`): the piece's
  epilogue writes the mutated input back;
- cheap arithmetic on its own saves nothing (a kernel makes the pass NumPy's ufunc makes),
  and neither does a library call (it runs the same library code either way).

A store `x[index] = value` counts the elements of its value, not all of `x`. A symbolic size
counts at the largest value the shape environment estimates for it
(`ShapeEnv.largest_hint`: the sizes seen now, a loop index at the end of its range, so
`x[: i + 1]` counts as all of `x`); a node that saves work per element at a size with no
bound (a data-dependent size), or a loop kept inside the body (its iterations run in C),
counts as `PIECES_PAY_AT` on its own. A body traced up to its break that saves less than
`PIECES_PAY_AT`, what its pieces' calls cost, runs whole in plain Python instead
(`loop_region`), at eager's speed.

The tracer sums the work of the nodes it adds (`Tracer.array_work`), so a loop compares the
sum before and after tracing its body, nested bodies and inlined calls included.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> from numpile_capture.graph import Graph
    >>> g = Graph()
    >>> small = g.placeholder("a", ArrayMeta((8,), "float64"))
    >>> large = g.placeholder("b", ArrayMeta((100_000,), "float64"))
    >>> array_work([g.call(get_op("add"), large, large)])
    0
    >>> array_work([g.call(get_op("sin"), small)])
    128
    >>> pays_for_pieces(array_work([g.call(get_op("add"), g.call(get_op("sin"), large), large)]))
    True
"""

from __future__ import annotations

from collections.abc import Container, Iterable

import attrs

from .dynamic_shapes import active_shape_env
from .graph import Graph, Node
from .meta import ArrayMeta
from .op import OpKind


@attrs.frozen
class PieceCosts:
    """What compiling a breaking body's pieces saves or costs, in element-passes.

    One element-pass is the time of NumPy's add per element. The rows come from timing the
    same bodies as plain Python and as pieces (docs/performance_notes.md, loops whose body
    breaks: the cost rule), rounded down so that a body compiles only when it clearly wins.

        >>> COSTS.fused_pass, COSTS.library_call
        (1, 0)
    """

    # NOTE: NumPy's float64 sin, cos and exp take 40-55 element-passes per element; a
    # kernel calls libm's too, so count less than what a sin/cos body's pieces saved.
    transcendental: int = 16
    # NOTE: an intermediate NumPy stores and reads back; fused, it stays in a register.
    fused_pass: int = 1
    # NOTE: the piece's epilogue copies each mutated input back: one more pass.
    write_back: int = 1
    # NOTE: a library call (`concatenate`, `linalg`) runs the same code compiled or not.
    library_call: int = 0
    # NOTE: one piece's call per iteration (guards, inputs, the call, the epilogue's
    # overlap test, the hand-over): about 5 us, the time of 6000-7000 element-passes.
    piece: int = 6144


COSTS = PieceCosts()

# NOTE: a body that breaks once runs two pieces per iteration: the one before its break
# (the body traced up to the break, whose work is counted) and the one after it.
PIECES_PAY_AT = 2 * COSTS.piece

# NOTE: element-wise functions whose per-element cost is many arithmetic operations'.
_TRANSCENDENTAL = frozenset(
    {
        "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
        "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10",
        "log1p", "power", "float_power", "cbrt", "hypot",
    }
)  # fmt: skip

# NOTE: kinds whose result a fused kernel consumes without storing it.
_FUSED = frozenset({OpKind.POINTWISE})

# NOTE: kinds whose node only picks elements or makes a view: what it reads costs nothing
# until an operation computes on it, so only its result's size counts.
_SELECTING = frozenset({OpKind.VIEW, OpKind.INDEXING})


def array_work(nodes: Iterable[Node], *, fused: Container[Node] | None = None) -> int:
    """The element-passes compiling `nodes` saves (see the module docstring); placeholders
    save none. Only results in `fused` (all when None) count as intermediates a kernel keeps
    out of memory: a loop's piece receives the values made before its iteration stored."""
    return sum(_work(node, fused) for node in nodes)


def pays_for_pieces(work: int) -> bool:
    """Whether a breaking body whose compiling saves `work` element-passes is worth compiling
    as pieces."""
    return work >= PIECES_PAY_AT


def _work(node: Node, fused: Container[Node] | None) -> int:
    if node.op is None:
        return 0
    subgraphs = [(name, value) for name, value in node.params if isinstance(value, Graph)]
    if any(name == "body" for name, _ in subgraphs):
        return PIECES_PAY_AT  # a kept loop: its iterations run compiled
    branches = sum(array_work(graph.nodes) for _, graph in subgraphs)  # a cond's
    metas = [node.meta]
    per_element = _saved_per_element(node, fused)
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
        if size is None:  # a size with no bound at capture time
            return branches + (PIECES_PAY_AT if per_element > 0 else 0)
        largest = max(largest, size)
    return branches + per_element * largest


def _saved_per_element(node: Node, fused: Container[Node] | None) -> int:
    # The rows of `COSTS` that apply to `node`, per element of its largest array.
    assert node.op is not None
    if node.op.kind is OpKind.EXTERN:
        return COSTS.library_call
    saved = COSTS.transcendental if node.op.name in _TRANSCENDENTAL else 0
    for value in node.inputs:
        if not isinstance(value, Node) or value.op is None or value.op.kind not in _FUSED:
            continue
        if fused is None or value in fused:
            saved += COSTS.fused_pass
    if node.op.kind is OpKind.MUTATION:
        saved -= COSTS.write_back
    return saved


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
