"""Frames: one function's bytecode run on variables, one handler per instruction.

`Frame.run` steps through the normalized instructions of a code object (see
`bytecode`); `_HANDLERS` maps each opcode name to a small function (in the
`opcodes_*` modules, one per family of opcodes) that pops
and pushes variables, asks the tracer to call, inline or look up attributes,
and records array work in the graph. An opcode without a handler, or a
handler meeting something it cannot capture, raises `Unsupported` with the
user's file and line.

    >>> "BINARY_OP" in _HANDLERS
    True
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from numpile_guards import StateSource

from . import opcodes_containers, opcodes_flow, opcodes_stack
from .body_work import array_work, pays_for_pieces
from .bytecode import Instruction, normalized_instructions
from .capture_result import Unsupported
from .config import config
from .forever_loop import forever_heads, keep_forever
from .frame_state import FrameState
from .graph import Node
from .loop_region import LoopInPython, SmallBodies, in_python
from .source_line import SourceLine
from .trace_rules import ForbiddenCallError
from .unroll_budget import MAX_UNROLLED_NODES, UnrollBudget
from .variables import ConstantVar, FunctionVar, Variable

if TYPE_CHECKING:
    from .tracer import Tracer
    from .variable_builder import VariableBuilder

# NOTE: backward jumps (loop iterations, all loops together) allowed in one capture.
MAX_BACKWARD_JUMPS = 10_000


class BreakAt(Unsupported):
    """Capture stopped at normalized instruction `index` of the root frame (a graph break).

    `reason`, `filename` and `lineno` say why and where in the user's code (the
    innermost line, inside an inlined call when the break happened there).
    """

    def __init__(self, exc: Unsupported, index: int) -> None:
        super().__init__(exc.reason, exc.filename, exc.lineno)
        self.index = index
        # NOTE: the break is at a loop's head and the whole loop runs in Python (loop_region).
        self.whole_loop = isinstance(exc, LoopInPython)


class ReturnWithEffects(BreakAt):
    """The root frame returns with side effects to replay: not a graph break, but the
    return runs in Python after the graph, as a break's instruction does."""


