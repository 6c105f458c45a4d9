"""Whether a kept loop runs at all, where the types of the code after it depend on it.

A carried value may change type in a loop's first iteration: a Python `0.0` becomes the
NumPy float64 that `s + x[i]` gives, a Python int the int64 of `crc ^ data[i]`. A loop of
no iteration gives back its initial objects, as eager does, so code after it that was
traced on the loop's type would compute with the wrong type (and, for a Python int, the
wrong overflow) at trip count 0. Where a carried value whose type changes is read after
the loop (`retyped_after`; a compiled function that only returns it, `return s, i`, hands
the caller the object the loop gives back) and the loop is not proven to run a whole
iteration (a body that may `break` may leave in its first one):

- a `for` over a range whose bounds are constants, sizes or int inputs guards whether the
  range is empty (`range_entered`: `stop > start` for a positive step, `stop < start` for
  a negative one). This is torch's 0/1 specialization applied to trip counts: every
  non-empty trip count shares one entry; an empty range compiles an entry of its own in
  which the loop vanishes (`EmptyRange`) and the initial objects flow on;
- a `while` whose body leaves only through its test, and whose first test guards can
  read (a comparison of int inputs, sizes, NumPy scalar inputs and constants: see
  `guarded_scalars`), guards that test's outcome (`first_test_enters`): a true one proves
  an iteration, a false one makes the loop vanish (`EmptyRange`), one entry each;
- otherwise (a `while` on array data, bounds computed at run time, a body that may
  `break`, a `cond` branch that may leave the value as it came: `entry_objects.
  kept_by_branches`) the graph ends after the loop (`end_graph_after`): its carried
  values come back as objects and capture resumes after the loop on their actual types,
  a graph break whose reason names the values;
- inside the body of another kept loop (or under a transform), where neither can happen,
  a range loop's rest of the iteration is a `cond` on whether it ran (`branch_on_entry`);
  a guarded first test decides a `while` there too (`t = 0.0; k = 0; while k < m:`);
  a loop whose trip count only the run time knows is kept with the loop's types
  (`kept_with_loop_types`). Not keeping it made the enclosing loop run in Python,
  500-900x slower. The enclosing loop learns the values it retypes (`mark_typed_if_ran`)
  and ends the graph after it; each inner `while` or `for` assigning them names them on
  its node (`typed_if_ran`): a C loop function keeps a run-time flag per value (a `while`
  that ran, a `for` iteration that did not break). Where the enclosing loop only passes
  a value along until such a loop assigns it (`entry_objects.entry_unless_ran`), a clear
  flag gives back its entry object; otherwise the loop bails to NumPy, whose `for_loop`
  / `while_loop` runs its first-iteration graph while the values keep their Python
  types. Where the enclosing loop cannot end the graph (itself in a kept body, under a
  transform), the inner loop falls back (`LoopFallback`).

    >>> text_of_range(("0", "L['n']", 1))
    ("L['n'] > 0", "L['n'] <= 0")
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from numpile_guards import relation
from numpile_guards.symbolic import SymInt

from .bytecode import Instruction
from .capture_result import Unsupported
from .carried_values import graph_value, meta_of_value
from .dynamic_shapes import active_shape_env
from .entry_objects import kept_by_branches
from .graph import Graph, Node
from .loop_exit import BROKE, LoopFallback, active_loops, innermost
from .loop_index import is_loop_symbol
from .loop_locals import read_after
from .meta import ArrayMeta, ScalarMeta
from .op import get_op
from .operators import truth
from .variables import ArrayVar, ConstantVar, ScalarInputVar, ScalarNodeVar, Variable

if TYPE_CHECKING:
    from .frame import Frame
    from .tracer import Tracer


log = logging.getLogger("numpile.capture.graph_breaks")


class EmptyRange(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The kept loop runs no iteration on this call (guarded): the loop vanishes. A
    FOR_ITER goes on after it as for an exhausted iterator, a `while` as its failed test."""


