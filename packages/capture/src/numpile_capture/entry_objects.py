"""Carried values that leave a loop as the very object they entered it as, unless an inner
loop assigning them ran.

An inner loop kept with the enclosing loop's types (`loop_entry.kept_with_loop_types`)
names on its node the locals it retypes (`typed_if_ran`); a backend keeps a run-time flag
per local, set where such a loop ran. Where, in every iteration of the enclosing loop, the
local is only passed along until such a loop assigns it (carried into that loop, through
`carried_scalar`, through a `cond` that does not compute on it), a clear flag proves it is
its entry object after the loop: no code read it as the loop's type, no other code
assigned it. A backend then gives back the entry object where the flag is clear and the
loop's value where it is set (`entry_unless_ran`, a parameter of the enclosing loop's
node), instead of running the loop again with NumPy.

Where the enclosing body reads the value (`y[i] = t * 2.0`) or other code assigns it
(`t = x[i]`), nothing is proven and the flag keeps its check.

    >>> entry_unless_ran((first, body), ("t", "k"), {"t"}, indexed=True)  # doctest: +SKIP
    ('t',)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from .graph import Graph, Node
from .meta import ArrayMeta


def entry_unless_ran(
    graphs: Sequence[Graph | None],
    carried: Sequence[str],
    flagged: Collection[str],
    *,
    indexed: bool,
) -> tuple[str, ...]:
    """The `carried` locals of `flagged` that each graph of `graphs` (a loop's body and its
    first iteration) gives back as it took them, computing on them nowhere, unless an inner
    loop flagged for them runs; `indexed`: the graphs' first placeholder is a `for` index."""
    start = 1 if indexed else 0
    return tuple(
        name
        for k, name in enumerate(carried)
        if name in flagged
        and all(
            graph is None or _walk(graph, {graph.placeholders[start + k]}, name) == frozenset({k})
            for graph in graphs
        )
    )


def computes_unless_ran(node: Node, name: str) -> bool:
    """Whether loop node `node` (a `for_loop` or `while_loop`) computes on local `name`
    where no inner loop flagged for it may have run: on the entry object's type in eager,
    on the loop's type in a backend that keeps the loop's types, so that backend may not
    run the loop. The local is carried by `node`, or assigned anew in each iteration and
    read after an inner loop; an op whose other operand is a NumPy value of the loop's
    dtype (`z - bound` with a float64 `bound`) computes the same on both (NEP 50).

    >>> computes_unless_ran(graph.nodes[1], "t")  # doctest: +SKIP
    True
    """
    params = dict(node.params)
    start = 1 if node.op is not None and node.op.name == "for_loop" else 0
    carried: int = params["carried"]
    for graph in (params["body"], params.get("first")):
        if graph is None:
            continue
        named = [p for p in graph.placeholders[start : start + carried] if p.name == name]
        if _walk(graph, set(named), name, strict=False) is None:
            return True
    return False


def may_hold_entry(
    graph: Graph, seeds: Collection[Node], *, through_loops: bool = True
) -> frozenset[int]:
    """The outputs of `graph` that may be the very object one of its values `seeds` holds
    (a loop's carried local as it entered the loop): passed along by `carried_scalar`,
    by a `cond` branch that hands it back, by an inner loop that carries it (an empty
    range, an iteration that keeps it). A value computed from it is another object.
    A backend that carries the local as a NumPy value gives back the entry object itself
    where no branch assigned the local (`if x[i] > best: best = x[i]`; eager's Python
    float stays one). Not `through_loops`: inner loops give back new objects (a local
    whose inner loops' run-time flags a backend reads instead).

    >>> may_hold_entry(body, {body.placeholders[1]})  # doctest: +SKIP
    frozenset({0})
    """
    values = set(seeds)
    held: dict[Node, frozenset[int]] = {}
    for node in graph.nodes:
        if node.op is None:
            continue
        if node.op.name == "loop_output":
            if dict(node.params)["index"] in held.get(node.inputs[0], ()):
                values.add(node)
            continue
        if not any(_holds(value, values) for value in node.inputs):
            continue
        if node.op.name == "carried_scalar":
            values.add(node)
        elif node.op.name == "cond":
            held[node] = _cond_may_hold(node, values, through_loops)
        elif node.op.name in _TESTED and through_loops:
            held[node] = _loop_may_hold(node, values)
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    return frozenset(k for k, value in enumerate(outputs) if _holds(value, values))


