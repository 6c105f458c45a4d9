"""Both typings of a loop body's work on a local whose type follows a run-time flag.

`t = 0.0` before `for i in range(n): y[i] = t * z[i]; while x[k] > 0.5: t = t + x[k]`
is a Python float, weak under NEP 50, until an inner loop assigning it runs, and a NumPy
float64 from then on: eager's `t * z[i]` on a float32 `z` is a float32 product before,
a float64 one after. The body graph is typed for after (the loop's types, capture's
`loop_entry.kept_with_loop_types`); the C loop keeps a flag per such local, set where an
inner loop assigning it ran (`LoopWriter.ran_flag`). `flag_typing` retypes the nodes
of the body that compute on the local for before (its entry's Python type), and
`emit_typed_nodes` writes each such node twice, the flag choosing which runs:

    if (flag) { <the node on the loop's types> } else { <the node on the entry's type> }

A value whose two typings agree (a comparison, a store) leaves the choice as one C
value; one whose typings differ (the float32 and the float64 product) is two, each read
only by the same typing of the nodes after it. Each value has an *epoch*, which says
which flag it follows: the flag at the iteration's start for the body's own carried
value, the flag after an inner loop for that loop's result; the flag is read once per
epoch, into a C local.

What is not typed both ways keeps the loop's NumPy run (`NotScalarLoop`, with the
reason): an op whose operands are all Python scalars on the entry's side (the graph does
not say whether `t * 2.0` was Python's `*`, giving a Python float, or `np.multiply`), a
result that is not 0-d (an array is allocated once, at one dtype), a control-flow node or
another carried value that takes a value of two typings, an inner loop that would compute
otherwise on the entry's type in its first iteration, and a local that leaves the
iteration with a type the flag does not decide.

    >>> typing = flag_typing(body, 0, "t", float)  # doctest: +SKIP
    >>> [str(node) for node in typing.dual]  # doctest: +SKIP
    ['v2', 'v3']
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    OpKind,
    ScalarMeta,
    computes_unless_ran,
    flagged_reads,
    own_entry_results,
)

from .loop_body import CValue, Env, LoopWriter, NotScalarLoop
from .loop_entry_scalars import computes_either_way
from .ops import c_expr, c_type

__all__ = ["FlagTyping", "emit_typed_nodes", "flag_typing", "flag_typings", "own_typing"]

# NOTE: the Python types an entry object may have, with the C dtype and the bound in bits
# of their values in a loop function (as loop_body holds Python scalars).
_ENTRY_TYPES: dict[type, tuple[np.dtype[Any], int]] = {
    bool: (np.dtype("bool"), 1),
    int: (np.dtype("int64"), 63),
    float: (np.dtype("float64"), 64),
}


@attrs.frozen(eq=False)
class FlagTyping:
    """How one graph of a loop (its body, or its first iteration's) computes on local
    `name`, whose entry object is a Python `entry`: `dual` maps each node computing on it
    to its copy typed on `entry`; `weak` maps each value whose two typings differ (the
    local's own among them) to that copy; `epochs` gives each of both the flag it follows
    (0: the iteration's start; k: after `boundaries[k - 1]`, the inner loops assigning the
    local, in order)."""

    name: str
    entry: type
    dual: dict[Node, Node]
    weak: dict[Node, Node]
    epochs: dict[Node, int]
    boundaries: tuple[Node, ...]
    # Flags of the iteration's own Python scalars (`own_typing`): each boundary is a value
    # that may still be one, its epoch's flag the negation of that value's `EntryKept`.
    own: bool = False


def flag_typings(node: Node, *, first_apart: bool) -> dict[Graph, FlagTyping]:
    """The typings of `for_loop` node `node`'s body (and, `first_apart`, of its first
    iteration's graph, written apart) for each carried local that an inner loop retypes
    and that the loop computes on where no such loop may have run (capture's
    `computes_unless_ran`); `NotScalarLoop` where C cannot run them both ways.

    >>> flag_typings(graph.nodes[4], first_apart=False)  # doctest: +SKIP
    {<Graph>: FlagTyping(name='t', ...)}
    """
    params = dict(node.params)
    body: Graph = params["body"]
    carried: int = params["carried"]
    flagged = {name for inner in body.nodes for name in dict(inner.params).get("typed_if_ran", ())}
    proven = params.get("entry_unless_ran", ())
    graphs = [body, params["first"]] if first_apart else [body]
    found: dict[Graph, FlagTyping] = {}
    for k, placeholder in enumerate(body.placeholders[1 : 1 + carried]):
        name = placeholder.name
        if name not in flagged:
            continue
        if name in proven:
            # Left as it came unless an inner loop ran, but that loop's first iteration
            # computes on the entry object itself.
            _check_inner_first_iterations(body, name, _entry_type(node.inputs[3 + k]))
            continue
        computes = computes_unless_ran(node, name)
        entry = _entry_type(node.inputs[3 + k])
        try:
            typed = {graph: flag_typing(graph, k, name, entry) for graph in graphs}
        except NotScalarLoop as reason:
            if not computes:
                continue  # only read as both types would: the flag keeps its run with NumPy
            raise NotScalarLoop(
                f"it computes on `{name}` where no inner loop assigning it may have run yet, "
                f"and {reason}"
            ) from reason
        for graph in typed:
            if graph in found:
                raise NotScalarLoop(
                    f"it computes on `{found[graph].name}` and `{name}`, two locals whose "
                    "types follow whether inner loops ran"
                )
        found.update(typed)
    return found


def flag_typing(graph: Graph, k: int, name: str, entry: type | None) -> FlagTyping:
    """The two typings of `graph`'s work on local `name`, the `k`-th carried value of the
    `for` loop `graph` is a body of, whose entry object is a Python `entry`;
    `NotScalarLoop` where C cannot run them both.

    >>> flag_typing(body, 0, "t", float).boundaries  # doctest: +SKIP
    (v6,)
    """
    if entry not in _ENTRY_TYPES:
        raise NotScalarLoop(f"`{name}` enters the loop as no Python bool, int or float")
    typing = FlagTyping(name, entry, {}, {}, {}, ())
    _add_source(typing, graph.placeholders[1 + k], 0)
    boundaries: list[Node] = []
    for node in graph.nodes:
        if node.op is None:
            continue
        params = dict(node.params)
        split = [value for value in node.inputs if isinstance(value, Node) and value in typing.weak]
        if name in params.get("typed_if_ran", ()):
            _check_boundary(typing, node, split)
            boundaries.append(node)
            continue
        if node.op.name == "loop_output" and node.inputs[0] in boundaries:
            if params["index"] == _carried_index(node.inputs[0], name):
                _add_source(typing, node, boundaries.index(node.inputs[0]) + 1)
            continue
        if not split:
            if any(_assigns_within(value, name) for value in params.values()):
                raise NotScalarLoop(f"an inner loop assigns `{name}` inside an `if` or a loop")
            continue
        epochs = {typing.epochs[value] for value in split}
        if len(epochs) != 1:
            raise NotScalarLoop(f"{node.name} reads `{name}` from before and after an inner loop")
        if node.op.name == "carried_scalar":
            _add_source(typing, node, epochs.pop())
            continue
        _add_dual(typing, node, name, epochs.pop())
    typing = attrs.evolve(typing, boundaries=tuple(boundaries))
    _check_outputs(typing, graph, k)
    return typing


def emit_typed_nodes(writer: LoopWriter, nodes: list[Node], env: Env, typing: FlagTyping) -> None:
    """Write `nodes` (those of `typing`'s graph) into `writer`: each node of `typing.dual`
    both ways, under the flag its epoch reads."""
    flag = "" if typing.own else writer.ran_flag(typing.name)
    read = {epoch for node, epoch in typing.epochs.items() if node in typing.dual}
    reads: dict[int, str] = {}

    def read_flag(epoch: int) -> None:
        if epoch in read:
            reads[epoch] = writer.fresh("flag")
            now = flag
            if typing.own:  # set where the value is no longer the Python scalar
                kept = env[typing.boundaries[epoch - 1]].kept
                if kept is None:
                    raise NotScalarLoop("a value that may be a Python scalar has no flag")
                now = f"!{kept.flag}"
            writer.buf.writeline(f"const int {reads[epoch]} = {now};")

    read_flag(0)
    for source, weak in typing.weak.items():
        if source.op is None:  # the carried placeholder
            env[weak] = _entry_value(env[source], typing.entry)
    for node in nodes:
        if node.op is None or node in env:
            continue
        copy = typing.dual.get(node)
        if copy is not None:
            _emit_dual(writer, node, copy, reads[typing.epochs[node]], env)
            continue
        writer.node(node, env)
        if node in typing.weak:  # a source: the local itself, on the entry's type
            env[typing.weak[node]] = _entry_value(env[node], typing.entry)
        if node in typing.boundaries:  # the flag after it: a later epoch's
            read_flag(typing.boundaries.index(node) + 1)


def own_typing(graph: Graph) -> FlagTyping | None:
    """The two typings of `graph`'s work (a loop body's) on the values that may still be
    the Python scalar the iteration gave a local (`s = 0.1` per row, then an inner loop or
    an `if` whose branch may assign it: capture's `own_entry_results`), each flagged at
    run time (its `EntryKept`): the nodes capture's `flagged_reads` names, written both
    ways; None where none computes otherwise on the Python scalar than on the NumPy value;
    `NotScalarLoop` where C cannot write both typings.

    >>> own_typing(body).boundaries  # doctest: +SKIP
    (v2,)
    """
    flagged = flagged_reads(graph)
    sources = {
        source: kind
        for source, kind in own_entry_results(graph).items()
        if source in flagged.values()
    }
    if not sources:
        return None
    kinds = set(sources.values())
    if len(kinds) != 1:
        raise NotScalarLoop("values that may be Python scalars of two types")
    typing = FlagTyping("own entry", kinds.pop(), {}, {}, {}, tuple(sources), own=True)
    for epoch, source in enumerate(sources, start=1):
        _add_source(typing, source, epoch)
    for node in graph.nodes:
        if node not in flagged:
            continue  # the same on both typings (capture's own_entries)
        split = [value for value in node.inputs if isinstance(value, Node) and value in typing.weak]
        epochs = {typing.epochs[value] for value in split}
        if len(epochs) != 1:
            raise NotScalarLoop(f"{node.name} reads two values that may be Python scalars")
        _add_dual(typing, node, typing.name, epochs.pop())
    if all(node in sources for node in typing.weak):
        return None  # every op computes the same on both: one typing, no flag
    return typing


def _entry_type(value: Any) -> type | None:
    # The Python type of a loop's initial carried value (an argument or a constant).
    if isinstance(value, Node):
        return value.meta.type if isinstance(value.meta, ScalarMeta) else None
    return type(value) if type(value) in _ENTRY_TYPES else None


def _add_dual(typing: FlagTyping, node: Node, name: str, epoch: int) -> None:
    # `node` computed on the weak typing of local `name` too (its copy, where it has one),
    # in the flag's `epoch`; a copy of another meta is what the weak typing reads next.
    copy = _entry_typed(node, typing.weak, name)
    if copy is None:
        return
    typing.dual[node] = copy
    typing.epochs[node] = epoch
    if copy.meta != node.meta:
        typing.weak[node] = copy


def _add_source(typing: FlagTyping, node: Node, epoch: int) -> None:
    # A value that is the local itself: the entry object's type where the flag is clear.
    weak = ScalarMeta(typing.entry)
    if node.meta == weak:
        return  # a first iteration's own: on the entry's type already
    dtype, _ = _ENTRY_TYPES[typing.entry]
    if not isinstance(node.meta, ArrayMeta) or node.meta.shape != () or node.meta.dtype != dtype:
        # The C local holding it would not hold the entry object's value exactly.
        raise NotScalarLoop(f"`{typing.name}` is a {node.meta} in the loop, not a {dtype}")
    typing.weak[node] = Node(f"{node.name}_entry", None, (), (), weak)
    typing.epochs[node] = epoch


def _carried_index(loop: Node, name: str) -> int | None:
    # The position of local `name` among the carried values of loop node `loop`.
    params = dict(loop.params)
    assert loop.op is not None
    start = 1 if loop.op.name == "for_loop" else 0
    names = [p.name for p in params["body"].placeholders[start : start + params["carried"]]]
    return names.index(name) if name in names else None


def _assigns_within(value: Any, name: str) -> bool:
    # Whether graph `value` (a parameter of a node) holds a loop that retypes `name`.
    if not isinstance(value, Graph):
        return False
    for node in value.nodes:
        params = dict(node.params)
        if name in params.get("typed_if_ran", ()):
            return True
        if any(_assigns_within(inner, name) for inner in params.values()):
            return True
    return False


def _check_boundary(typing: FlagTyping, loop: Node, split: list[Node]) -> None:
    # An inner loop assigning the local takes it as its carried value, on the entry's type
    # where the flag is clear, and gives it back as it took it where the flag stays clear;
    # its first iteration computes on it as on the loop's type (`_agrees_either_way`).
    assert loop.op is not None
    k = _carried_index(loop, typing.name)
    if k is None:
        raise NotScalarLoop(f"an inner loop retypes `{typing.name}` without carrying it")
    is_for = loop.op.name == "for_loop"
    carried = loop.inputs[(3 if is_for else 1) + k]
    weak = typing.weak.get(carried, carried)
    entry_typed = getattr(weak, "meta", None) == ScalarMeta(typing.entry)
    if any(value is not carried for value in split) or not entry_typed:
        raise NotScalarLoop(f"an inner loop takes values computed from `{typing.name}`")
    body: Graph = dict(loop.params)["body"]
    if not _agrees_either_way(body, body.placeholders[(1 if is_for else 0) + k], typing.entry):
        raise NotScalarLoop(
            f"an inner loop computes on `{typing.name}` otherwise on its entry type"
        )
    if is_for and not _gives_back_where_broken(loop, k):
        raise NotScalarLoop(f"an inner loop assigns `{typing.name}` in an iteration that breaks")


def _check_inner_first_iterations(graph: Graph, name: str, entry: type | None) -> None:
    # Each loop of `graph` (or of its branches and loops) assigning local `name` computes
    # on it in its first iteration as on the loop's type (`_agrees_either_way`), where it
    # may still be the entry object (a Python `entry`); `NotScalarLoop` where one does not.
    for node in graph.nodes:
        params = dict(node.params)
        k = _carried_index(node, name) if name in params.get("typed_if_ran", ()) else None
        if k is not None:
            assert node.op is not None
            body: Graph = params["body"]
            seed = body.placeholders[(1 if node.op.name == "for_loop" else 0) + k]
            if not _agrees_either_way(body, seed, entry):
                raise NotScalarLoop(
                    f"an inner loop computes on `{name}` otherwise on its entry type in its "
                    "first iteration"
                )
        for value in params.values():
            if isinstance(value, Graph):
                _check_inner_first_iterations(value, name, entry)


def _agrees_either_way(body: Graph, seed: Node, entry: type | None) -> bool:
    # Whether an inner loop's `body` computes on its carried value `seed` the same on the
    # entry object (a Python `entry`) as on the loop's type: NumPy's own rules
    # (loop_entry_scalars), as for the first iteration of any loop.
    meta = seed.meta
    if isinstance(meta, ScalarMeta):
        return meta.type is entry
    if not isinstance(meta, ArrayMeta) or entry is None:
        return False
    return computes_either_way(body, seed, meta.dtype, entry)


def _gives_back_where_broken(loop: Node, k: int) -> bool:
    # Whether `for` node `loop` gives back its carried value `k` as it took it where no
    # iteration set the flag (each broke: the first did, or the range was empty). A
    # breaking body returns its stop flag last, from the `cond` that breaks: each branch
    # that may stop passes the value through.
    params = dict(loop.params)
    if not params.get("breaks"):
        return True
    body: Graph = params["body"]
    outputs = body.output if isinstance(body.output, tuple) else (body.output,)
    value, stop = outputs[k], outputs[params["carried"]]
    own = {body.placeholders[1 + k]}
    own |= {node for node in body.nodes if _is_op(node, "carried_scalar") and node.inputs[0] in own}
    if value in own:
        return True
    if not all(_is_output_of_cond(out) for out in (value, stop)):
        return False
    cond = value.inputs[0]
    if stop.inputs[0] is not cond:
        return False
    at, stop_at = dict(value.params)["index"], dict(stop.params)["index"]
    cond_params = dict(cond.params)
    for branch in (cond_params["then_branch"], cond_params["else_branch"]):
        branch_out = branch.output if isinstance(branch.output, tuple) else (branch.output,)
        if branch_out[stop_at] is False:
            continue  # an iteration that goes on: it sets the flag
        pairs = zip(branch.placeholders, cond.inputs[1:], strict=True)
        fed = {placeholder for placeholder, given in pairs if given in own}
        if branch_out[at] not in fed:
            return False
    return True


def _is_op(value: Any, name: str) -> bool:
    return isinstance(value, Node) and value.op is not None and value.op.name == name


def _is_output_of_cond(value: Any) -> bool:
    return _is_op(value, "loop_output") and _is_op(value.inputs[0], "cond")


def _entry_operand(value: Any, weak: dict[Node, Node]) -> Any:
    # An operand of a NumPy op on the entry's side: a Python bool is NumPy's bool (NEP 50
    # makes only Python ints, floats and complexes weak), the same value on both sides.
    if not isinstance(value, Node) or value not in weak:
        return value
    copy = weak[value]
    return value if copy.meta == ScalarMeta(bool) else copy


def _entry_typed(node: Node, weak: dict[Node, Node], name: str) -> Node | None:
    # A copy of `node` whose operands of two typings are their entry-typed copies, typed
    # by its op's meta rule (NumPy's own promotion, NEP 50).
    assert node.op is not None
    inputs = tuple(_entry_operand(value, weak) for value in node.inputs)
    if all(new is old for new, old in zip(inputs, node.inputs, strict=True)):
        return None  # it reads the local only as NumPy reads a Python bool: as its own bool
    store = node.op.name == "setitem_at"
    if store:
        if any(isinstance(value, Node) and value in weak for value in node.inputs[2:]):
            raise NotScalarLoop(f"`{name}` indexes an array")
    elif node.op.kind is not OpKind.POINTWISE or not _reads_numpy(inputs):
        raise NotScalarLoop(
            f"{node.op.name} computes on it with no NumPy operand (Python's operator or "
            "NumPy's function: the graph does not say which)"
            if node.op.kind is OpKind.POINTWISE
            else f"{node.op.name} reads it"
        )
    metas = [value.meta if isinstance(value, Node) else value for value in inputs]
    try:
        meta = node.op.meta(*metas, **dict(node.params))
    except (TypeError, ValueError) as error:
        raise NotScalarLoop(f"{node.op.name} does not take its entry type: {error}") from error
    if store or (_is_0d(meta) and _is_0d(node.meta)):
        return Node(f"{node.name}_entry", node.op, inputs, node.params, meta)
    ours, theirs = getattr(node.meta, "dtype", None), getattr(meta, "dtype", None)
    if ours != theirs:
        raise NotScalarLoop(
            f"{node.name} is an array of {ours} on the loop's types and of {theirs} on the "
            "entry's (an array is allocated once, at one dtype)"
        )
    raise NotScalarLoop(f"{node.name} computes an array from it")


def _is_0d(meta: Any) -> bool:
    return isinstance(meta, ArrayMeta) and meta.shape == ()


def _reads_numpy(inputs: tuple[Any, ...]) -> bool:
    # Whether some operand is a NumPy value (an array, a NumPy scalar or constant).
    return any(
        isinstance(value, np.generic)
        or (isinstance(value, Node) and isinstance(value.meta, ArrayMeta))
        for value in inputs
    )


def _check_outputs(typing: FlagTyping, graph: Graph, k: int) -> None:
    # The local leaves the iteration on the entry's type exactly where the flag is clear
    # after it (the flag then says its type at the next iteration and after the loop);
    # no other carried value leaves it with two typings.
    outputs = graph.output if isinstance(graph.output, tuple) else (graph.output,)
    if not typing.boundaries:
        raise NotScalarLoop(f"no inner loop of this body assigns `{typing.name}`")
    for position, value in enumerate(outputs):
        if not isinstance(value, Node) or value not in typing.weak:
            if position == k:
                raise NotScalarLoop(f"`{typing.name}` leaves the iteration on the loop's type")
            continue
        if position != k:
            raise NotScalarLoop(f"another carried value is computed from `{typing.name}`")
        if typing.weak[value].meta != ScalarMeta(typing.entry) or typing.epochs[value] != len(
            typing.boundaries
        ):
            raise NotScalarLoop(f"`{typing.name}` leaves the iteration on another type")


def _entry_value(value: Any, entry: type) -> CValue:
    # The C value of the local on the entry's type: the same C local, a Python scalar.
    assert isinstance(value, CValue)
    dtype, bits = _ENTRY_TYPES[entry]
    return CValue(value.text, dtype, entry, bits)


def _declare(writer: LoopWriter, meta: Any) -> CValue:
    # A C local for a 0-d value of `meta` that both typings' blocks assign.
    if isinstance(meta, ScalarMeta) and meta.type in _ENTRY_TYPES:
        dtype, bits = _ENTRY_TYPES[meta.type]
        python: type | None = meta.type
    elif isinstance(meta, ArrayMeta) and meta.shape == () and meta.dtype.kind in "biuf":
        dtype, bits, python = meta.dtype, 64, None
    else:
        raise NotScalarLoop(f"a value {meta} computed from a local of two typings")
    ct = c_type(dtype)
    if ct is None:
        raise NotScalarLoop(f"a value {meta} computed from a local of two typings")
    name = writer.fresh("two")
    writer.buf.writeline(f"{ct} {name} = 0;")
    return CValue(name, dtype, python, bits)


def _emit_dual(writer: LoopWriter, node: Node, copy: Node, flag: str, env: Env) -> None:
    # `node` on the loop's types where `flag` is set, its copy on the entry's otherwise.
    assert node.op is not None
    store = node.op.name == "setitem_at"
    targets: list[CValue] = []
    if not store:
        strong = _declare(writer, node.meta)
        targets = [strong, strong if copy.meta == node.meta else _declare(writer, copy.meta)]
    writer.buf.writeline(f"if ({flag}) {{")
    for position, typed in enumerate((node, copy)):
        if position:
            writer.buf.writeline("} else {")
        with writer.buf.indent():
            if position:
                _check_int_operands(writer, copy, env)
            writer.node(typed, env)
            if targets:
                value = env[typed]
                assert isinstance(value, CValue)
                target = targets[position]
                cast = c_expr("cast", [value.text], [value.dtype], target.dtype)
                writer.buf.writeline(f"{target.text} = {cast};")
    writer.buf.writeline("}")
    if targets:
        env[node], env[copy] = targets


def _check_int_operands(writer: LoopWriter, node: Node, env: Env) -> None:
    # A Python int operand of a NumPy op on narrower integers (`c * z[i]`, an int32 `z`):
    # NumPy raises OverflowError where it does not fit their dtype; C bails, and the
    # loop's run with NumPy raises it from the user's line.
    metas = [value.meta for value in node.inputs if isinstance(value, Node)]
    dtypes = [meta.dtype for meta in metas if isinstance(meta, ArrayMeta)]
    dtypes += [value.dtype for value in node.inputs if isinstance(value, np.generic)]
    if not dtypes:
        return
    target = np.result_type(*dtypes)
    if target.kind not in "iu" or target == np.dtype("int64"):
        return
    info = np.iinfo(target)
    for value in node.inputs:
        found = env.get(value) if isinstance(value, Node) else None
        if isinstance(found, CValue) and found.python is int:
            a = f"(int64_t){found.text}"
            least, most = f"{int(info.min)}LL", f"{min(int(info.max), 2**63 - 1)}LL"
            writer.buf.writeline(f"if ({a} < {least} || {a} > {most}) {{ goto bail; }}")
            writer.bails = True