def retyped_after(
    frame: Frame,
    initial: dict[str, ArrayMeta | ScalarMeta],
    final: dict[str, ArrayMeta | ScalarMeta],
    span: tuple[int, int],
) -> tuple[str, ...]:
    """The carried locals whose type before the loop differs from the loop's (`initial`
    and `final` metadata) and that some path from the loop's exit reads; `span` is the
    loop's instructions [head, exit)."""
    head, exit_at = span
    if returned_as_is(frame, exit_at):
        return ()
    return tuple(
        name
        for name, before in initial.items()
        if name in final
        and not name.startswith(".")
        and _type_of(before) != _type_of(final[name])
        and read_after(frame.instructions, exit_at, name, head, exit_at)
    )


def returned_as_is(frame: Frame, exit_at: int) -> bool:
    """Whether the code after a loop exiting to `exit_at` only returns values to the
    caller of the compiled function (`return s, i`): the loop gives back its initial
    objects at trip count 0, and no code of this graph computes on them."""
    if not frame.is_root or innermost(frame) is not None:
        return False  # an inlined call's caller, or the enclosing body, goes on with them
    instructions = frame.instructions
    at = exit_at
    for _ in range(_MAX_PASSING_ON):
        if not 0 <= at < len(instructions):
            return False
        inst = instructions[at]
        if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return True
        if inst.opname == "JUMP" and inst.target is not None and inst.target > at:
            at = inst.target  # out of a `try` block's body, over its handler
        elif inst.opname in _PASSES_ON:
            at += 1
        else:
            return False
    return False


# NOTE: how many instructions `returned_as_is` follows to a return.
_MAX_PASSING_ON = 16


# NOTE: normalized instructions that pass values on without computing on them.
_PASSES_ON = frozenset(
    {
        "LOAD_FAST",
        "LOAD_CONST",
        "STORE_FAST",
        "BUILD_TUPLE",
        "BUILD_LIST",
    }
)


def _type_of(meta: ArrayMeta | ScalarMeta) -> Any:
    # What code after the loop sees of a carried value: its Python type, or its dtype and
    # shape (strides a loop forgets do not change what NumPy computes).
    if isinstance(meta, ScalarMeta):
        return meta.type
    return (meta.dtype, tuple(meta.shape))


def describe_retyped(
    names: Sequence[str],
    initial: dict[str, ArrayMeta | ScalarMeta],
    final: dict[str, ArrayMeta | ScalarMeta],
) -> str:
    """`` `s` (float before the loop, float64 after an iteration) ``, for reasons and logs."""
    return ", ".join(
        f"`{name}` ({_shown(initial[name])} before the loop, {_shown(final[name])} after an "
        "iteration)"
        for name in names
    )


def _shown(meta: ArrayMeta | ScalarMeta) -> str:
    if isinstance(meta, ScalarMeta):
        return meta.type.__name__
    return str(meta.dtype) if meta.shape == () else f"{meta.dtype}{list(meta.shape)}"


def range_entered(bounds: tuple[Variable, Variable, Variable]) -> bool | None:
    """Whether `range(*bounds)` is non-empty on this call, guarded so the entry serves
    only calls that agree; None where only the run time knows (a bound computed by the
    graph, a loop index, a step that is no constant)."""
    start, stop, step = bounds
    if not (isinstance(step, ConstantVar) and type(step.value) is int) or step.value == 0:
        return None
    forward = step.value > 0
    if any(isinstance(bound, ScalarInputVar) and not bound.read for bound in (start, stop)):
        return _guard_text(start, stop, step.value)
    low, high = _expr(start), _expr(stop)
    if low is None or high is None:
        return None
    if isinstance(low, int) and isinstance(high, int):
        return high > low if forward else high < low
    entered = relation(">" if forward else "<", high, low)
    env = active_shape_env()
    if env is None:
        return None
    decided = env.decide(entered)
    if decided is not None:
        return decided
    if any(_mentions_index(bound) or env.is_unbacked(bound) for bound in (low, high)):
        return None  # an enclosing loop's index, a data-dependent size: no value to guard
    return env.evaluate(entered, reason=_REASON)


# NOTE: the reason of the guards `range_entered` records.
_REASON = "whether a loop runs (the types after it depend on it)"


