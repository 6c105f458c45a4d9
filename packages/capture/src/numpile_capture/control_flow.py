"""Structured control flow: loops that stay loops in the graph.

A `for_loop` node runs its body subgraph once per value of a Python `range`; every
backend reads the same node (the eager interpreter runs the body per iteration):

    graph(x: float64[5]):
      v0 = for_loop(0, 5, 1, 0.0, x, body=<graph>, carried=1)  # tuple
        body(i: int, s: float, x: float64[5]):
          v0 = element_at(x, i, index=(scalars[0],))  # float64[]
          v1 = multiply(v0, v0)  # float64[]
          v2 = add(s, v1)  # float64[]
          return (v2,)
      v1 = loop_output(v0, index=0)  # float64[]
      return v1

Inputs of a `for_loop` node: `start`, `stop`, `step` (ints or int nodes: a trip count is
a run-time value, never a guard), the initial carried values, then the loop-invariant
inputs. The body's placeholders are the index, the carried values and the invariants,
in that order; its output is the tuple of the new carried values, whose metadata equals
the carried placeholders' (capture iterates the types to a fixpoint). Arrays the body
writes in place are inputs the node declares in its op's `mutates`: they stay in place,
never copied per iteration. The node's value is the tuple of the final carried values
(the initial ones, untouched, for an empty range); `loop_output` projects one of them.
A loop whose body may `break` has `breaks=True`: the body returns one more value after
the carried ones, a bool that stops the loop after that iteration (see `loop_exit`).

Invariants: a body reads only its own placeholders and nodes; the structural hash and
the printed graph cover bodies (they print as indented blocks).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .graph import Graph, Node
from .meta import ArrayMeta, ScalarMeta
from .op import Op, OpKind, register_op
from .ops.loop_values import ScalarSlot
from .pytree import tree_map
from .scalar_operators import SCALAR_OPERATORS
from .source_line import SourceLine


def _for_loop_meta(
    *inputs: Any,
    body: Graph,
    carried: int,
    first: Graph | None = None,
    breaks: bool = False,
    typed_if_ran: tuple[str, ...] = (),
    entry_unless_ran: tuple[str, ...] = (),
) -> ScalarMeta:
    if len(body.placeholders) != 1 + len(inputs) - 3:
        raise ValueError(
            f"for_loop: the body takes {len(body.placeholders)} inputs, "
            f"the node gives {1 + len(inputs) - 3}"
        )
    return ScalarMeta(tuple)


def _for_loop_impl(
    start: Any,
    stop: Any,
    step: Any,
    *values: Any,
    body: Graph,
    carried: int,
    first: Any = None,
    breaks: bool = False,
    typed_if_ran: tuple[str, ...] = (),
    entry_unless_ran: tuple[str, ...] = (),
) -> Any:
    # `typed_if_ran` and `entry_unless_ran` change nothing here: the loop gives back the
    # objects eager leaves.
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    if first is not None:
        # The first iteration on the initial types (Python scalars), again while the carried
        # values keep them (an inner loop that did not run), then the body.
        kept = _types(values[:carried])
        run_first = body_runner(first)
        for index in range(start, stop, step):
            state = run_first((index, *values))
            if breaks and state[carried]:
                return tuple(state[:carried])
            values = (*state[:carried], *values[carried:])
            start += step
            if _types(values[:carried]) != kept:
                break
    custom = _LOOP_RUNNERS.get(body)
    if custom is not None:
        return custom(range(start, stop, step), values, carried)
    state = tuple(values[:carried])
    invariants = values[carried:]
    run = body_runner(body)
    if breaks:
        for index in range(start, stop, step):
            *new, stop_now = run((index, *state, *invariants))
            state = tuple(new)
            if stop_now:
                break
        return state
    for index in range(start, stop, step):
        state = run((index, *state, *invariants))
    return state


def _types(values: tuple[Any, ...]) -> list[type]:
    return [type(value) for value in values]


LoopRunner = Callable[[range, tuple[Any, ...], int], tuple[Any, ...]]

# NOTE: per body graph, a backend's way to run its loop (the inductor's host loop calling
# the compiled body); a backend registers it on a body graph of its own.
_LOOP_RUNNERS: weakref.WeakKeyDictionary[Graph, LoopRunner] = weakref.WeakKeyDictionary()


def set_loop_runner(body: Graph, runner: LoopRunner) -> None:
    """Run every loop whose body is `body` with `runner(indices, values, carried)`, which
    returns the final carried values (`values` are the node's carried and invariant inputs).

    >>> set_loop_runner(Graph(), lambda indices, values, carried: values[:carried])
    """
    _LOOP_RUNNERS[body] = runner


WhileRunner = Callable[[bool, tuple[Any, ...], int], tuple[Any, ...] | None]

# NOTE: per body graph, a backend's way to run its `while_loop` (the inductor's C module of
# a loop nested in a body that runs op by op), as `_LOOP_RUNNERS` for `for_loop` bodies.
_WHILE_RUNNERS: weakref.WeakKeyDictionary[Graph, WhileRunner] = weakref.WeakKeyDictionary()


def set_while_runner(body: Graph, runner: WhileRunner) -> None:
    """Run every `while_loop` whose body is `body` through `runner(going, values, carried)`
    first: `going` says whether the loop enters, `values` are the node's carried and
    invariant inputs (before any pass: a first pass on other types is the runner's too);
    it returns the final carried values, or None to have the loop run as captured.

    >>> set_while_runner(Graph(), lambda going, values, carried: None)
    """
    _WHILE_RUNNERS[body] = runner


# NOTE: per body graph, its runner (bodies are not changed once their loop node is made).
_RUNNERS: weakref.WeakKeyDictionary[Graph, Callable[[tuple[Any, ...]], tuple[Any, ...]]] = (
    weakref.WeakKeyDictionary()
)


def set_body_runner(body: Graph, runner: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> None:
    """Run `body` (a `cond` branch) with `runner(arguments)` instead of op by op: a backend's
    compiled form of it.

    >>> set_body_runner(Graph(), lambda arguments: ())
    """
    _RUNNERS[body] = runner


def body_runner(body: Graph) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A function running `body` once on its inputs, as `run_graph` does (each op called
    from its user's line, values dropped after their last use), planned once per body:
    a loop calls it per iteration.

    >>> body_runner(Graph())(())  # an empty body returns its output, None
    """
    found = _RUNNERS.get(body)
    if found is None:
        found = _plan(body)
        _RUNNERS[body] = found
    return found


def _plan(body: Graph) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    slots = {node: index for index, node in enumerate(body.placeholders)}
    size = len(slots)
    last: dict[Node, int] = {}
    steps: list[tuple[Callable[..., Any], Callable[..., Any], dict[str, Any], int, list[int]]] = []
    for node in body.nodes:
        if node.op is None:
            continue
        slots[node] = size
        size += 1
    for position, node in enumerate(node for node in body.nodes if node.op is not None):
        for value in node.inputs:
            if isinstance(value, Node):
                last[value] = position
    kept = {slots[node] for node in body.output_nodes()} if body.output is not None else set()
    dead: dict[int, list[int]] = {}
    for value, position in last.items():
        if slots[value] not in kept:
            dead.setdefault(position, []).append(slots[value])
    position = 0
    for node in body.nodes:
        if node.op is None:
            continue
        line = body.locations.get(node)
        call = _caller(node, line)
        steps.append(
            (call, _gather(node.inputs, slots), node.kwargs, slots[node], dead.get(position, []))
        )
        position += 1
    output = body.output
    leaves = output if type(output) is tuple else ()
    # A tuple of nodes and scalar constants (a branch giving a break's stop flag) is gathered
    # as the steps' inputs are: no tree walk per call.
    flat = bool(leaves) and all(isinstance(leaf, (Node, *_SCALAR_LEAVES)) for leaf in leaves)
    gather_output = _gather(leaves, slots) if flat else None

    def read(values: list[Any]) -> Callable[[Any], Any]:
        return lambda leaf: values[slots[leaf]] if isinstance(leaf, Node) else leaf

    def run(arguments: tuple[Any, ...]) -> Any:
        values: list[Any] = [*arguments, *padding]
        for call, gather, kwargs, target, drop in steps:
            values[target] = call(gather(values), kwargs)
            for slot in drop:
                values[slot] = None  # as eager code drops its temporaries
        if gather_output is not None:
            return gather_output(values)
        return tree_map(read(values), output)

    padding = [None] * (size - len(body.placeholders))
    return run


# NOTE: the constants a body's output tuple may hold beside nodes without a tree walk.
_SCALAR_LEAVES = (bool, int, float, complex, np.generic)


def _gather(inputs: Any, slots: dict[Node, int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    # The arguments of a step as a tuple, read from the values list (an itemgetter when
    # every input is a node: no Python loop per step).
    if all(isinstance(value, Node) for value in inputs):
        positions = [slots[value] for value in inputs]
        if len(positions) == 1:
            (only,) = positions
            return lambda values: (values[only],)
        if not positions:
            return lambda values: ()
        getter = operator.itemgetter(*positions)
        return getter
    pairs = [
        (isinstance(value, Node), slots[value] if isinstance(value, Node) else value)
        for value in inputs
    ]
    return lambda values: tuple(values[v] if is_slot else v for is_slot, v in pairs)


def _indexer(index: tuple[Any, ...]) -> Callable[..., Any] | None:
    # x[i] and x[i, j] without building the index item by item (ScalarSlot in order).
    if all(isinstance(item, ScalarSlot) and item.position == k for k, item in enumerate(index)):
        if len(index) == 1:
            return lambda x, i: x[i]
        return lambda x, *scalars: x[scalars]
    return None


def _caller(node: Node, line: SourceLine | None) -> Callable[[list[Any], dict[str, Any]], Any]:
    # Each op called from its user's line, where NumPy's warnings point (see SourceLine).
    op = node.op
    assert op is not None
    impl = op.impl
    # NOTE: the Python operator of a ufunc on NumPy scalars (see scalar_operators): eager's
    # value, dtype and warnings, ~30x faster (NumPy's scalar fast path, not the ufunc
    # machinery). A loop body of scalar work spends its time there.
    fast_operator = SCALAR_OPERATORS.get(op.name)
    if fast_operator is not None and len(node.inputs) in (1, 2) and not node.params:
        ufunc = impl
        scalar_operator = fast_operator
        # NOTE: traced on NumPy scalars (ArrayMeta inputs), both operands may still be
        # Python scalars at run time: a carried `s = 0.0` before the loop made it a NumPy
        # scalar, or one branch of a cond kept it. Eager applied the Python operator then
        # (`s * 0.5` stays a Python float); a ufunc on traced Python scalars stays a ufunc.
        traced_numpy = not any(
            isinstance(value, Node) and isinstance(value.meta, ScalarMeta) for value in node.inputs
        )

        def pick(args: list[Any]) -> Callable[..., Any]:
            if any(isinstance(value, np.generic) for value in args):
                return scalar_operator
            python_scalars = not any(isinstance(value, np.ndarray) for value in args)
            return scalar_operator if traced_numpy and python_scalars else ufunc

        if line is None:
            return lambda args, kwargs: pick(args)(*args)
        return lambda args, kwargs: line.call(pick(args), args, kwargs)
    if op.name in ("element_at", "getitem_at"):
        indexer = _indexer(node.kwargs["index"])
        if indexer is not None:
            fast = indexer
            if line is None:
                return lambda args, kwargs: fast(*args)
            return lambda args, kwargs: line.call(fast, args, {})
    if line is None:
        return lambda args, kwargs: impl(*args, **kwargs)
    if op.method:
        method = op.method
        return lambda args, kwargs: line.call_method(method, args, kwargs)
    return lambda args, kwargs: line.call(impl, args, kwargs)


for_loop = register_op(
    Op(
        "for_loop",
        OpKind.EXTERN,
        _for_loop_meta,
        _for_loop_impl,
        doc="a Python for loop over range(start, stop, step) with a body subgraph",
    )
)

# NOTE: one op per set of written input positions (they differ per loop); all share the
# name, meta rule and implementation of the registered `for_loop`.
_WRITING_FOR_LOOPS: dict[tuple[int, ...], Op] = {(): for_loop}


def for_loop_op(mutates: tuple[int, ...]) -> Op:
    """The `for_loop` op of a loop that writes its inputs at `mutates` in place.

    >>> for_loop_op((4,)).mutates, for_loop_op(()) is for_loop
    ((4,), True)
    """
    found = _WRITING_FOR_LOOPS.get(mutates)
    if found is None:
        found = attrs.evolve(for_loop, mutates=mutates)
        _WRITING_FOR_LOOPS[mutates] = found
    return found


def _cond_meta(pred: Any, *inputs: Any, then_branch: Graph, else_branch: Graph) -> ScalarMeta:
    for branch in (then_branch, else_branch):
        if len(branch.placeholders) != len(inputs):
            raise ValueError(
                f"cond: a branch takes {len(branch.placeholders)} inputs, the node gives "
                f"{len(inputs)}"
            )
    return ScalarMeta(tuple)


def _cond_impl(pred: Any, *inputs: Any, then_branch: Graph, else_branch: Graph) -> Any:
    return body_runner(then_branch if pred else else_branch)(inputs)


cond = register_op(
    Op(
        "cond",
        OpKind.EXTERN,
        _cond_meta,
        _cond_impl,
        doc="an if on a run-time value: one of two subgraphs, chosen by bool(pred)",
    )
)

# NOTE: as for loops, one op per set of written input positions.
_WRITING_CONDS: dict[tuple[int, ...], Op] = {(): cond}


def add_cond(
    graph: Graph,
    pred: Any,
    inputs: list[Any],
    branches: tuple[Graph, Graph],
    metas: list[ArrayMeta | ScalarMeta],
    mutates: tuple[int, ...],
) -> list[Node]:
    """Add a `cond` node choosing `branches` (then, else) by `pred`, and one `loop_output`
    per result (of `metas`, which cover both branches' results); return the outputs.

    Each branch takes `inputs` as its placeholders and returns a tuple of len(metas).
    """
    then_branch, else_branch = branches
    params = {"then_branch": then_branch, "else_branch": else_branch}
    meta = _cond_meta(pred, *inputs, **params)
    op = _WRITING_CONDS.get(mutates)
    if op is None:
        op = attrs.evolve(cond, mutates=mutates)
        _WRITING_CONDS[mutates] = op
    node = graph.add_node(op, (pred, *inputs), params, meta)
    return [
        graph.add_node(loop_output, (node,), {"index": k}, meta) for k, meta in enumerate(metas)
    ]


def _while_loop_meta(
    pred: Any,
    *inputs: Any,
    body: Graph,
    carried: int,
    enter_if: bool,
    again_if: bool,
    first: Graph | None = None,
    typed_if_ran: tuple[str, ...] = (),
    entry_unless_ran: tuple[str, ...] = (),
) -> ScalarMeta:
    if len(body.placeholders) != len(inputs):
        raise ValueError(
            f"while_loop: the body takes {len(body.placeholders)} inputs, the node gives "
            f"{len(inputs)}"
        )
    return ScalarMeta(tuple)


def _while_loop_impl(
    pred: Any,
    *values: Any,
    body: Graph,
    carried: int,
    enter_if: bool,
    again_if: bool,
    first: Graph | None = None,
    typed_if_ran: tuple[str, ...] = (),
    entry_unless_ran: tuple[str, ...] = (),
) -> Any:
    # `typed_if_ran` and `entry_unless_ran` change nothing here: the loop gives back its
    # initial objects.
    going = bool(pred) == enter_if
    custom = _WHILE_RUNNERS.get(body)
    if custom is not None:
        done = custom(going, values, carried)
        if done is not None:
            return done
    state = tuple(values[:carried])
    invariants = values[carried:]
    if first is not None:
        # The first pass on the initial types (Python scalars), again while the carried
        # values keep them (an inner loop that did not run), then the body.
        kept = _types(state)
        run_first = body_runner(first)
        while going:
            *new, again = run_first((*state, *invariants))
            state = tuple(new)
            going = bool(again) == again_if
            if _types(state) != kept:
                break
    run = body_runner(body)
    while going:
        *new, again = run((*state, *invariants))
        state = tuple(new)
        going = bool(again) == again_if
    return state


while_loop = register_op(
    Op(
        "while_loop",
        OpKind.EXTERN,
        _while_loop_meta,
        _while_loop_impl,
        doc="a Python while loop: the body returns the new carried values and the next test",
    )
)

# NOTE: as for loops, one op per set of written input positions.
_WRITING_WHILE_LOOPS: dict[tuple[int, ...], Op] = {(): while_loop}


def add_while_loop(
    graph: Graph,
    pred: Any,
    carried: list[Any],
    invariants: list[Any],
    body: Graph,
    tests: tuple[bool, bool],
    mutates: tuple[int, ...],
    first: Graph | None = None,
    *,
    typed_if_ran: tuple[str, ...] = (),
    entry_unless_ran: tuple[str, ...] = (),
) -> list[Node]:
    """Add a `while_loop` node and one `loop_output` per carried value; return the outputs.

    `pred` is the first test's value; the loop runs while `bool(test) == ` the test's
    truth of `tests` (entry, repeat); `body` takes the carried values and the invariants
    and returns the new carried values and the next test's value. `typed_if_ran` and
    `entry_unless_ran` are `add_loop`'s.
    """
    params = {
        "body": body,
        "carried": len(carried),
        "enter_if": tests[0],
        "again_if": tests[1],
    }
    if first is not None:
        params["first"] = first
    if typed_if_ran:
        params["typed_if_ran"] = typed_if_ran
    if entry_unless_ran:
        params["entry_unless_ran"] = entry_unless_ran
    inputs = (pred, *carried, *invariants)
    meta = _while_loop_meta(*inputs, **params)  # type: ignore[arg-type]
    op = _WRITING_WHILE_LOOPS.get(mutates)
    if op is None:
        op = attrs.evolve(while_loop, mutates=mutates)
        _WRITING_WHILE_LOOPS[mutates] = op
    node = graph.add_node(op, inputs, params, meta)
    metas = [value.meta for value in body.placeholders[: len(carried)]]
    return [
        graph.add_node(loop_output, (node,), {"index": k}, meta) for k, meta in enumerate(metas)
    ]


def _loop_output_meta(loop: Any, *, index: int) -> ArrayMeta | ScalarMeta:
    raise TypeError("loop_output's metadata comes from its loop's body (see add_loop)")


def _loop_output_impl(results: tuple[Any, ...], *, index: int) -> Any:
    return results[index]


loop_output = register_op(
    Op(
        "loop_output",
        OpKind.EXTERN,
        _loop_output_meta,
        _loop_output_impl,
        doc="one result of a loop or cond node (a final carried value, a merged local)",
    )
)


def is_loop(node: Node) -> bool:
    """Whether `node` applies a `for_loop` (whichever inputs it writes)."""
    return node.op is not None and node.op.name == "for_loop"


def is_while_loop(node: Node) -> bool:
    """Whether `node` applies a `while_loop` (whichever inputs it writes)."""
    return node.op is not None and node.op.name == "while_loop"


def has_loops(graph: Graph) -> bool:
    """Whether `graph` holds a control-flow node: a loop, or a cond (only inside a loop's
    body today); backends that lower op by op check this first.

    >>> has_loops(Graph())
    False
    """
    return any(node.op is not None and node.op.name in _CONTROL_FLOW for node in graph.nodes)


_CONTROL_FLOW = ("for_loop", "while_loop", "cond")


def add_loop(
    graph: Graph,
    bounds: tuple[Any, Any, Any],
    carried: list[Any],
    invariants: list[Any],
    body: Graph,
    mutates: tuple[int, ...],
    *,
    first: Graph | None = None,
    breaks: bool = False,
    typed_if_ran: tuple[str, ...] = (),
    entry_unless_ran: tuple[str, ...] = (),
) -> list[Node]:
    """Add a `for_loop` node and one `loop_output` per carried value; return the outputs.

    `body`'s output metadata gives the outputs' (the carried placeholders' equal them).
    `first`, when given, runs the first iteration instead of `body`: the body traced on
    the initial carried types (Python scalars the loop makes NumPy scalars of).
    `breaks`: the body (and `first`) return one more value after the carried ones, a
    bool that stops the loop after that iteration when true (a `break`).
    `typed_if_ran`: the carried locals whose type after the enclosing loop holds only where
    an iteration of this one finished (see loop_entry.mark_typed_if_ran).
    `entry_unless_ran`: the carried locals that leave this loop as their entry objects
    where no inner loop flagged for them ran (see entry_objects).
    """
    inputs = (*bounds, *carried, *invariants)
    meta = _for_loop_meta(*inputs, body=body, carried=len(carried))
    params: dict[str, Any] = {"body": body, "carried": len(carried)}
    if first is not None:
        params["first"] = first
    if breaks:
        params["breaks"] = True
    if typed_if_ran:
        params["typed_if_ran"] = typed_if_ran
    if entry_unless_ran:
        params["entry_unless_ran"] = entry_unless_ran
    node = graph.add_node(for_loop_op(mutates), inputs, params, meta)
    metas = [value.meta for value in body.placeholders[1 : 1 + len(carried)]]
    return [
        graph.add_node(loop_output, (node,), {"index": k}, meta) for k, meta in enumerate(metas)
    ]
