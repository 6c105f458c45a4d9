"""Whether the iterations of a loop are independent: they may run in any order, at once.

`for i in range(n): out[i] = f(x[i, :])` over rows: each iteration writes only row `i`
of the arrays it writes and reads those arrays only at row `i`. `independent_iterations`
proves that from the body of a `for_loop` node:

- it carries no value from one iteration to the next, and does not break;
- every store (`setitem_at`, in nested loops and `if` branches too) indexes its first
  axis by the loop's own index (not `i - 1`: a Gauss-Seidel sweep stays serial), and
  every other use of an array it writes reads it at that same first index;
- it holds no other node that writes memory, and no `while` unless asked to analyse them
  (`while_loops`: as nested loops).

What the graph cannot say is for the run time to check: that no array the loop writes
shares memory with another it uses. The C loop function runs such a loop with OpenMP or
as interleaved lanes (`codegen/c/loop_parallel.py`, `loop_lanes.py`); a Triton loop
program as one program per iteration (`codegen/triton/loop_program.py`).

    >>> independent_iterations(node, while_loops=True)  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

from numpile_capture import ArrayMeta, Graph, Node, ScalarSlot

__all__ = ["independent_iterations"]

#: Ops that read an array at an element or row index: where their index scalars start.
_READS = {"element_at": 1, "getitem_at": 1}

#: Ops that store into an array at an index: where their index scalars start.
_STORES = {"setitem_at": 2}

#: Ops that read an array's metadata only (never its elements).
_METADATA = frozenset({"dim"})

# NOTE: the stand-in for an index of a nested loop (never the outer loop's index).
_INNER = object()


def independent_iterations(node: Node, *, while_loops: bool = False) -> bool:
    """Whether the iterations of `for_loop` node `node` write disjoint rows and read
    nothing another iteration writes (see the module's rules); `while_loops` analyses the
    `while` loops in its body as the nested `for` loops (lanes and Triton programs take
    those; C's OpenMP does not: their work counter is shared)."""
    params = dict(node.params)
    if params.get("carried") or params.get("breaks") or params.get("first") is not None:
        return False
    body: Graph = params["body"]
    index = body.placeholders[0]
    origin: dict[Node, Any] = {placeholder: placeholder for placeholder in body.placeholders}
    written: set[Any] = set()
    uses: list[tuple[Any, bool]] = []
    if not _walk(body, origin, index, written, uses, while_loops):
        return False
    return all(by_index for root, by_index in uses if root in written)


def _walk(
    graph: Graph,
    origin: dict[Node, Any],
    index: Node,
    written: set[Any],
    uses: list[tuple[Any, bool]],
    while_loops: bool,
) -> bool:
    # Record the stores and array uses of `graph` (origin: its nodes -> the outer body's);
    # False at anything not analysed.
    for node in graph.nodes:
        op = node.op
        if op is None:
            continue
        name = op.name
        origin.setdefault(node, node)
        if name in _STORES:
            root = origin.get(node.inputs[0])
            if not _first_index_is(node, _STORES[name], origin, index):
                return False
            written.add(root)
            origin[node] = root  # the store gives back the array it wrote
            uses.extend((origin.get(value), False) for value in node.inputs[1:2])
            continue
        if name in _READS:
            uses.append((origin.get(node.inputs[0]), _first_index_is(node, 1, origin, index)))
            continue
        if name == "for_loop" or (name == "while_loop" and while_loops):
            if not _nested(node, origin, index, written, uses, while_loops):
                return False
            continue
        if name == "cond":
            for branch in ("then_branch", "else_branch"):
                inner: Graph = dict(node.params)[branch]
                mapping: dict[Node, Any] = {
                    placeholder: origin.get(value) if isinstance(value, Node) else None
                    for placeholder, value in zip(inner.placeholders, node.inputs[1:], strict=True)
                }
                if not _walk(inner, mapping, index, written, uses, while_loops):
                    return False
            continue
        if any(isinstance(value, Graph) for _, value in node.params):
            return False  # a while loop, or another op with a body
        if op.mutates:
            return False
        if name not in _METADATA:
            uses.extend((origin.get(value), False) for value in node.inputs if _is_array(value))
    return True


def _nested(
    node: Node,
    origin: dict[Node, Any],
    index: Node,
    written: set[Any],
    uses: list[tuple[Any, bool]],
    while_loops: bool,
) -> bool:
    # A loop nested in the body: its placeholders stand for the inputs it is given (a
    # `for`'s index is none of the outer loop's; carried values come first, after it).
    params = dict(node.params)
    inner: Graph = params["body"]
    placeholders = inner.placeholders
    if node.op is not None and node.op.name == "while_loop":
        mapping: dict[Node, Any] = {}
        given = zip(placeholders, node.inputs[1:], strict=True)
    else:
        mapping = {placeholders[0]: _INNER}
        given = zip(placeholders[1:], node.inputs[3:], strict=True)
    carried: int = params.get("carried", 0)
    for position, (placeholder, value) in enumerate(given):
        # A carried value starts as its input but changes: it stands for no outer value.
        known = position >= carried and isinstance(value, Node)
        mapping[placeholder] = origin.get(value) if known else None
    first = params.get("first")
    graphs = [inner] if first is None else [inner, first]
    return all(_walk(graph, dict(mapping), index, written, uses, while_loops) for graph in graphs)


def _first_index_is(node: Node, scalars_at: int, origin: dict[Node, Any], index: Node) -> bool:
    # Whether the first item of `node`'s index template is the outer loop's index itself.
    template = dict(node.params).get("index")
    if not template or not isinstance(template[0], ScalarSlot):
        return False
    scalar = node.inputs[scalars_at + template[0].position]
    return isinstance(scalar, Node) and origin.get(scalar) is index


def _is_array(value: Any) -> bool:
    return isinstance(value, Node) and isinstance(value.meta, ArrayMeta) and value.meta.shape != ()