def first_test_enters(tracer: Tracer, test: Variable, enter_if: bool) -> bool | None:
    """Whether a `while` loop whose first `test` (the value its entry jump pops) enters it
    on the truth `enter_if` runs on this call, guarded so the entry serves only calls
    that agree; None where only the run time knows (array data, a value a loop carries).

    Guards read an unspecialized Python scalar input's comparison (`0 < L['n']`) and a
    NumPy scalar input's (`bool(np.float64(0.0) < L['a'])`); constants need no guard.
    """
    if isinstance(test, ConstantVar):
        return bool(test.value) is enter_if
    readable = isinstance(test, ScalarInputVar) or (
        isinstance(test, ArrayVar) and test.expression is not None
    )
    if not readable:
        return None
    return truth(tracer, test) is enter_if


def _expr(var: Variable) -> Any:
    # A bound as an int or a size expression (sympy or affine), or None.
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return var.value
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return var.value.expr
    if isinstance(var, ScalarInputVar) and type(var.current) is int:
        return var.current  # read already: guarded equal to this value
    if isinstance(var, ScalarNodeVar):
        return var.expr
    return None


def _mentions_index(expr: Any) -> bool:
    return any(is_loop_symbol(symbol) for symbol in getattr(expr, "free_symbols", ()))


def _guard_text(start: Variable, stop: Variable, step: int) -> bool | None:
    # A range bounded by an unspecialized int input (`range(n)`, `range(1, n)`): the
    # relation as Python text over the sources, guarded as it is now.
    env = active_shape_env()
    texts = [_text(bound) for bound in (start, stop)]
    hints = [_hint(bound) for bound in (start, stop)]
    if env is None or None in texts or None in hints:
        return None
    assert texts[0] is not None and texts[1] is not None
    entered, empty = text_of_range((texts[0], texts[1], step))
    low, high = hints
    assert low is not None and high is not None
    runs = len(range(low, high, step)) > 0
    env.add_relation(entered if runs else empty, _REASON)
    return runs


def text_of_range(texts: tuple[str, str, int]) -> tuple[str, str]:
    """The Python texts of "`range(start, stop, step)` is not empty" and of its negation,
    from the bounds' texts."""
    start, stop, step = texts
    if step > 0:
        return f"{stop} > {start}", f"{stop} <= {start}"
    return f"{stop} < {start}", f"{stop} >= {start}"


def _text(var: Variable) -> str | None:
    if isinstance(var, ScalarInputVar) and not var.read and var.source is not None:
        return var.source.name
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return str(var.value)
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        env = active_shape_env()
        return None if env is None else f"({env.render(var.value.expr)})"
    return None


def _hint(var: Variable) -> int | None:
    if isinstance(var, ScalarInputVar) and type(var.current) is int:
        return var.current
    if isinstance(var, ConstantVar) and type(var.value) is int:
        return var.value
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return var.value.hint
    return None


def can_end_graph(frame: Frame) -> bool:
    """Whether capture may end the graph after a loop of `frame` (`end_graph_after`): not
    inside another kept loop's body nor under a transform, which trace one graph."""
    return innermost(frame) is None and not frame.tracer.transform_depth


def kept_with_loop_types(line: int | None, why: str) -> None:
    """Log that a loop whose carried types depend on whether it ran is kept with the loop's
    types, where the graph cannot end after it (inside another kept loop's body): the
    enclosing loop checks at run time whether it ran (`mark_typed_if_ran`)."""
    log.debug(
        "the loop at line %s is kept with the loop's types: the type of %s after it depends "
        "on whether it ran, and the graph cannot end after it here",
        line,
        why,
    )


def mark_typed_if_ran(frame: Frame, retyped: Sequence[str], why: str) -> None:
    """Record on the enclosing kept loop that the `retyped` locals an inner loop kept with
    its types (`kept_with_loop_types`) have that type only where some inner loop assigning
    them ran: the enclosing loop ends the graph after it, and its backend checks at run
    time that one did (see entry_objects). `LoopFallback` (`why` names the values) where
    the enclosing loop cannot end the graph either (it is itself in a kept loop's body,
    under a transform) or no kept loop encloses this one: no flag would stand for the code
    that reads them, so the loop is not kept with the loop's types."""
    loops = active_loops(frame)
    if len(loops) != 1 or frame.tracer.transform_depth:
        where = "under a transform" if frame.tracer.transform_depth else "here"
        raise LoopFallback(
            f"the type of {why} after it depends on whether it ran, and no enclosing loop "
            f"can end the graph {where} to check that at run time"
        )
    loops[0].typed_if_ran.update(retyped)


