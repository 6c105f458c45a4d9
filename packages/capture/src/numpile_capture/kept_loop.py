"""What keeping a `for` loop (`loop_capture`) and a `while` loop (`while_capture`) share.

Both trace their body into a graph of its own until the carried types are a fixpoint
(`trace_to_fixpoint`), starting over when the body turns out to `return` (the loop then
carries the returned value, see `loop_return`); both undo what a loop they do not keep
added (`undone_on_fallback`), and bind the carried locals to the loop node's outputs
(`bind_outputs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .bytecode import Instruction
from .carried_values import variable_of, widen
from .graph import Graph, Node
from .loop_exit import LoopFallback, NestedReturn, ReturnSlot, innermost
from .meta import ArrayMeta, ScalarMeta
from .own_entries import OwnEntries, computed_on
from .trace_snapshot import Snapshot

if TYPE_CHECKING:
    from .frame import Frame

# NOTE: one trace of a body on the given carried types: its graph and the carried values
# it ends with (in the order of the types).
BodyTrace = Callable[[dict[str, ArrayMeta | ScalarMeta]], tuple[Graph, list[Any]]]


@contextmanager
def undone_on_fallback(frame: Frame) -> Iterator[None]:
    """Around keeping one loop: on `LoopFallback` drop the nodes it added, and always
    drop the pseudo-locals it made (RETURNED, RETVAL..., LEFT), not those of an enclosing
    body it carried on."""
    locals_ = frame.state.locals
    before = {name for name in locals_ if name.startswith(".")}
    graph = frame.tracer.graph
    count = len(graph.nodes)
    try:
        yield
    except LoopFallback:
        # The zeros a returned array starts as (see loop_return); placeholders of the
        # arguments the body reads stay, and the nodes that read them in (input_nodes).
        made = frame.tracer.builder.input_nodes
        graph.nodes[count:] = [n for n in graph.nodes[count:] if n.op is None or n in made]
        raise
    finally:
        for name in [name for name in locals_ if name.startswith(".") and name not in before]:
            locals_.pop(name, None)


def return_slot(frame: Frame, head: int, exit_at: int) -> ReturnSlot | None:
    """Where a loop [head, exit_at) records a `return` in its body: a slot of its own at
    the top of the frame, one under the enclosing body's when nested in a kept body and
    holding a return (see loop_return), else None."""
    outer = innermost(frame)
    if outer is None:
        return ReturnSlot()
    if outer.returns is None:
        return None
    code = frame.instructions[head:exit_at]
    if not any(inst.opname in ("RETURN_VALUE", "RETURN_CONST") for inst in code):
        return None
    return ReturnSlot(parent=outer.returns)


def trace_to_fixpoint(
    frame: Frame,
    trace: BodyTrace,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
    returns: ReturnSlot | None,
    *,
    carried: Callable[[tuple[str, ...]], None] | None = None,
    watch: OwnEntries | None = None,
    read_after_loop: Callable[[str], bool] = lambda name: True,
) -> tuple[Graph | None, Graph, dict[str, ArrayMeta | ScalarMeta]]:
    """Trace the body until its carried types are a fixpoint; the frame is restored after
    each trace. Returns the first iteration's body (traced on the initial types, None when
    they do not change), the body and the carried types. A `return` the body takes makes
    the loop carry the returned value (`carried` is told the names added) and starts over;
    one two loops deep is left to the enclosing loop (`NestedReturn`). Where code of the
    body computes on an inner loop's result that may be a Python scalar (`watch`, see
    own_entries; `read_after_loop` tells which carried locals code after the loop reads),
    it starts over with that inner loop not kept."""
    # Late import: loop_return traces the code after the loop with block_trace.run_until,
    # which keeps the loops it meets.
    from .loop_return import carry_return

    saved = Snapshot.take(frame)
    first: Graph | None = None
    attempt = 0
    start = dict(metas)
    while True:
        try:
            body, results = trace(metas)
        except NestedReturn:
            if returns is None or returns.found is None:
                raise
            body, results = Graph(), []
        finally:
            saved.restore(frame)
        if returns is not None and returns.found is not None and not returns.carried:
            if returns.parent is not None:
                if returns.parent.found is None:
                    returns.parent.found = returns.found
                raise NestedReturn("it returns from inside a loop two levels deep")
            added = carry_return(frame, returns, returns.found, metas, scalars)
            if carried is not None:
                carried(added)
            saved = Snapshot.take(frame)
            first, attempt, start = None, 0, dict(metas)
            continue
        widened = widen(metas, results)
        if widened == metas:
            again = set()
            if watch is not None:
                found = computed_on(watch, (first, body), tuple(metas), read_after_loop)
                again = found - watch.unrolled
            if not again:
                return first, body, metas
            assert watch is not None
            if again & watch.branches:
                raise LoopFallback(
                    "a branch of an `if` in its body may keep a local as the Python scalar the "
                    "iteration gave it, and the code after the `if` computes on it where no "
                    "run-time flag can stand for that (its result leaves the iteration, or is "
                    "no 0-d NumPy value)"
                )
            watch.unrolled |= again
            watch.held.clear()
            first, attempt, metas = None, 0, dict(start)
            continue
        if attempt > 0:
            raise LoopFallback("the carried types change over more than one iteration")
        first = body  # the first iteration, on the initial types (see peeled_first)
        attempt += 1
        metas = widened


def bind_outputs(
    frame: Frame, inst: Instruction, outputs: Sequence[Node], names: Sequence[str]
) -> None:
    """Give the loop node just added and its `outputs` the line of `inst` (the loop's
    head) and bind each carried local of `names` to its output."""
    graph = frame.tracer.graph
    line = frame.locate_line(inst)
    if line is not None:
        for node in graph.nodes[-1 - len(outputs) :]:
            graph.locations.setdefault(node, line)
    for name, node in zip(names, outputs, strict=True):
        frame.state.locals[name] = variable_of(node)
