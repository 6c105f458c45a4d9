"""The VJP of a `for_loop`: a loop that stacks the carried values, then a reverse loop.

`grad` keeps the loops it differentiates when their VJP is one of this shape (see
`LoopVjpUnsupported` for what is not): the backward of a loop over `range(start, stop,
step)` (T iterations) with carried arrays `c` and loop invariants `w` is

- a forward loop like the original that also writes each iteration's carried values, as
  they enter it, into one stack per carried value (`stack[k] = c`, shape `(T, *c.shape)`);
- a loop over `k = T - 1, ..., 0` carrying the cotangent of each float carried value and a
  sum per invariant: its body reads `c = stack[k]`, runs the forward body again on it
  (recomputing that iteration's intermediates) and appends the body's reverse sweep, which
  gives the cotangent of `c` and of `w` for that iteration.

Both are `for_loop` nodes: the graph does not grow with T, so compiling the gradient of a
100,000-step recurrence costs what 10 steps cost. Nor does it change with T: where the
bounds are graph values, T is too, and the stacks take their length at run time
(`loop_stacks`). Memory is T times the carried values (what JAX's `scan` saves), not T
times every intermediate. A later sweep through the stacking loop itself (the pullback of
`vjp` in compiled code, whose forward loop it became) appends the reverse loop alone,
reading the stacks recorded in `VjpContext.stacked_loops`.

    >>> grad(lambda x: recurrence(x, 100_000))(x)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    ScalarMeta,
    add_loop,
    get_op,
    mentions_loop_symbol,
)

from .joint import append_backward, input_cotangent
from .loop_stacks import (
    LoopStacks,
    TripCount,
    forward_index,
    iteration_of,
    read_row,
    stack_metas,
    trip_count,
    write_row,
    zero_stacks,
)
from .vjp_table import VjpContext, differentiable, register_vjp

__all__ = ["LoopVjpUnsupported", "loop_error"]


class LoopVjpUnsupported(NotImplementedError):  # noqa: N818 - it names the event
    """A loop whose VJP this module does not build (the message names the loop, its line
    and why); `grad` then captures the function again with its loops unrolled."""


def loop_error(graph: Graph, loop: Node, reason: str) -> LoopVjpUnsupported:
    """The error for `loop`, whose gradient is not built because of `reason`.

    >>> str(loop_error(graph, node, "a while loop"))  # doctest: +SKIP
    'grad through the loop at f.py:3 (`v0 = while_loop(...)`): a while loop'
    """
    line = graph.locations.get(loop)
    where = f" at {line.filename}:{line.lineno}" if line is not None else ""
    return LoopVjpUnsupported(
        f"grad through the loop{where} (`{loop.format()}`) is not supported yet: {reason}; "
        "differentiate a function without the loop, or run it eagerly with numpile.disable()"
    )


@register_vjp(get_op("for_loop"))
def _for_loop_vjp(ctx: VjpContext) -> list[Node | None]:
    node, graph = ctx.node, ctx.graph
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    start, stop, step = node.inputs[:3]
    _check(graph, node, params, body, carried)
    init = list(node.inputs[3 : 3 + carried])
    invariants = list(node.inputs[3 + carried :])
    metas = [p.meta for p in body.placeholders[1 : 1 + carried]]
    floats = [k for k, meta in enumerate(metas) if differentiable(meta)]
    summed = [
        m for m, value in enumerate(invariants) if ctx.wants(3 + carried + m) and _is_array(value)
    ]
    grads: list[Node | None] = [None] * len(node.inputs)
    stacked = ctx.stacked_loops.get(node)
    if stacked is not None:
        return _reverse_of_stacking(ctx, stacked)
    if _known_empty(start, stop, step):
        for k in floats:
            grads[3 + k] = ctx.items.get(k) if ctx.wants(3 + k) else None
        return grads
    first = params.get("first")
    entered: list[Any] = init
    first_nodes: list[Node] = []
    if first is not None and not _same_computation(first, body):
        if not all(type(bound) is int for bound in (start, stop)):
            raise loop_error(
                graph,
                node,
                "a first iteration on other types (a Python scalar the loop makes a NumPy "
                "scalar) with a trip count known only at run time",
            )
        # The first iteration runs on other types (a Python float the loop makes a NumPy
        # scalar): inlined here, and the loop runs from the second.
        before = len(graph.nodes)
        entered = _inline(graph, first, [start, *init, *invariants])
        first_nodes = [n for n in graph.nodes[before:] if n.op is not None]
        start += step
    seeds = {k: ctx.items[k] for k in floats if k in ctx.items}
    sums: dict[int, Node] = {}
    bounds = (start, stop, step)
    if seeds and not _known_empty(*bounds):
        trips = trip_count(graph, bounds)
        stacking, stacks = _stacking_loop(graph, bounds, trips, body, entered, invariants)
        # The stacking loop computes the carried values too: the forward runs it alone.
        ctx.shared_loops[node] = stacking
        if not first_nodes:
            held = LoopStacks(body, bounds, trips, tuple(stacks), len(invariants))
            ctx.stacked_loops[stacking] = held
        seeds, sums = _through_loop(graph, body, bounds, trips, stacks, invariants, seeds, summed)
    if first_nodes:
        # The first iteration's sweep gives each input node's whole cotangent (through
        # every place it enters the loop): it goes to the node's first position only.
        targets = [v for v in (*init, *invariants) if _is_array(v)]
        pairs = [(entered[k], ct) for k, ct in seeds.items() if isinstance(entered[k], Node)]
        found = append_backward(graph, first_nodes, targets, pairs)
        for m, total in sums.items():
            _accumulate(graph, found, invariants[m], total)
        given: set[Node] = set()
        for position, value in enumerate(node.inputs):
            if isinstance(value, Node) and value in found and value not in given:
                given.add(value)
                grads[position] = found[value] if ctx.wants(position) else None
        return grads
    for k, ct in seeds.items():
        if ctx.wants(3 + k):
            grads[3 + k] = ct
    for m, total in sums.items():
        grads[3 + carried + m] = total
    return grads


def _reverse_of_stacking(ctx: VjpContext, stacked: LoopStacks) -> list[Node | None]:
    # The VJP of a stacking loop through its own stacks: the reverse loop alone. Its inputs
    # are the bounds, the carried values, the stacks' zeros, the invariants, and the start
    # where it is a node (read by the reverse loop from `stacked.bounds`).
    node, graph, body = ctx.node, ctx.graph, stacked.body
    carried = len(body.placeholders) - 1 - stacked.invariants
    first_invariant = 3 + node.kwargs["carried"]
    invariants = list(node.inputs[first_invariant : first_invariant + stacked.invariants])
    metas = [p.meta for p in body.placeholders[1 : 1 + carried]]
    floats = [k for k, meta in enumerate(metas) if differentiable(meta)]
    summed = [
        m
        for m, value in enumerate(invariants)
        if ctx.wants(first_invariant + m) and _is_array(value)
    ]
    seeds = {k: ctx.items[k] for k in floats if k in ctx.items}
    grads: list[Node | None] = [None] * len(node.inputs)
    if not seeds:
        return grads
    stacks = list(stacked.stacks)
    found, sums = _through_loop(
        graph, body, stacked.bounds, stacked.trips, stacks, invariants, seeds, summed
    )
    for k, cotangent in found.items():
        if ctx.wants(3 + k):
            grads[3 + k] = cotangent
    for m, total in sums.items():
        grads[first_invariant + m] = total
    return grads


def _accumulate(graph: Graph, found: dict[Node, Node], value: Node, cotangent: Node) -> None:
    previous = found.get(value)
    found[value] = cotangent if previous is None else graph.call(get_op("add"), previous, cotangent)


def _known_empty(start: Any, stop: Any, step: int) -> bool:
    # Whether the range is empty whatever the run-time values (both bounds are ints).
    return type(start) is int and type(stop) is int and not range(start, stop, step)


def _through_loop(
    graph: Graph,
    body: Graph,
    bounds: tuple[Any, Any, int],
    trips: TripCount,
    stacks: list[Node],
    invariants: list[Any],
    seeds: dict[int, Node],
    summed: list[int],
) -> tuple[dict[int, Node], dict[int, Node]]:
    # The cotangents of the carried values entering the loop over range(*bounds), from
    # those of its final ones (`seeds`, by carried position), and the invariants' sums;
    # `stacks` hold the carried values entering each iteration (`_stacking_loop`).
    start, _, step = bounds
    metas = [p.meta for p in body.placeholders[1 : 1 + len(stacks)]]
    floats = [k for k, meta in enumerate(metas) if differentiable(meta)]
    reverse = _reverse_body(body, (start, step), metas, floats, invariants, summed, stacks)
    cotangents = [seeds[k] if k in seeds else _zeros(graph, metas[k]) for k in floats]
    sums = [_zeros(graph, invariants[m].meta) for m in summed]
    count = trips.value
    last = _minus_one(graph, count) if isinstance(count, Node) else count - 1
    kept = [*stacks, *invariants, *_nodes(start)]
    outputs = add_loop(graph, (last, -1, -1), [*cotangents, *sums], kept, reverse, ())
    found = dict(zip(floats, outputs, strict=False))
    return found, dict(zip(summed, outputs[len(floats) :], strict=True))


def _minus_one(graph: Graph, count: Node) -> Node:
    return graph.call(get_op("py_binary"), count, 1, operator="sub")


def _nodes(start: Any) -> list[Node]:
    # A start computed at run time is one more invariant of the loops the VJP builds (their
    # bodies map the loop index to the iteration number and back).
    return [start] if isinstance(start, Node) else []


def _check(graph: Graph, node: Node, params: dict[str, Any], body: Graph, carried: int) -> None:
    # What the VJP below does not cover raises, naming the loop.
    assert node.op is not None
    if node.op.mutates:
        raise loop_error(graph, node, "the loop writes arrays in place")
    if params.get("breaks"):
        raise loop_error(graph, node, "a loop that breaks")
    if type(node.inputs[2]) is not int:
        raise loop_error(graph, node, "a step known only at run time")
    for placeholder in body.placeholders[1 : 1 + carried]:
        if not isinstance(placeholder.meta, ArrayMeta):
            raise loop_error(graph, node, f"a carried Python {placeholder.meta}")
    for inner in body.nodes:
        if isinstance(inner.meta, ArrayMeta) and mentions_loop_symbol(inner.meta.shape):
            raise loop_error(graph, node, "a shape that depends on the loop index")


def _same_computation(first: Graph, body: Graph) -> bool:
    # Whether the first iteration's graph is the body's on arguments of the same dtypes and
    # shapes (it differs in the strides of an argument array, say): the body stands for it.
    return _kinds(first) == _kinds(body) and _program(first) == _program(body)


def _kinds(graph: Graph) -> list[Any]:
    return [
        (meta.dtype, tuple(meta.shape)) if isinstance(meta, ArrayMeta) else meta
        for meta in (node.meta for node in graph.placeholders)
    ]


def _program(graph: Graph) -> list[Any]:
    # `graph`'s steps, names left out: each node's op, inputs (by position), params and
    # metadata. A nested loop's first iteration counts only where it is not its body's
    # computation (its strides differ in the outer loop's first iteration, say).
    position = {node: k for k, node in enumerate(graph.nodes)}

    def value(item: Any) -> Any:
        if isinstance(item, Node):
            return ("node", position[item])
        if isinstance(item, Graph):
            return (_kinds(item), _program(item))
        return repr(item)

    steps: list[Any] = []
    for node in graph.nodes:
        if node.op is None:
            continue
        params = dict(node.params)
        if _first_is_body(params):
            del params["first"]
        inputs = [value(item) for item in node.inputs]
        kept = [(key, value(item)) for key, item in params.items()]
        steps.append((node.op.name, inputs, kept, str(node.meta)))
    steps.append([value(item) for item in graph.output])
    return steps


def _first_is_body(params: dict[str, Any]) -> bool:
    # Whether these are the params of a loop whose first iteration is its body's computation.
    first, body = params.get("first"), params.get("body")
    if not isinstance(first, Graph) or not isinstance(body, Graph):
        return False
    return _same_computation(first, body)


def _is_array(value: Any) -> bool:
    return isinstance(value, Node) and differentiable(value.meta)


def _zeros(graph: Graph, meta: Any) -> Node:
    assert isinstance(meta, ArrayMeta)
    return graph.call(get_op("zeros"), shape=tuple(meta.shape), dtype=meta.dtype)


def _stacking_loop(
    graph: Graph,
    bounds: tuple[Any, Any, int],
    trips: TripCount,
    body: Graph,
    init: list[Any],
    invariants: list[Any],
) -> tuple[Node, list[Node]]:
    # The forward loop again, writing each carried value as it enters iteration k into
    # `stack[k]`: the loop node and its stacks (carried, written in place). Its first
    # outputs are the forward loop's (`share_forward_loops` keeps this loop alone).
    start, _, step = bounds
    carried = len(init)
    metas = stack_metas(trips, [p.meta for p in body.placeholders[1 : 1 + carried]])
    new = Graph()
    index = new.placeholder("i", body.placeholders[0].meta)
    carries = [new.placeholder(p.name, p.meta) for p in body.placeholders[1 : 1 + carried]]
    held = [new.placeholder(f"stack{k}", meta) for k, meta in enumerate(metas)]
    kept = [new.placeholder(p.name, p.meta) for p in body.placeholders[1 + carried :]]
    position = iteration_of(new, index, _start_placeholder(new, start), step)
    written = [
        write_row(new, stack, carry, position) for stack, carry in zip(held, carries, strict=True)
    ]
    outs = _inline(new, body, [index, *carries, *kept])
    new.output = (*outs, *written)
    zeros = zero_stacks(graph, trips, metas)
    results = add_loop(graph, bounds, [*init, *zeros], [*invariants, *_nodes(start)], new, ())
    loop = results[0].inputs[0]
    assert isinstance(loop, Node)
    return loop, results[carried:]


def _start_placeholder(graph: Graph, start: Any) -> Any:
    # The loop's start in a body of the VJP: an int, or its placeholder (see `_nodes`).
    return graph.placeholder("first_index", ScalarMeta(int)) if isinstance(start, Node) else start


def _reverse_body(
    body: Graph,
    bounds: tuple[Any, int],
    metas: Sequence[Any],
    floats: Sequence[int],
    invariants: Sequence[Any],
    summed: Sequence[int],
    stacks: Sequence[Node],
) -> Graph:
    # One backward iteration k: the cotangents of the float carried values entering
    # iteration k + 1 (and the sums of the invariants' so far) -> those entering k.
    start, step = bounds
    new = Graph()
    position = new.placeholder("k", body.placeholders[0].meta)
    cotangents = [new.placeholder(f"ct{k}", metas[k]) for k in floats]
    sums = [new.placeholder(f"sum{m}", invariants[m].meta) for m in summed]
    held = [new.placeholder(f"stack{k}", stack.meta) for k, stack in enumerate(stacks)]
    carried = len(metas)
    kept = [new.placeholder(p.name, p.meta) for p in body.placeholders[1 + carried :]]
    index = forward_index(new, position, _start_placeholder(new, start), step)
    carries = [read_row(new, stack, position) for stack in held]
    before = len(new.nodes)
    outs = _inline(new, body, [index, *carries, *kept])
    copied = [n for n in new.nodes[before:] if n.op is not None]
    # Reads of a summed invariant at the index (`x[i]`, `x[i : i + 2]`) add their
    # cotangent into the sum where they read, in place: a dense cotangent per iteration
    # would cost the invariant's size each time.
    sparse = {
        n: summed.index(kept.index(n.inputs[0]))
        for n in copied
        if n.op is not None
        and n.op.name in _READS
        and n.inputs[0] in kept
        and kept.index(n.inputs[0]) in summed
    }
    sweep = [n for n in copied if n not in sparse]
    targets = [carries[k] for k in floats] + [kept[m] for m in summed] + list(sparse)
    seeds = [(outs[k], ct) for k, ct in zip(floats, cotangents, strict=True)]
    found = append_backward(new, sweep, targets, seeds)
    results: list[Node] = []
    for k in floats:
        result = input_cotangent(new, found, carries[k])
        assert result is not None
        results.append(result)
    totals = list(sums)
    for slot, (m, total) in enumerate(zip(summed, sums, strict=True)):
        if kept[m] in found:
            totals[slot] = new.call(get_op("add"), total, found[kept[m]])
    for read, slot in sparse.items():
        if read in found:
            totals[slot] = _add_at(new, totals[slot], read, found[read])
    new.output = (*results, *totals)
    return new


# NOTE: ops reading an array at the loop's run-time index: (read op, its write op).
_READS = {"getitem_at": "setitem_at", "element_at": "setitem_at"}


def _add_at(graph: Graph, total: Node, read: Node, cotangent: Node) -> Node:
    # total[index of `read`] += cotangent, in place (the sum is the loop's own array).
    assert read.op is not None
    scalars = read.inputs[1:]
    index = read.kwargs["index"]
    current = graph.add_node(read.op, (total, *scalars), {"index": index}, read.meta)
    meta = read.meta
    assert isinstance(meta, ArrayMeta)
    fresh = ArrayMeta(meta.shape, meta.dtype)
    summed = graph.add_node(get_op("add"), (current, cotangent), {}, fresh)
    write = get_op(_READS[read.op.name])
    return graph.add_node(write, (total, summed, *scalars), {"index": index}, total.meta)


def _inline(graph: Graph, body: Graph, values: Sequence[Any]) -> list[Any]:
    # Copy `body`'s nodes into `graph` with its placeholders bound to `values`; its outputs.
    mapping: dict[Node, Any] = dict(zip(body.placeholders, values, strict=True))
    for inner in body.nodes:
        if inner.op is None:
            continue
        inputs = tuple(mapping[v] if isinstance(v, Node) else v for v in inner.inputs)
        mapping[inner] = graph.add_node(inner.op, inputs, inner.kwargs, inner.meta)
    return [mapping[v] if isinstance(v, Node) else v for v in body.output]


@register_vjp(get_op("getitem_at"), get_op("element_at"))
def _read_at_vjp(ctx: VjpContext) -> list[Node | None]:
    # x[i] (or x[i, 1:], x[i : i + 2]) at the loop's run-time index: the cotangent where
    # it was read, zeros elsewhere. (A reverse loop body adds reads of an invariant into
    # its sum in place instead, see _add_at.)
    node, graph = ctx.node, ctx.graph
    source = ctx.input_meta(0)
    cotangent = ctx.cotangent.meta
    assert isinstance(cotangent, ArrayMeta)
    meta = ArrayMeta(source.shape, cotangent.dtype)
    zeros = graph.add_node(get_op("zeros"), (), {"shape": meta.shape, "dtype": meta.dtype}, meta)
    index = node.kwargs["index"]
    scalars = node.inputs[1:]
    write = get_op("setitem_at")
    written = graph.add_node(write, (zeros, ctx.cotangent, *scalars), {"index": index}, meta)
    return [written, *(None for _ in scalars)]


@register_vjp(get_op("carried_scalar"))
def _carried_scalar_vjp(ctx: VjpContext) -> list[Node | None]:
    # A 0-d value as the NumPy scalar a loop carries: the identity.
    return [ctx.cotangent]
