"""OpenMP over an outer loop whose iterations are independent (issue 23, item 3).

`for i in range(n): out[i] = f(x[i, :])` over rows: each iteration writes only row `i`
of the arrays it writes and reads those arrays only at row `i`, so the iterations may
run in any order, on any thread. The outermost loop of a scalar C nest (`loop_body`)
gets `#pragma omp for` when its body proves that:

- it carries no value from one iteration to the next, and does not break;
- every store (`setitem_at`, in nested loops and `if` branches too) indexes its first
  axis by the loop's own index (not `i - 1`: a Gauss-Seidel sweep stays serial), and
  every other use of an array it writes reads it at that same first index;
- it holds no other node that writes memory, and no `while` (not analysed).

Run time decides the rest, in an `if` around the region (the nest runs serially, outside
any region, where it fails): the fast form of the nest (every
bounds check hoisted, no `goto` left in it: an error or a bail needs the serial order),
at least two iterations, at least `PARALLEL_WORK` elements in the arrays the nest uses
(below, a parallel region costs more than it saves), and no array it writes sharing
memory with another it uses (their byte extents are disjoint). Each thread's
floating-point flags are ORed into the function's.

    >>> independent_iterations(node)  # doctest: +SKIP
    True
"""

from __future__ import annotations

import re
from typing import Any

from numpile_capture import ArrayMeta, Graph, Node, ScalarSlot

from .loop_body import CArray

#: Elements the arrays of a nest must hold together before its outer loop runs threaded
#: (the kernels' default OpenMP threshold).
PARALLEL_WORK = 65536

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
    `while` loops in its body as the nested `for` loops (lanes interleave those on one
    thread; OpenMP does not take them: their work counter is shared)."""
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


def parallel_nest(lines: list[str], arrays: list[CArray], trips: str) -> tuple[list[str], bool]:
    """The outer loop `lines` (its `for` head first, then its signal poll) as an OpenMP
    loop taken when the run-time conditions hold (else `lines` as they are), and whether
    it may bail: an
    iteration that would leave the function (an index out of bounds, an int overflow)
    ends its own iteration and makes the nest bail after the loop (the arrays restored,
    the loop run with NumPy, which raises as eager does)."""
    head, *rest = lines
    serial = lines
    rest = [line for line in rest if "PyErr_CheckSignals" not in line]
    bails = any(_LEAVE.search(line) for line in rest)
    if bails:
        rest = [_LEAVE.sub("{ np_par_failed = 1; goto NP_PAR_NEXT; }", line) for line in rest]
        *inside, end = rest
        rest = [*inside, f"{_indent(end)}    {NEXT_LABEL}: ;", end]
    indent = _indent(head)
    sizes = " + ".join(_size(array) for array in arrays) or "0"
    disjoint = [
        f"np_par_disjoint({_extent(one)}, {_extent(other)})"
        for one in arrays
        if one.written
        for other in arrays
        if other is not one
    ]
    clause = " && ".join([f"({trips}) >= 2", f"({sizes}) >= {PARALLEL_WORK}", *disjoint])
    # NOTE: the serial copy runs outside any region (the nest as it was): a region whose
    # `if` clause is false still sets a team up, which costs more than a short nest.
    return [
        f"{indent}if ({clause}) {{",
        f"{indent}int np_par_fp = 0;",
        f"{indent}int np_par_failed = 0;",
        f"{indent}#pragma omp parallel reduction(|:np_par_fp, np_par_failed)",
        f"{indent}{{",
        f"{indent}#pragma omp for schedule(static)",
        head,
        *rest,
        f"{indent}np_par_fp |= NP_FP_TEST();",
        f"{indent}}}",
        f"{indent}*np_fp |= np_par_fp;",
        *([f"{indent}if (np_par_failed) {{ goto bail; }}"] if bails else []),
        f"{indent}}} else {{",
        *serial,
        f"{indent}}}",
    ], bails


#: The label ending an iteration of an outer loop with OpenMP (numbered per copy of the
#: nest by `number_labels`: labels are per function in C).
NEXT_LABEL = "NP_PAR_NEXT"

# NOTE: how the C of a nest leaves its function (not allowed out of an OpenMP region).
_LEAVE = re.compile(r"goto (fail|bail|eager);")


def number_labels(lines: list[str]) -> list[str]:
    """`lines` with each copy of the OpenMP nests' label (and the jumps to it before it)
    numbered apart: the function holds several copies of a nest."""
    out: list[str] = []
    count = 0
    for line in lines:
        if NEXT_LABEL in line:
            labelled = line.replace(NEXT_LABEL, f"np_par_next{count}")
            if f"{NEXT_LABEL}: ;" in line:
                count += 1
            line = labelled
        out.append(line)
    return out


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _size(array: CArray) -> str:
    return " * ".join(f"{array.name}_n{axis}" for axis in range(array.ndim)) or "1"


def _extent(array: CArray) -> str:
    # The byte range [low, high) the array's elements span, as two C expressions.
    low = " + ".join(
        f"(({array.name}_s{axis} < 0 && {array.name}_n{axis} > 0) ? "
        f"({array.name}_n{axis} - 1) * {array.name}_s{axis} : 0)"
        for axis in range(array.ndim)
    )
    high = " + ".join(
        f"(({array.name}_s{axis} > 0 && {array.name}_n{axis} > 0) ? "
        f"({array.name}_n{axis} - 1) * {array.name}_s{axis} : 0)"
        for axis in range(array.ndim)
    )
    item = array.dtype.itemsize
    base = f"(const char *){array.name}_d"
    return f"{base} + ({low or '0'}) * {item}, {base} + ({high or '0'} + 1) * {item}"


#: C the nests with OpenMP need once per module: whether two byte ranges are disjoint.
PARALLEL_HELPERS = r"""
#ifndef NP_PAR_DISJOINT
#define NP_PAR_DISJOINT
static inline int np_par_disjoint(const char *a_lo, const char *a_hi,
                                  const char *b_lo, const char *b_hi)
{
    return a_hi <= b_lo || b_hi <= a_lo;
}
#endif
"""