def own_entries_kept(
    frame: Frame,
    head: int,
    traced: Sequence[Graph | None],
    retyped: Sequence[str],
    starting: dict[str, Variable],
    why: str,
) -> tuple[str, ...]:
    """Inside a kept body, the `retyped` locals that a `cond` branch of the inner loop at
    `head` (its `traced` first iteration and body) may leave as the Python scalar the
    enclosing iteration gave it (`s = 0.0` per row, its `starting` variable; see
    own_entries): the enclosing loop watches them (`watch_own_entries`). A value the
    enclosing loop carries in (its placeholder) is that loop's own entry, which its
    backend's flags follow (entry_objects.may_hold_entry). `LoopFallback` where the
    enclosing loop found code computing on one (`OwnEntries.unrolled`) or none encloses
    this one (a transform): no run-time flag stands for the type of the code after it."""
    if can_end_graph(frame):
        return ()
    constants = [name for name in retyped if _python_type(starting[name]) is not None]
    own = kept_by_branches(traced, constants) if constants else ()
    loop = innermost(frame)
    if own and (loop is None or head in loop.own_entries.unrolled):
        raise LoopFallback(
            f"the type of {why} after it depends on the branches its body took (one may "
            f"leave {', '.join(map(repr, own))} as the Python scalar it entered as), the "
            "code after it computes on it where no run-time flag can stand for that (its "
            "result leaves the iteration, or is no 0-d NumPy value), and the graph cannot "
            "end after it here"
        )
    return own


def watch_own_entries(
    frame: Frame, head: int, own: Sequence[str], starting: dict[str, Variable]
) -> None:
    """Record on the enclosing kept loop the results of the inner loop at `head`, just
    bound to the `own` locals, that may be the Python scalars they entered as
    (`own_entries_kept`), for its check of the code after it (`own_entries.computed_on`)."""
    loop = innermost(frame)
    if loop is None:
        return
    for name in own:
        var = frame.state.locals.get(name)
        kind = _python_type(starting[name])
        if isinstance(var, ArrayVar | ScalarNodeVar) and kind is not None:
            loop.own_entries.held[var.node] = (head, kind)


def watch_own_scalars(
    frame: Frame, head: int, results: Sequence[tuple[Variable, Variable, Node]]
) -> None:
    """Record on the enclosing kept loop the results of the `cond` of the `if` at `head`
    (each with its two branches' variables) where one branch keeps a Python scalar the
    iteration gave a local (`s = 0.1`) and the other a NumPy value: typed as the NumPy one, it
    may be the Python scalar (see own_entries)."""
    loop = innermost(frame)
    if loop is None:
        return
    for one, other, node in results:
        for mine, theirs in ((one, other), (other, one)):
            kind = _python_type(mine)
            numpy = isinstance(theirs, ArrayVar | ScalarNodeVar) and isinstance(
                theirs.node.meta, ArrayMeta
            )
            if kind is not None and numpy:
                loop.own_entries.held[node] = (head, kind)
                loop.own_entries.branches.add(head)


def _python_type(var: Variable) -> type | None:
    # The type of a Python scalar constant the enclosing iteration gave a local (`s = 0.1`);
    # None for other values: the value the enclosing loop carries in, and what the
    # iteration computes from it, are that loop's own entry, which its backend follows.
    if isinstance(var, ConstantVar) and type(var.value) in (bool, int, float, complex):
        return type(var.value)
    return None


def typed_if_ran_of(frame: Frame, carried: Sequence[str]) -> tuple[str, ...]:
    """The `carried` locals of an inner loop whose type after the enclosing loop holds only
    where some inner loop assigning them ran (`mark_typed_if_ran`): the `while_loop`
    node's `typed_if_ran`, which a backend sets a run-time flag for."""
    loop = innermost(frame)
    if loop is None:
        return ()
    return tuple(name for name in carried if name in loop.typed_if_ran)


