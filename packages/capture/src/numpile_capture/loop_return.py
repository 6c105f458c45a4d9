"""A `return` inside a kept loop body whose code differs from the code after the loop.

`for i in range(n): if x[i] > t: return i` then `return -1`: the loop stays one
`for_loop` node (or `while_loop`, for a `return` in a `while` body). Its body carries
more values: whether it returned (RETURNED) and what (one RETVAL pseudo-local per leaf of
a returned tuple, each starting as a zero of its type); a `return` in the body sets them
and stops the loop as a `break` does (`loop_exit`). After the node, the code after the
loop is traced to its own `return`, into the else branch of a `cond` on RETURNED whose
then branch gives the RETVAL leaves: the function's result, with the code after the loop
(and its writes) run only when the loop did not return, as in eager Python.

A `return` two levels deep (in a loop nested in a kept body, `for i ...: for j ...:
return ...`) leaves both loops: the inner loop carries the enclosing body's RETURNED and
RETVAL values too, and after the inner node the enclosing body goes on in a `cond` on
RETURNED whose then branch ends its iteration as a `break` does (`propagate_return`).
The first trace that meets such a return raises `NestedReturn` up to the outermost loop
that may return, which then carries the values and traces again.

A returned leaf is a scalar (Python or NumPy), a 0-d array or an array whose shape does
not depend on the loop index (its zero made before the loop, like an input of that
shape). The code after the loop must trace without a graph break; else the loop is not
kept (`LoopFallback`), as before.

    >>> def first_above(x, t):
    ...     for i in range(x.shape[0]):
    ...         if x[i] > t:
    ...             return i
    ...     return -1
    >>> print(capture_function(first_above, (np.ones(3), 0.5), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .branch_capture import Block, emit_cond, trace_block, trace_to_return
from .carried_values import carried_meta, join_metas, scalar_like
from .graph import Graph
from .loop_exit import BROKE, RETURNED, RETVAL, LoopFallback, ReturnSlot, innermost
from .loop_index import mentions_loop_symbol
from .meta import ArrayMeta, ScalarMeta
from .op import get_op
from .variables import ArrayVar, ConstantVar, TupleVar, Variable

if TYPE_CHECKING:
    from .frame import Frame


def flatten_value(value: Variable) -> tuple[list[Variable], Any]:
    """The leaves of a returned value (tuples flattened, in order) and its structure.

    >>> flatten_value(TupleVar((ConstantVar(1), ConstantVar(2))))[1]
    ('tuple', (None, None))
    """
    if isinstance(value, TupleVar):
        parts = [flatten_value(item) for item in value.items]
        leaves = [leaf for part, _ in parts for leaf in part]
        return leaves, ("tuple", tuple(spec for _, spec in parts))
    return [value], None


def unflatten_value(leaves: list[Variable], spec: Any) -> Variable:
    """The value of structure `spec` (from `flatten_value`) made of `leaves`."""
    items = iter(leaves)

    def build(part: Any) -> Variable:
        if part is None:
            return next(items)
        return TupleVar(tuple(build(child) for child in part[1]))

    return build(spec)


def return_names(count: int) -> tuple[str, ...]:
    """The pseudo-locals of a returned value's `count` leaves."""
    return tuple(f"{RETVAL}{k}" for k in range(count))


def carry_return(
    frame: Frame,
    slot: ReturnSlot,
    found: Variable,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
) -> tuple[str, ...]:
    """Make the body's traces carry RETURNED and the RETVAL leaves (typed after `found`,
    the value a first trace returned): locals bound before the loop to False and zeros,
    added to `metas`; returns their names (the loop carries them)."""
    leaves, spec = flatten_value(found)
    names = return_names(len(leaves))
    state = frame.state
    state.locals[RETURNED] = ConstantVar(False)
    metas[RETURNED] = ScalarMeta(bool)
    scalars.add(RETURNED)
    for name, leaf in zip(names, leaves, strict=True):
        seed, meta = _zero(frame, leaf)
        state.locals[name] = seed
        metas[name] = meta
        if scalar_like(leaf) or isinstance(meta, ScalarMeta):
            scalars.add(name)
    return _carry(slot, names, spec)