def kept_by_branches(graphs: Sequence[Graph | None], names: Collection[str]) -> tuple[str, ...]:
    """The carried locals of `names` (a loop's, retyped by it) that a `cond` branch of one
    of `graphs` (its body and first iteration, placeholders named for the locals) may
    leave as they entered (`may_hold_entry`): their type after the loop follows the
    branches taken, not only whether the loop ran.

    >>> kept_by_branches((first, body), ("best",))  # doctest: +SKIP
    ('best',)
    """
    found = []
    for name in names:
        for graph in graphs:
            if graph is None:
                continue
            places = [place for place in graph.placeholders if place.name == name]
            outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
            held = may_hold_entry(graph, places) if places else frozenset()
            if any(outputs[k] is not places[0] for k in held):
                found.append(name)
                break
    return tuple(found)


def own_entry_results(graph: Graph) -> dict[Node, type]:
    """The `loop_output`s of `graph` (a loop body) typed as NumPy values that may be the
    Python scalar the iteration gave a local (`s = 0.1` per row, then an inner loop or an
    `if` whose branch may assign `s = x[i, j]`), each with that scalar's type: a loop that
    carries a Python constant its body may hand back (`may_hold_entry`), a `cond` branch
    that hands back a Python constant, or one of these passed on. A backend that types
    the body for the NumPy value flags them at run time or runs them with NumPy.

    >>> own_entry_results(body)  # doctest: +SKIP
    {v2: <class 'float'>}
    """
    found: dict[Node, type] = {}
    for node in graph.nodes:
        if node.op is None or node.op.name != "loop_output":
            continue
        source, k = node.inputs[0], dict(node.params)["index"]
        if not isinstance(node.meta, ArrayMeta) or not isinstance(source, Node):
            continue
        kind = _own_entry_of(source, k, found)
        if kind is not None:
            found[node] = kind
    return found


def _own_entry_of(source: Node, k: int, found: dict[Node, type]) -> type | None:
    # The Python type of the constant that result `k` of control-flow node `source` may
    # hand back (`found`: the values of the graph that may be one already), or None.
    assert source.op is not None
    params = dict(source.params)
    if source.op.name == "cond":
        for branch in (params["then_branch"], params["else_branch"]):
            outputs = branch.output if isinstance(branch.output, tuple) else (branch.output,)
            given = dict(zip(branch.placeholders, source.inputs[1:], strict=True))
            value = given.get(outputs[k], outputs[k])
            kind = _constant_kind(value, found)
            if kind is not None:
                return kind
        return None
    if source.op.name not in ("for_loop", "while_loop"):
        return None
    start = _TESTED[source.op.name]
    kind = _constant_kind(source.inputs[start + k], found)
    if kind is None:
        return None
    offset = 1 if source.op.name == "for_loop" else 0
    for graph in (params["body"], params.get("first")):
        if graph is None:
            continue
        place = graph.placeholders[offset + k]
        outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
        if outputs[k] is not place and k in may_hold_entry(graph, [place]):
            return kind
    return None


def _constant_kind(value: Any, found: dict[Node, type]) -> type | None:
    # A Python bool, int or float constant's type, or that of a value of `found`.
    if isinstance(value, Node):
        return found.get(value)
    return type(value) if type(value) in (bool, int, float) else None


def _holds(value: Any, values: set[Node]) -> bool:
    return isinstance(value, Node) and value in values