# NOTE: what the type after a loop depends on, in `end_graph_after`'s reason.
WHETHER_IT_RAN = "whether it ran (its trip count is known only at run time)"
BRANCHES_TAKEN = "the branches its body took (one may leave it as it came)"


def end_graph_after(
    frame: Frame, exit_at: int, line: int | None, why: str, *, cause: str = WHETHER_IT_RAN
) -> None:
    """End the graph after a kept loop whose carried types depend on whether it ran (or
    on another run-time `cause`): capture resumes after the loop (a graph break at
    `resume_index`) on the values' actual types.

    In an inlined call the break is at the call. The break's own capture, which stops
    there (see graph_breaks), returns: the frame goes on to stop there.
    """
    # Late import: frame imports the loop modules that call this one.
    from .frame import BreakAt

    reason = (
        f"the type of {why} after the loop at line {line} depends on {cause}: the graph "
        "ends after the loop and capture resumes on the values' actual types"
    )
    if not frame.is_root:
        raise Unsupported(reason, frame.code.co_filename, line)
    at = resume_index(frame.instructions, exit_at)
    if frame.tracer.stop_at == at:
        return
    raise BreakAt(Unsupported(reason, frame.code.co_filename, line), at)


def resume_index(instructions: Sequence[Instruction], exit_at: int) -> int:
    """Where the graph ends after a loop exiting to `exit_at`: at the first instruction
    there that computes (the loads and stores before it only move values, traced as
    they are: a break function can run no lone load)."""
    at = exit_at
    while at + 1 < len(instructions) and instructions[at].opname in _MOVES:
        at += 1
    return at


# NOTE: normalized instructions that only move values between the stack and the locals.
_MOVES = frozenset(
    {"LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_DEREF", "PUSH_NULL", "STORE_FAST"}
)


def runs_node(tracer: Tracer, bounds: Sequence[Any], step: int) -> Any:
    """A graph value: whether the range of graph values `bounds` (start, stop, step) with
    the constant `step` runs at least once (`stop > start`, or `stop < start`)."""
    start, stop = bounds[0], bounds[1]
    return tracer.graph.call(get_op("py_binary"), stop, start, operator="gt" if step > 0 else "lt")


def branch_on_entry(
    frame: Frame, exit_at: int, initial: dict[str, Variable], ran: Callable[[], Variable]
) -> None:
    """Inside a kept body, after a loop exiting to `exit_at` that may run zero times: the
    rest of the iteration traced twice, on the loop's results and on the `initial`
    variables of the locals it retypes, into one `cond` on `ran()`; each way computes on
    its own types. `LoopFallback` where the two ways leave a value the enclosing loop
    carries different types: no one carried type holds both (the enclosing loop's first
    iteration, on its initial types, would give back the wrong one)."""
    # Late import: branch_capture traces blocks with block_trace, which keeps loops.
    from .branch_capture import emit_cond, trace_block

    loop = innermost(frame)
    assert loop is not None
    state = frame.state
    results = {name: state.locals[name] for name in initial}
    after_run = trace_block(frame, exit_at, loop.stop, high=loop.high)
    state.locals.update(initial)
    try:
        after_none = trace_block(frame, exit_at, loop.stop, high=loop.high)
    finally:
        state.locals.update(results)
    kept = {*loop.carried, BROKE}
    for name in kept:
        one, other = after_run.locals.get(name), after_none.locals.get(name)
        if one is None or other is None or one is other:
            continue
        metas = [meta_of_value(graph_value(var, frame.tracer)) for var in (one, other)]
        if _type_of(metas[0]) != _type_of(metas[1]):
            raise LoopFallback(
                f"{name!r} is {_shown(metas[0])} after an iteration whose inner loop ran and "
                f"{_shown(metas[1])} after one whose inner loop did not: its type after the "
                "loop depends on the inner trip counts"
            )
    emit_cond(frame, ran(), after_run, after_none, (exit_at, loop.stop), kept=kept)