class StopAtBreak(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The root frame reached the instruction it was told to stop before (see Tracer)."""

    def __init__(self, frame: Frame) -> None:
        super().__init__("stopped at a graph break")
        self.frame = frame


class Frame:
    """One frame being traced: runs its normalized instructions through the handler table.

    The tracer makes one per call it inlines; `run()` returns the frame's return value.

        >>> Frame(tracer, function_var).run()  # doctest: +SKIP
    """

    def __init__(self, tracer: Tracer, fn: FunctionVar, *, is_root: bool = False) -> None:
        self.tracer = tracer
        self.is_root = is_root
        self.fn = fn
        self.code = fn.code
        self.instructions = normalized_instructions(fn.code)
        self.state = FrameState(fn.code)
        for name, cell in zip(fn.code.co_freevars, fn.closure, strict=True):
            self.state.locals[name] = cell
        self.pc = 0
        self.result: Variable | None = None
        self.current: Instruction | None = None
        # NOTE: a generator's frame stops at each `yield` with the value here (see next_yield).
        self.yielded: Variable | None = None
        self.suspended = False
        self.unroll = UnrollBudget()
        self.small_bodies = SmallBodies()

    def run(self) -> Variable:
        self._loop()
        assert self.result is not None, "a frame that is not a generator yielded"
        return self.result

    def next_yield(self) -> Variable | None:
        """Run a generator's frame to its next `yield`: the value, or None once it returned."""
        if self.result is not None:
            return None
        if self.suspended:
            self.state.push(ConstantVar(None))  # the value `send` gives: always None here
        self.suspended = False
        self.yielded = None
        self._loop()
        value, self.yielded = self.yielded, None
        self.suspended = value is not None
        return value

    def _loop(self) -> None:
        stop_at = self.tracer.stop_at if self.is_root else None
        heads = forever_heads(self)
        while self.result is None and self.yielded is None:
            if self.pc == stop_at:
                raise StopAtBreak(self)
            if self.pc in heads and keep_forever(self):
                continue  # a `while True:` loop that breaks on run-time values, kept
            inst = self.instructions[self.pc]
            self.current = inst
            self.pc += 1
            nodes_before = len(self.tracer.graph.nodes)
            try:
                self._step(inst)
                self._locate(nodes_before, inst)
                if inst.in_try:
                    _check_no_run_time_error(
                        self.tracer.graph.nodes[nodes_before:], self.tracer.builder
                    )
            except BreakAt:
                raise
            except ForbiddenCallError as exc:
                if exc.filename is not None:
                    raise
                # Never a break, not even inside a try block: the user's error, at their line.
                raise ForbiddenCallError(exc.reason, self.code.co_filename, inst.lineno) from None
            except Unsupported as exc:
                self._unsupported(exc, inst)
            except Exception as error:
                if not inst.in_try:
                    raise
                # Raised inside a try block: the instruction runs in Python, where the
                # handler sees the exception.
                reason = f"{type(error).__name__} raised inside a try block (its handler runs in "
                self._unsupported(Unsupported(reason + "Python)"), inst)

    def _locate(self, nodes_before: int, inst: Instruction) -> None:
        # The nodes `inst` added came from its line (an inlined call's frame located
        # its own nodes first, at the lines inside the callee).
        graph = self.tracer.graph
        if len(graph.nodes) == nodes_before:
            return
        added = graph.nodes[nodes_before:]
        self.tracer.iteration_nodes.update(added)
        self.tracer.array_work += array_work(added, fused=self.tracer.iteration_nodes)
        if inst.lineno is None:
            return
        line = SourceLine(self.code.co_filename, inst.lineno, self.fn.globals)
        for node in graph.nodes[nodes_before:]:
            graph.locations.setdefault(node, line)

    def _unsupported(self, exc: Unsupported, inst: Instruction) -> None:
        if exc.filename is None:
            exc = Unsupported(exc.reason, self.code.co_filename, inst.lineno)
        if self.is_root:
            loop = self.small_bodies.enclosing(self.pc - 1, self.tracer.array_work, exc)
            if loop is not None:
                # A break in the unrolled body of a loop whose body saves little compiled:
                # the whole loop runs in Python instead (loop_region).
                head, reason = loop
                line = self.instructions[head].lineno
                raise BreakAt(in_python(reason, self.code.co_filename, line), head) from None
            raise BreakAt(exc, self.pc - 1) from None
        raise exc from None

    def step(self, inst: Instruction) -> None:
        """Run one instruction (a loop's body is traced this way, one iteration); inside a
        `try` block, `Unsupported` when a node it added may raise on some data (a kept
        loop runs outside the user's exception table, as a graph does)."""
        nodes_before = len(self.tracer.graph.nodes)
        self._step(inst)
        if inst.in_try:
            _check_no_run_time_error(self.tracer.graph.nodes[nodes_before:], self.tracer.builder)

    def locate(self, nodes_before: int, inst: Instruction) -> None:
        """Record that the nodes added since `nodes_before` came from `inst`'s line."""
        self._locate(nodes_before, inst)

    def locate_line(self, inst: Instruction) -> SourceLine | None:
        """The user's line of `inst` in this frame, if it has one."""
        if inst.lineno is None:
            return None
        return SourceLine(self.code.co_filename, inst.lineno, self.fn.globals)

    def _step(self, inst: Instruction) -> None:
        handler = _HANDLERS.get(inst.opname)
        if handler is None:
            raise Unsupported(f"not supported yet: the {inst.opname} instruction")
        handler(self, inst)

    def jump(self, inst: Instruction) -> None:
        assert inst.target is not None
        if inst.target < self.pc:
            self.tracer.backward_jumps += 1
            if self.tracer.backward_jumps > MAX_BACKWARD_JUMPS:
                raise Unsupported("not supported yet: a loop that runs too many iterations")
            self._within_unroll_budget(inst.target)
        self.pc = inst.target

    def _within_unroll_budget(self, head: int) -> None:
        # A loop run at capture time past the budget breaks the graph at its head (see
        # unroll_budget); a differentiated loop must unroll (grad has no loop VJP yet).
        tracer = self.tracer
        added = self.unroll.back_jump(
            tracer.graph, source=self.pc - 1, head=head, work=tracer.array_work
        )
        if added is None or tracer.transform_depth or not tracer.keep_loops:
            return
        at_head = self.is_root and self.instructions[head].opname == "FOR_ITER"
        line = self.instructions[head if at_head else self.pc - 1].lineno  # the for / while
        why = self.unroll.reason(head)
        if (
            at_head
            and config.small_loops_in_python
            and not pays_for_pieces(self.unroll.work_per_iteration(head, tracer.array_work))
        ):
            # A compiled piece per iteration would cost more than the body's Python (a
            # scalar recurrence whose types settle only in its second iteration): the whole
            # loop runs in Python (loop_region), as a breaking body of little work does.
            reason = (
                f"loop at line {line} {why}unrolled past the unroll budget of "
                f"{MAX_UNROLLED_NODES} graph nodes"
            )
            raise BreakAt(in_python(reason, self.code.co_filename, line), head)
        exc = Unsupported(
            f"loop at line {line} {why}unrolled at capture until its iterations added {added} "
            f"graph nodes, past the unroll budget of {MAX_UNROLLED_NODES}: it runs in Python, "
            "its body compiled as a resume function whose index is a run-time input",
            self.code.co_filename,
            line,
        )
        if at_head:
            raise BreakAt(exc, head)  # the whole loop runs in Python
        test = self.instructions[self.pc - 2] if self.pc >= 2 else None
        if self.is_root and test is not None and test.opname.startswith("POP_JUMP"):
            # 3.12+ end a while loop's body with its test and an unconditional jump back,
            # where no resume function can start: the break is at the test.
            raise BreakAt(exc, self.pc - 2)
        raise exc  # a break at the jump (3.11's test jumps back itself), after one iteration

    def load_global(self, name: str) -> Variable:
        builder = self.tracer.builder
        written = self.tracer.side_effects.globals.get(name)
        if written is not None and self.fn.globals is builder.root_globals:
            return written
        if name in self.fn.globals:
            value = self.fn.globals[name]
            if self.fn.trusted:
                return builder.build_unguarded(value)
            if self.fn.globals_base is None and self.fn.globals is not builder.root_globals:
                raise Unsupported(
                    f"not supported yet: reading global {name!r} of {self.fn.describe()}"
                )
            return builder.build(value, builder.global_source(name, self.fn.globals_base))
        if hasattr(builtins, name):
            # TODO(issue 3): guard that the global does not come to shadow the builtin.
            return builder.build_unguarded(getattr(builtins, name))
        raise NameError(f"name '{name}' is not defined")


Handler = Callable[[Frame, Instruction], None]

# NOTE: one table for all opcodes, merged from the handler modules (one per family).
_HANDLERS: dict[str, Handler] = {
    **opcodes_stack.HANDLERS,
    **opcodes_containers.HANDLERS,
    **opcodes_flow.HANDLERS,
}


def numpy_errors_raise() -> bool:
    """Whether a floating-point error in a NumPy op may raise: NumPy's error state raises
    in some category, or warns in some category while a warnings filter may turn
    RuntimeWarnings into errors (any "error" filter for them counts)."""
    modes = np.geterr().values()
    return "raise" in modes or ("warn" in modes and _runtime_warnings_may_raise())


def _runtime_warnings_may_raise() -> bool:
    for action, message, category, module, lineno in warnings.filters:
        if not issubclass(RuntimeWarning, category):
            continue
        if action == "error":
            return True
        if message is None and module is None and not lineno:
            return False  # a filter for every RuntimeWarning decides
    return False


_ERRORS_RAISE = StateSource("numpy_errors_raise", numpy_errors_raise)


def _check_no_run_time_error(nodes: list[Node], builder: VariableBuilder) -> None:
    # A graph runs outside the user's exception table: an op that may raise on some data
    # (a singular matrix, an index out of bounds) must run in Python inside a try block,
    # where the handler can see what it raises. So must every computing op while NumPy's
    # floating-point errors raise (a `with np.errstate(...)` or an "error" warnings filter
    # around the try block); the entry is guarded on that, so a call under the other
    # state captures again.
    raising_state: bool | None = None
    for node in nodes:
        error = node.run_time_error()
        if not error and node.op is not None and node.op.computes:
            if raising_state is None:
                raising_state = numpy_errors_raise()
                builder.guard_state(_ERRORS_RAISE, raising_state)
            if raising_state:
                error = "FloatingPointError or RuntimeWarning (NumPy's errors raise)"
        if error:
            raise Unsupported(
                f"{node.op} may raise {error} inside a try block (it runs in Python, "
                "where the handler sees it)"
            )