def inherit_return(
    frame: Frame,
    slot: ReturnSlot,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
) -> tuple[str, ...]:
    """A loop nested in a body that carries RETURNED and RETVAL: carry them on (their
    values now, the enclosing body's, are the initial ones); returns their names."""
    assert slot.parent is not None
    parent = slot.parent
    state = frame.state
    for name in (RETURNED, *parent.names):
        value = state.locals[name]
        meta = carried_meta(value)
        if meta is None:
            raise LoopFallback(f"it returns {value.describe()} from inside the loop")
        metas[name] = meta
        if scalar_like(value):
            scalars.add(name)
    return _carry(slot, parent.names, parent.spec)


def _carry(slot: ReturnSlot, names: tuple[str, ...], spec: Any) -> tuple[str, ...]:
    slot.carried = True
    slot.names = names
    slot.spec = spec
    return (RETURNED, *names)


def _zero(frame: Frame, leaf: Variable) -> tuple[Variable, ArrayMeta | ScalarMeta]:
    # The value a RETVAL leaf starts as, and the metadata it is carried with.
    meta = carried_meta(leaf)
    if meta is None:
        raise LoopFallback(f"it returns {leaf.describe()} from inside the loop")
    if isinstance(meta, ScalarMeta):
        return ConstantVar(meta.type(0)), meta
    if meta.shape == ():
        seed: Variable = ConstantVar(meta.dtype.type(0))
        return seed, join_metas(RETVAL, ArrayMeta((), meta.dtype), meta)
    if mentions_loop_symbol(meta.shape):
        raise LoopFallback("it returns an array whose shape depends on the loop index")
    graph = frame.tracer.graph
    shape = tuple(meta.shape)
    like = next(
        (
            node
            for node in graph.nodes
            if isinstance(node.meta, ArrayMeta)
            and tuple(node.meta.shape) == shape
            and node.meta.device == meta.device
        ),
        None,
    )
    if like is not None:
        node = graph.call(get_op("zeros_like"), like, dtype=meta.dtype)
    elif all(isinstance(size, int) for size in shape):
        node = graph.call(get_op("zeros"), shape=shape, dtype=meta.dtype)
    else:
        raise LoopFallback(f"it returns an array of shape {shape} from inside the loop")
    return ArrayVar(node), join_metas(RETVAL, node.meta, meta)


def return_after_loop(frame: Frame, slot: ReturnSlot) -> None:
    """The frame stands after a kept loop that may have returned: trace the code after it
    to its return and set the frame's result to the RETVAL leaves if the loop returned,
    else to that code's result (a `cond` node)."""
    state = frame.state
    returned = state.locals[RETURNED]
    leaves = [state.locals[name] for name in slot.names]
    locals_now = dict(state.locals)
    rest = trace_to_return(frame, frame.pc)
    rest_leaves, spec = flatten_value(rest.stack.pop())
    if spec != slot.spec:
        raise LoopFallback("it returns values of other structures inside and after the loop")
    rest.stack.extend(rest_leaves)
    stay = Block(Graph(), locals_now, [*state.stack, *leaves])
    rest.locals = locals_now  # only the result is merged: the function ends here
    emit_cond(frame, returned, stay, rest, (frame.pc, len(frame.instructions)))
    merged = [state.pop() for _ in leaves][::-1]
    frame.result = unflatten_value(merged, spec)


def propagate_return(frame: Frame) -> None:
    """The frame stands after a loop nested in a kept body, a loop that may have
    returned: the rest of the enclosing body runs in a `cond` on RETURNED whose then
    branch ends the enclosing iteration as a `break` does."""
    loop = innermost(frame)
    assert loop is not None
    state = frame.state
    returned = state.locals[RETURNED]
    start = frame.pc
    leave = dict(state.locals)
    stack = list(state.stack)
    if loop.iterator is not None:
        leave[BROKE] = ConstantVar(True)
    else:
        stack.append(ConstantVar(not loop.again_if))  # the `while` body's failing test
    stay = Block(Graph(), leave, stack)
    rest = trace_block(frame, start, loop.stop, high=loop.high)
    kept = {*loop.carried, BROKE}
    emit_cond(frame, returned, stay, rest, (start, loop.stop), kept=kept)
    frame.pc = loop.stop
