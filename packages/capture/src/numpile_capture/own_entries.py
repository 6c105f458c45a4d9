"""Inner loops whose branches may hand back the Python scalar the enclosing iteration gave
a local, and whether the enclosing kept body computes on it.

In `for i: s = 0.1; for j: if x[i, j] > 0.5: s = x[i, j]`, the inner loop is kept with the
loop's types: its result is typed float64, but where no branch assigned `s` eager's `s`
is still the Python float 0.1. Code after the inner loop that computes on it (`t + s *
z[i]` with a float32 `z`: float32 on the Python float, float64 on a NumPy float64) would
be typed, and compiled, for the wrong one; no run-time flag stands for it. The enclosing
kept loop watches such results (`OwnEntries.held`) across its traces; where some node of
its traced body reads one in a way that may differ (`computed_on`), it traces again with
that inner loop not kept (`OwnEntries.unrolled`; the inner loop unrolls, or the
enclosing loop runs in Python); a `cond` result one of whose branches kept a Python
scalar (`s = 0.1; if x[i] > 0.5: s = x[i]`) makes the enclosing loop not kept. Reads that
give the same either way keep it: a store into a float array (`out[i] = s`: a Python
float and a float64 convert alike), an op with a 0-d NumPy operand of the loop's dtype
(NEP 50 converts the Python scalar to it exactly) or a two-input ufunc whose other
operand promotes alike with the Python scalar and the NumPy value (`v / s` on a float64
`v`), the test of an `if`. So do 0-d NumPy ops with a NumPy operand whose results stay in
the iteration (`y[i] = s * z[i]`, `_flagged_reads`): a backend keeps a run-time flag per
such result ("still the Python scalar": entry_objects.own_entry_results, the C loops'
`EntryKept`) and computes both typings; where a result computed from it leaves the
iteration (`t = t + s * z[i]`) no flag stands for it and the fallback above stays.

    >>> computed_on(watch, (first, body))  # doctest: +SKIP
    {12}
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from .entry_objects import own_entry_results
from .graph import Graph, Node
from .meta import ArrayMeta
from .op import OpKind
from .ops._probes import ufunc_result_dtype
from .ops.pointwise import UFUNC_NAMES


@attrs.define
class OwnEntries:
    """Shared by a kept loop's traces: the results of inner loops and `cond`s of its body
    that may be the Python scalar the iteration gave them (`held`: each result's loop or
    `if` head and the scalar's Python type), and the heads of inner loops not to keep
    (`unrolled`)."""

    held: dict[Node, tuple[int, type]] = attrs.field(factory=dict)
    unrolled: set[int] = attrs.field(factory=set)
    # The heads (the `if`'s first instruction) of `cond` results in `held`: a branch that
    # kept the Python scalar, which no unrolling can type.
    branches: set[int] = attrs.field(factory=set)


def computed_on(
    watch: OwnEntries,
    graphs: Sequence[Graph | None],
    carried: Sequence[str],
    read_after_loop: Callable[[str], bool],
) -> set[int]:
    """The heads of the inner loops and `if`s (`watch.held`) one of whose results some
    node of `graphs` (a kept loop's first iteration and body, with their nested branches
    and bodies) computes on where the Python scalar and the loop's type may differ, or
    hands on out of the iteration: as a `carried` local the next iteration reads or code
    after the loop reads (`read_after_loop`), or into a `cond` branch's results."""
    found: set[int] = set()
    if not watch.held:
        return found
    for graph in graphs:
        if graph is None:
            continue
        for inner in _graphs_in(graph):
            outputs = inner.output if isinstance(inner.output, tuple) else (inner.output,)
            for k, value in enumerate(outputs):
                if not isinstance(value, Node) or value not in watch.held:
                    continue
                passed = inner is graph and k < len(carried)
                if not passed or _read_on(graph, carried[k], read_after_loop):
                    found.add(watch.held[value][0])
            kinds = {value: kind for value, (_, kind) in watch.held.items()}
            flagged = _flagged_reads(inner, kinds) if inner is graph else {}
            for node in inner.nodes:
                for value in node.inputs:
                    if isinstance(value, Node) and value in watch.held:
                        head, kind = watch.held[value]
                        top = inner is graph
                        tested = _only_tested(node, value, inner, top, len(carried))
                        same = tested or _same_either_way(node, value, kind, watch.held)
                        if not same and flagged.get(node) != value:
                            found.add(head)
    return found


def flagged_reads(graph: Graph) -> dict[Node, Node]:
    """The nodes of `graph` (a kept loop's body) that compute on a value that may still be
    the Python scalar the iteration gave a local (`entry_objects.own_entry_results`), or on
    values computed from one, where a backend's run-time flag per such value ("still the
    Python scalar") chooses between both typings: 0-d NumPy ops with a NumPy operand, and
    stores into an array; each mapped to the value it follows. Other reads of such values
    give the same on both (capture keeps no loop otherwise).

    >>> flagged_reads(body)  # doctest: +SKIP
    {v4: v2, v5: v2}
    """
    return _flagged_reads(graph, own_entry_results(graph))


def _flagged_reads(graph: Graph, held: Mapping[Node, type]) -> dict[Node, Node]:
    # `flagged_reads` for the values `held` (each with its Python scalar's type). None of
    # the results of the nodes found leaves the iteration or enters a branch or a loop.
    follows: dict[Node, Node] = {}
    for node in graph.nodes:
        sources = {
            follows.get(value, value)
            for value in node.inputs
            if isinstance(value, Node) and (value in held or _two_typed(value, follows))
        }
        if len(sources) != 1 or not _typed_both_ways(node, held, follows):
            continue
        source = sources.pop()
        if isinstance(source.meta, ArrayMeta) and _EXACT_KIND.get(held[source]) == (
            source.meta.dtype
        ):
            follows[node] = source  # the flag's C local holds the Python scalar exactly
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    # A value of two typings handed on, or read by a node typed one way, escapes: no flag
    # follows the held value it comes from.
    escaped = {
        follows[node]
        for node in follows
        if _two_typed(node, follows)
        and (
            node in outputs
            or any(node in user.inputs and user not in follows for user in graph.nodes)
        )
    }
    return {node: held_value for node, held_value in follows.items() if held_value not in escaped}


def _two_typed(value: Node, follows: Collection[Node]) -> bool:
    # A value of `follows` whose type differs between the typings: not a store's array,
    # not a comparison's bool (one type either way; its value follows the flag).
    if value not in follows or value.op is None:
        return False
    return value.op.name != "setitem_at" and value.op.name not in _COMPARISONS


def _typed_both_ways(node: Node, held: Collection[Node], follows: Collection[Node]) -> bool:
    # A node a backend can write on both typings of the value it reads: a 0-d NumPy op with
    # a NumPy operand (not a held value: a Python scalar on one typing), or a store of it
    # into an array (not as an index).
    if node.op is None:
        return False
    ours = [isinstance(v, Node) and (v in held or _two_typed(v, follows)) for v in node.inputs]
    if node.op.name == "setitem_at":
        return ours[1] and not any(ours[:1] + ours[2:])
    if node.op.kind is not OpKind.POINTWISE or node.params:
        return False
    if not isinstance(node.meta, ArrayMeta) or node.meta.shape != ():
        return False
    # NOTE: a value computed from the held one is a NumPy value on both typings.
    return any(
        isinstance(value, np.generic)
        or (isinstance(value, Node) and value not in held and isinstance(value.meta, ArrayMeta))
        for value in node.inputs
    )


def _read_on(graph: Graph, name: str, read_after_loop: Callable[[str], bool]) -> bool:
    # Whether carried local `name` is read by the next iteration (its placeholder in
    # `graph` has a use) or after the loop.
    if read_after_loop(name):
        return True
    places = {place for place in graph.placeholders if place.name == name}
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    used = any(value in places for node in graph.nodes for value in node.inputs)
    return used or any(value in places for value in outputs)


def _only_tested(node: Node, value: Node, graph: Graph, top: bool, carried: int) -> bool:
    # A comparison of `value` with a Python number or a 0-d NumPy value of its dtype whose
    # result only tests: a `cond`'s predicate, or (in the loop's own body, `top`) an output
    # past the carried values (a `while` test, a stop flag). Python and NumPy test alike.
    if node.op is None or node.op.name not in _COMPARISONS or len(node.inputs) != 2:
        return False
    other = node.inputs[1] if node.inputs[0] is value else node.inputs[0]
    if isinstance(other, Node):
        if not isinstance(other.meta, ArrayMeta) or not isinstance(value.meta, ArrayMeta):
            return False
        if other is value or other.meta.shape != () or other.meta.dtype != value.meta.dtype:
            return False
    elif type(other) not in (bool, int, float):
        return False
    for user in graph.nodes:
        if node in user.inputs:
            is_test = user.op is not None and user.op.name == "cond" and user.inputs[0] is node
            if not is_test or node in user.inputs[1:]:
                return False
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    return all(top and k >= carried for k, out in enumerate(outputs) if out is node)


# NOTE: the comparison ops of the graph (see ops/), whose results only test.
_COMPARISONS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal", "not_equal"})


def _graphs_in(graph: Graph) -> Iterator[Graph]:
    # `graph` and the graphs its nodes hold (cond branches, loop bodies), depth first.
    yield graph
    for node in graph.nodes:
        for _, value in node.params:
            if isinstance(value, Graph):
                yield from _graphs_in(value)


def _same_either_way(node: Node, value: Node, kind: type, held: Collection[Node]) -> bool:
    # Whether `node` gives the same on the Python scalar of type `kind` as on `value`, a
    # 0-d NumPy value of the loop's dtype (`held`: the values that may be Python scalars).
    if node.op is None or not isinstance(value.meta, ArrayMeta):
        return False
    dtype = value.meta.dtype
    if node.op.name == "cond":
        return node.inputs[0] is value and value not in node.inputs[1:]  # a test either way
    if node.op.name == "setitem_at":
        target = node.inputs[0]
        stored_only = node.inputs[1] is value and value not in (target, *node.inputs[2:])
        return (
            stored_only
            and kind is float
            and isinstance(target, Node)
            and isinstance(target.meta, ArrayMeta)
            and target.meta.dtype.kind == "f"
        )
    if len(node.inputs) != 2 or node.params or not isinstance(node.meta, ArrayMeta):
        return False
    other = node.inputs[1] if node.inputs[0] is value else node.inputs[0]
    if not isinstance(other, Node) or other is value or other in held:
        return False
    if not isinstance(other.meta, ArrayMeta):
        return False
    if other.meta.shape == () and other.meta.dtype == dtype:
        return True
    return node.op.name in _BINARY_UFUNCS and _promotes_alike(node.op.name, other.meta, kind, dtype)


def _promotes_alike(name: str, other: ArrayMeta, kind: type, dtype: np.dtype[Any]) -> bool:
    # Whether ufunc `name` on an array `other` and the held value gives one result dtype
    # whether the value is a Python scalar of type `kind` (weak, NEP 50) or a NumPy value of
    # `dtype`, the Python scalar converting to `dtype` exactly: `v / after` on a float64 `v`
    # is float64 on a Python float and on a float64 alike (on a float32 `v` it is not).
    if _EXACT_KIND.get(kind) != dtype:
        return False
    ufunc = getattr(np, name)
    try:
        weak = ufunc_result_dtype(ufunc, (other, kind(0)))
        strong = ufunc_result_dtype(ufunc, (other, ArrayMeta((), dtype)))
    except (TypeError, ValueError):
        return False
    return weak == strong


# NOTE: the NumPy dtype each Python scalar type converts to exactly (NEP 50's default).
_EXACT_KIND: dict[type, np.dtype[Any]] = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}
# NOTE: the graph's two-input ufunc ops, whose result dtype follows NEP 50 promotion.
_BINARY_UFUNCS = frozenset(name for name in UFUNC_NAMES if getattr(np, name).nin == 2)