def _cond_may_hold(node: Node, values: set[Node], through_loops: bool) -> frozenset[int]:
    # The results of `cond` node `node` that some branch may hand back as one of `values`.
    params = dict(node.params)
    found: frozenset[int] = frozenset()
    for branch in (params["then_branch"], params["else_branch"]):
        pairs = zip(branch.placeholders, node.inputs[1:], strict=True)
        seeds = [place for place, value in pairs if _holds(value, values)]
        found |= may_hold_entry(branch, seeds, through_loops=through_loops)
    return found


def _loop_may_hold(node: Node, values: set[Node]) -> frozenset[int]:
    # The results of loop node `node` that may be one of `values`: a carried value that
    # enters as one (the loop may not run), or one its body (or first iteration) may hand
    # back as one, to the fixed point.
    assert node.op is not None
    params = dict(node.params)
    start = _TESTED[node.op.name]
    offset = 1 if node.op.name == "for_loop" else 0
    carried: int = params["carried"]
    inputs = node.inputs[start:]
    found = frozenset(k for k in range(carried) if _holds(inputs[k], values))
    graphs = [graph for graph in (params["body"], params.get("first")) if graph is not None]
    while True:
        more = set(found)
        for graph in graphs:
            places = graph.placeholders[offset:]
            seeds = [
                place
                for k, (place, value) in enumerate(zip(places, inputs, strict=True))
                if k in found or (k >= carried and _holds(value, values))
            ]
            more |= {k for k in may_hold_entry(graph, seeds) if k < carried}
        if more == found:
            return found
        found = frozenset(more)


def _walk(
    graph: Graph, seeds: set[Node], name: str, stop: int | None = None, *, strict: bool = True
) -> frozenset[int] | None:
    # The outputs of `graph` that hold the entry object its values `seeds` hold, wherever
    # no inner loop flagged for local `name` runs; None where some node computes on it.
    # `stop`: the output that stops a breaking body; a `cond` branch that leaves it False
    # runs only in an iteration that sets the flag, and may compute on the object. Not
    # `strict`: a flagged `for` may compute on it in an iteration that breaks (its results
    # then hold no entry object; a backend that reruns the loop where the flag is clear
    # gives eager's types for them).
    values = set(seeds)
    passing: dict[Node, set[int]] = {}
    if not strict:
        # A local assigned anew in each iteration enters as the flagged loop's result.
        passing.update((loop, {k}) for loop, k in _flagged_results(graph, name))
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    stop_at = _cond_result(outputs[stop]) if stop is not None else None
    for node in graph.nodes:
        if node.op is None:
            continue
        if node.op.name == "loop_output":
            if dict(node.params)["index"] in passing.get(node.inputs[0], ()):
                values.add(node)
            continue
        if not any(value in values for value in node.inputs):
            continue
        held = _passed(node, values, name, stop_at, strict)
        if held is None:
            return None
        if node.op.name == "carried_scalar":
            values.add(node)
        passing[node] = held | passing.get(node, set())
    return frozenset(k for k, value in enumerate(outputs) if value in values)


def _flagged_results(graph: Graph, name: str) -> list[tuple[Node, int]]:
    # The loops of `graph` flagged for local `name`, with the index of its carried value.
    found = []
    for node in graph.nodes:
        params = dict(node.params)
        if node.op is None or name not in params.get("typed_if_ran", ()):
            continue
        start = 1 if node.op.name == "for_loop" else 0
        body: Graph = params["body"]
        carried = body.placeholders[start : start + params["carried"]]
        found += [(node, k) for k, placeholder in enumerate(carried) if placeholder.name == name]
    return found


