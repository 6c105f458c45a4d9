"""A `return` inside a kept `for` body whose code differs from the code after the loop.

`for i in range(n): if x[i] > t: return i` then `return -1`: the loop stays one
`for_loop` node. Its body carries two more values, whether it returned (RETURNED) and
what (RETVAL, starting as a zero of the returned value's type); a `return` in the body
sets both and stops the loop as a `break` does (`loop_exit`). After the node, the code
after the loop is traced to its own `return`, into the else branch of a `cond` on
RETURNED whose then branch gives RETVAL: the function's result, with the code after the
loop (and its writes) run only when the loop did not return, as in eager Python.

Kept only for a loop at the top of its frame (not inside another kept body), a returned
value that is a scalar (Python or NumPy) or a 0-d array, and code after the loop that
traces without a graph break; else the loop is not kept (`LoopFallback`), as before.

    >>> def first_above(x, t):
    ...     for i in range(x.shape[0]):
    ...         if x[i] > t:
    ...             return i
    ...     return -1
    >>> print(capture_function(first_above, (np.ones(3), 0.5), {}).graph)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .branch_capture import Block, emit_cond, trace_to_return
from .graph import Graph
from .loop_capture import LoopFallback, carried_meta
from .loop_exit import RETURNED, RETVAL, LoopExit
from .meta import ArrayMeta, ScalarMeta
from .variables import ConstantVar, Variable

if TYPE_CHECKING:
    from .frame import Frame


def carry_return(
    frame: Frame,
    loop: LoopExit,
    found: Variable,
    metas: dict[str, ArrayMeta | ScalarMeta],
    scalars: set[str],
) -> None:
    """Make the body's traces carry RETURNED and RETVAL (typed after `found`, the value a
    first trace returned): locals bound before the loop, carried by `loop` and `metas`."""
    meta = carried_meta(found)
    if meta is None or (isinstance(meta, ArrayMeta) and meta.shape != ()):
        raise LoopFallback(f"it returns {found.describe()} from inside the loop")
    zero = meta.type(0) if isinstance(meta, ScalarMeta) else meta.dtype.type(0)
    state = frame.state
    state.locals[RETURNED] = ConstantVar(False)
    state.locals[RETVAL] = ConstantVar(zero)
    metas[RETURNED] = ScalarMeta(bool)
    metas[RETVAL] = ArrayMeta((), meta.dtype) if isinstance(meta, ArrayMeta) else meta
    scalars.update((RETURNED, RETVAL))
    loop.carried = (*loop.carried, RETURNED, RETVAL)
    assert loop.returns is not None
    loop.returns.carried = True


def return_after_loop(frame: Frame) -> None:
    """The frame stands after a kept loop that may have returned: trace the code after it
    to its return and set the frame's result to RETVAL if the loop returned, else to
    that code's result (a `cond` node)."""
    state = frame.state
    returned = state.locals[RETURNED]
    value = state.locals[RETVAL]
    locals_now = dict(state.locals)
    rest = trace_to_return(frame, frame.pc)
    stay = Block(Graph(), locals_now, [*state.stack, value])
    rest.locals = locals_now  # only the result is merged: the function ends here
    emit_cond(frame, returned, stay, rest, (frame.pc, len(frame.instructions)))
    frame.result = state.pop()