def _same_either_way(node: Node, values: set[Node]) -> bool:
    # A NumPy op of two 0-d operands, one of `values` (the loop's dtype in a backend) and
    # the other a NumPy value of that dtype: on a Python scalar of the entry type, NEP 50
    # converts it to that dtype first (exactly: a float to float64, an int to int64).
    if len(node.inputs) != 2 or node.params or not isinstance(node.meta, ArrayMeta):
        return False
    metas = [value.meta if isinstance(value, Node) else None for value in node.inputs]
    if not all(isinstance(meta, ArrayMeta) and meta.shape == () for meta in metas):
        return False
    ours = [value in values for value in node.inputs]
    dtypes = {meta.dtype for meta in metas if isinstance(meta, ArrayMeta)}
    return ours.count(True) == 1 and len(dtypes) == 1


def _cond_result(value: Any) -> tuple[Node, int] | None:
    # The cond and result index that a `loop_output` value projects, or None.
    if not isinstance(value, Node) or value.op is None or value.op.name != "loop_output":
        return None
    source = value.inputs[0]
    if not isinstance(source, Node) or source.op is None or source.op.name != "cond":
        return None
    return source, dict(value.params)["index"]


def _passed(
    node: Node, values: set[Node], name: str, stop_at: tuple[Node, int] | None, strict: bool
) -> set[int] | None:
    # The results of `node` (which reads some of `values`) that are the entry object where
    # no loop flagged for `name` runs; None where it computes on the object.
    assert node.op is not None
    params = dict(node.params)
    flagged = name in params.get("typed_if_ran", ())
    if node.op.name == "carried_scalar":
        return {0}
    if not strict and _same_either_way(node, values):
        return set()
    if any(value in values for value in node.inputs[: _TESTED.get(node.op.name, 0)]):
        return None  # a test or a bound computed from the object
    if node.op.name == "while_loop" and flagged:
        # Not run: each result is its initial value. Its body runs only where it runs,
        # which sets the flag.
        return {k for k in range(params["carried"]) if node.inputs[1 + k] in values}
    if node.op.name == "for_loop" and flagged:
        return _for_passed(node, values, name, strict)
    if node.op.name == "cond":
        return _cond_passed(node, values, name, stop_at, strict)
    return None


# NOTE: how many leading inputs of a control-flow node it computes on (tests, bounds).
_TESTED = {"while_loop": 1, "cond": 1, "for_loop": 3}


def _for_passed(node: Node, values: set[Node], name: str, strict: bool) -> set[int] | None:
    # A flagged `for` whose iterations all broke (the flag is set by one that did not):
    # its range was empty (each result its initial value), or its first iteration broke
    # and gave back what its body gives under the stop flag.
    params = dict(node.params)
    carried: int = params["carried"]
    inputs = node.inputs[3:]
    held = {k for k in range(carried) if inputs[k] in values}
    if not params.get("breaks"):
        return held
    for graph in (params["body"], params.get("first")):
        if graph is None:
            continue
        seeds = {graph.placeholders[1 + k] for k, value in enumerate(inputs) if value in values}
        kept = _walk(graph, seeds, name, stop=carried, strict=strict)
        if kept is None and strict:
            return None
        held &= kept or frozenset()
    return held


def _cond_passed(
    node: Node, values: set[Node], name: str, stop_at: tuple[Node, int] | None, strict: bool
) -> set[int] | None:
    # Each branch walked on the placeholders the object enters it as; a result is the
    # object where every branch that may stop the iteration gives it back.
    params = dict(node.params)
    branches: tuple[Graph, Graph] = (params["then_branch"], params["else_branch"])
    count = len(branches[0].output) if isinstance(branches[0].output, tuple) else 1
    held = set(range(count))
    for branch in branches:
        outputs = branch.output if isinstance(branch.output, tuple) else (branch.output,)
        if stop_at is not None and stop_at[0] is node and outputs[stop_at[1]] is False:
            continue  # the iteration goes on and sets the flag
        seeds = {
            placeholder
            for placeholder, value in zip(branch.placeholders, node.inputs[1:], strict=True)
            if value in values
        }
        kept = _walk(branch, seeds, name, strict=strict)
        if kept is None:
            return None
        held &= kept
    return held
