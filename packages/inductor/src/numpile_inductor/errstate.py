"""NumPy's floating-point error state, as compiled graphs honour it.

NumPy checks the CPU's floating-point flags after each ufunc loop and, as `np.seterr` /
`np.errstate` say per category (divide, over, under, invalid), ignores them, warns,
raises, calls a function or logs. Compiled graphs honour the state in two ways:

- The kernels run, and each gathers the flags its threads raise. When a call raised a
  flag of a category not set to "ignore" (NumPy's default warns for all but underflow),
  the module fails the call with `FloatingPointFlagsError` before any result is written
  back, and the graph runs again op by op with NumPy: `FloatingPointError`, error
  callbacks and warnings then come exactly as in eager, at the op that raised them, after
  the in-place writes of the ops before it. Each op is called from the user's line that
  made it (`Graph.locations`, `SourceLine`): the same RuntimeWarnings, messages,
  categories and locations as eager, so warning filters (including "error" and the
  once-per-line default) behave the same. Calls that raise no flag pay only for the
  flag reads in the kernels.

A graph whose kernels write its inputs in place (functionalization refused) cannot run
again as it is (one that writes only arrays it made, a loop filling `np.empty(n)`, can:
`numpile_capture.written_inputs`); where it computes NumPy scalar math on integers
(`may_overflow_scalars`: a loop's `s = s * k` on `np.int64`) or on floats
(`may_raise_float_flags`: `P[i] = P[i] / s`), each call copies the inputs it writes first
(while such a flag warns: `np.errstate(over="ignore")` saves an integer graph's copy), and
a call that raised a flag that warns puts them back and runs op by op with NumPy: eager's
warnings ("overflow encountered in scalar multiply", one per overflowing iteration, from
the user's line) and eager's writes (a warnings filter set to "error" stops the writes
where eager stops). Any other such graph warns once per category, naming the categories
and the ops that may have raised them. Such a graph, or one whose module calls NumPy
itself (matmul, sort...), runs op by op from the start whenever some category asks for
more than a warning ("raise", "call", "print", "log"): a NumPy call inside the module
would raise or call back there.

    >>> fn = honouring_errstate(kernel_fn, graph, module, replayable=True)  # doctest: +SKIP
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import types
import warnings
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeAlias

import attrs
import numpy as np

import numpile_runtime as rt
from numpile_capture import ArrayMeta, Graph, Node, ScalarMeta, run_graph

from .codegen.common import SCALAR_MATH

log = logging.getLogger("numpile.inductor.errstate")


class FloatingPointFlagsError(Exception):
    """A compiled call raised floating-point flags NumPy would warn about (caught here)."""


def _state_variable() -> contextvars.ContextVar[Any] | None:
    # NumPy 2 keeps the error state in a context variable, a new object per change; with
    # another layout, None (np.geterr() is then read on every call).
    try:
        module = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # pragma: no cover
        return None
    variable = getattr(module, "_extobj_contextvar", None)
    return variable if isinstance(variable, contextvars.ContextVar) else None


_state_var = _state_variable()

# What loads a compiled graph's module again: the call over it (set-up replayed), and it.
Reload: TypeAlias = Callable[[], tuple[Callable[..., Any], types.ModuleType]]

_STRICT_MODES = frozenset({"raise", "call", "print", "log"})

# NumPy's error categories as the bits a compiled module reports (see codegen/c/wrapper.py).
_CATEGORY_BITS = {"divide": 1, "over": 2, "under": 4, "invalid": 8}
_OVER = _CATEGORY_BITS["over"]

# The ufuncs whose NumPy scalar math on integers checks overflow (codegen.common).
_SCALAR_MATH_OPS = frozenset(name.removeprefix("scalar_") for name in SCALAR_MATH)

_MESSAGES = {
    "divide": "divide by zero",
    "over": "overflow",
    "under": "underflow",
    "invalid": "invalid value",
}


def _categories(modes: Mapping[str, object], wanted: Collection[str]) -> int:
    # The bits (divide 1, over 2, under 4, invalid 8) of the categories in a wanted mode.
    return sum(_CATEGORY_BITS[name] for name, mode in modes.items() if mode in wanted)


@attrs.define
class _Report:
    # What a module was last told, shared by every callable of the module (a module
    # loaded twice is one object): the error state read and what it asks for.
    state: Any = None
    eager: bool = False  # run op by op from the start (a strict state the kernels cannot take)
    mask: int = 0  # the categories that warn
    # The same for the C forms (numpile_runtime.errstate_call): id(state), eager, mask.
    words: array[int] = attrs.field(factory=lambda: array("q", bytes(8 * rt.ERRSTATE_WORDS)))

    def told(self) -> None:
        """Publish `state`, `eager` and `mask` to the C forms (the state's id last)."""
        self.words[1] = int(self.eager)
        self.words[2] = self.mask
        self.words[0] = id(self.state)


def honouring_errstate(
    call: Callable[..., Any],
    graph: Graph,
    module: types.ModuleType,
    *,
    replayable: bool,
    restorable: bool = False,
    written: Collection[int] | None = None,
    externs: bool = False,
    warned: Collection[Node] = (),
    reload: Reload | None = None,
) -> Callable[..., Any]:
    """`call`, honouring NumPy's error state as the module docstring says.

    `module` is the compiled module `call` runs; `replayable` says that a failed call
    left the inputs untouched (the pure graph of a functionalized one, or no mutation),
    so `graph` may run again with NumPy; `restorable` (for a graph that is not) that a call
    copies its array inputs first (those at positions `written`, where given), to put them
    back and run `graph` with NumPy after a flag that warns (overflow only, unless the
    graph computes on floats: `may_raise_float_flags`); `externs` that the module calls
    NumPy itself;
    the ops of `warned` (those extern calls, which gave their own warnings) then run
    quietly. The state is read once per change of NumPy's error-state object: a call pays
    an identity check and one Python frame.

    With `reload`, the runtime may unload `module` while the callable lives (the bound on
    loaded libraries, `numpile_runtime.make_evictable`): the eviction swaps what the
    callable holds of the module for a stub, and the next call loads the module again
    with `reload()` (the call over the loaded module, its set-up replayed), tells it the
    error state and runs; a module that cannot load again runs `graph` with NumPy. Calls
    pay nothing for it.
    """
    report = _report_of(module)
    set_report = module.set_fp_report
    fp_flags = module.fp_flags
    # Under a strict state the kernels still run when a flagged call can run again op by
    # op, where NumPy raises or calls back at the op that raised: a replayable graph whose
    # module makes no NumPy call of its own (one would raise or call back inside it).
    kernels_when_strict = replayable and not externs

    def update() -> None:
        report.words[0] = 0  # the C forms take the Python path until the module is told
        modes = np.geterr()
        strict = any(mode in _STRICT_MODES for mode in modes.values())
        report.eager = strict and not kernels_when_strict
        report.mask = _categories(modes, ("warn",))
        checked = _categories(modes, ("warn", *_STRICT_MODES))
        set_report(checked if replayable else 0, FloatingPointFlagsError)
        report.told()

    if _state_var is None:  # pragma: no cover - see the import above

        def read_state() -> Any:
            return tuple(sorted(np.geterr().items()))

    else:
        read_state = _state_var.get

    # The C forms made for call gates (`gate_form` below), disarmed when the module goes.
    forms: list[Any] = []
    unloaded = False

    if reload is not None:
        # NOTE: `call`, `set_report` and `fp_flags` are all that hold the module (and
        # `reloading` while it runs): the eviction swaps them, so that the module can die.

        def evict() -> None:
            nonlocal call, set_report, fp_flags, unloaded
            call = reloading
            set_report = _unloaded_report
            fp_flags = _no_flags
            unloaded = True  # no C form from now on: it would call the module directly
            for form in forms:
                form.disarm()  # the Python path from now on: it loads the module again
            forms.clear()

        def reloading(*args: Any) -> Any:
            nonlocal call, set_report, fp_flags, report
            try:
                loaded_call, loaded = reload()
            except Exception as error:  # any failure: NumPy runs the graph, never an error
                log.warning("a graph's module did not load again (%s): NumPy runs the graph", error)
                return run_graph(graph, args)
            report = _report_of(loaded)
            set_report = loaded.set_fp_report
            fp_flags = loaded.fp_flags
            report.state = read_state()
            update()
            call = loaded_call
            rt.make_evictable(loaded, evict)  # after the swap: see `make_evictable`
            return loaded_call(*args)

        rt.make_evictable(module, evict)

    def warn(raised: int) -> None:
        # Called from C: the same depth of Python frames as `run_reporting`'s call.
        _warn_categories(graph, raised)

    def replay(*args: Any) -> Any:
        return run_warning(graph, args, warned)

    def run_reporting(*args: Any) -> Any:
        # A graph that cannot run again: the flags raised, once per category.
        state = read_state()
        if state is not report.state:
            report.state = state
            update()
        if report.eager:
            return run_graph(graph, args)
        result = call(*args)
        if report.mask:
            raised = fp_flags() & report.mask
            if raised:
                _warn_categories(graph, raised)
        return result

    # NOTE: the copies' buffers, by input position, shape and dtype, kept between calls (no
    # allocation and page faults per call); a call takes them out while it runs, so calls
    # in other threads make their own.
    buffers: dict[tuple[Any, ...], np.ndarray[Any, Any]] = {}
    # The categories whose flag makes a restorable call put its inputs back and replay.
    replayed = sum(_CATEGORY_BITS.values()) if may_raise_float_flags(graph) else _OVER
    copied = None if written is None else sorted(written)

    def run_restoring(*args: Any) -> Any:
        # A graph that cannot run again but may raise flags: the array inputs it writes
        # copied first while such a flag warns, put back for NumPy's run after one.
        state = read_state()
        if state is not report.state:
            report.state = state
            update()
        if report.eager or not report.mask & replayed:
            return run_reporting(*args)
        saved = []
        for index in range(len(args)) if copied is None else copied:
            value = args[index]
            if _writeable(value):
                key = (index, value.shape, value.dtype)
                buffer = buffers.pop(key, None)
                if buffer is None:
                    buffer = np.empty_like(value, order="K")
                np.copyto(buffer, value)
                saved.append((key, value, buffer))
        try:
            result = call(*args)
            if fp_flags() & report.mask:
                for _, value, buffer in saved:
                    np.copyto(value, buffer)
                return run_warning(graph, args, warned)
            return result
        finally:
            for key, _, buffer in saved:
                buffers[key] = buffer

    if restorable:
        run_python: Callable[..., Any] = run_restoring
    elif not replayable:
        run_python = run_reporting
    else:

        def run(*args: Any) -> Any:
            state = read_state()
            if state is not report.state:
                report.state = state  # held, so its id is never reused while compared
                update()
            if report.eager:
                return run_graph(graph, args)
            try:
                return call(*args)
            except FloatingPointFlagsError:
                return run_warning(graph, args, warned)

        run_python = run

    def gate_form() -> Any:
        # The same call as an `ErrstateCall` (numpile_runtime.errstate_call): the state's
        # check in C, `run_python` where it fails. None without the gate extension, with
        # another layout of NumPy's state, or once the module was unloaded.
        gates = rt.gate_module(wait=False)
        if gates is None or _state_var is None or unloaded or restorable:
            return None
        try:
            form = gates.ErrstateCall(
                call,
                run_python,
                _state_var,
                report.words,
                FloatingPointFlagsError,
                warn if not replayable else replay,
                fp_flags if not replayable else None,
            )
        except (TypeError, ValueError) as error:  # never fail a gate over it
            log.debug("no C form of a compiled call (%s): the Python one runs", error)
            return None
        forms.append(form)
        return form

    setattr(run_python, rt.GATE_FORM, gate_form)
    return run_python


def may_overflow_scalars(graph: Graph) -> bool:
    """Whether `graph` (its loop bodies included) computes NumPy scalar math on integers,
    which may overflow and warn ("overflow encountered in scalar multiply").

    >>> may_overflow_scalars(Graph())
    False
    """
    for node in graph.nodes:
        op = node.op
        if op is None:
            continue
        meta = node.meta
        if (
            op.name.rstrip("_") in _SCALAR_MATH_OPS
            and isinstance(meta, ArrayMeta)
            and meta.shape == ()
            and meta.dtype.kind in "iu"
        ):
            return True
        if any(
            isinstance(value, Graph) and may_overflow_scalars(value) for _, value in node.params
        ):
            return True
    return False


def may_raise_float_flags(graph: Graph) -> bool:
    """Whether `graph` (its loop bodies included) computes on floating-point values where
    NumPy may warn (divide by zero, overflow, invalid value): a computing op with a float
    or complex operand or result, but not a bool result (comparisons never warn).

    >>> may_raise_float_flags(Graph())
    False
    """
    for node in graph.nodes:
        op = node.op
        if op is None:
            continue
        if op.computes and not _is_bool(node.meta):
            values = [node.meta, *(v.meta for v in node.inputs if isinstance(v, Node))]
            if any(_is_inexact(meta) for meta in values):
                return True
        if any(
            isinstance(value, Graph) and may_raise_float_flags(value) for _, value in node.params
        ):
            return True
    return False


def _is_bool(meta: Any) -> bool:
    return isinstance(meta, ArrayMeta) and meta.dtype.kind == "b"


def _is_inexact(meta: Any) -> bool:
    if isinstance(meta, ArrayMeta):
        return meta.dtype.kind in "fc"
    return isinstance(meta, ScalarMeta) and meta.type in (float, complex)


def _writeable(value: Any) -> bool:
    # An array input a graph may write in place (a copy of it is kept for the replay).
    return isinstance(value, np.ndarray) and value.flags.writeable


def _report_of(module: types.ModuleType) -> _Report:
    report: _Report = vars(module).setdefault("numpile_errstate", _Report())
    return report


def _unloaded_report(mask: int, error: type[BaseException]) -> None:
    # The module is unloaded: the stub that loads it again tells it the state.
    return None


def _no_flags() -> int:
    # The module was unloaded after a call: its flags are gone with it.
    return 0


def run_warning(graph: Graph, inputs: Sequence[Any], warned: Collection[Node] = ()) -> Any:
    """Evaluate `graph` op by op with NumPy (`run_graph`): each op's warnings come from the
    user's line the op was captured from, where eager NumPy reports them; the ops of
    `warned` already gave theirs and run quietly.

    >>> run_warning(graph, (np.zeros(3),))  # doctest: +SKIP
    """
    rt.count("inductor_errstate_replay")
    log.debug(
        "kernels raised floating-point flags NumPy warns about: the graph runs op by op with"
        " NumPy for its warnings (np.errstate(...='ignore') keeps the kernels)"
    )
    return run_graph(graph, inputs, warned)


def _warn_categories(graph: Graph, raised: int) -> None:
    # A graph that cannot run again: NumPy's wording, naming the ops that may have raised.
    ops = sorted({node.op.name for node in graph.nodes if node.op is not None and node.op.computes})
    place = next((graph.locations[n] for n in graph.nodes if n in graph.locations), None)
    for name, bit in _CATEGORY_BITS.items():
        if raised & bit:
            message = f"{_MESSAGES[name]} encountered in {' or '.join(ops) or 'a compiled graph'}"
            if place is None:
                warnings.warn(message, RuntimeWarning, stacklevel=3)
            else:
                place.call(warnings.warn, (message, RuntimeWarning), {})


# -- extern NumPy calls inside a module ---------------------------------------------------


def extern_origin(graph: Graph, target: Graph, node_name: str) -> int:
    """The position in `graph` of a node captured at the line that `target`'s node
    `node_name` came from (functionalization keeps the lines); -1 when there is none.
    Stored with the compiled module, it locates the extern call again on a cache hit.
    """
    node = next((n for n in target.nodes if n.name == node_name), None)
    line = target.locations.get(node) if node is not None else None
    if line is None:
        return -1
    return next((i for i, n in enumerate(graph.nodes) if graph.locations.get(n) is line), -1)


def called_from_line(graph: Graph, origin: int, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, calling NumPy from the line of `graph`'s node `origin` (where NumPy warns)."""
    line = graph.locations.get(graph.nodes[origin]) if 0 <= origin < len(graph.nodes) else None
    if line is None:
        return fn
    return lambda *values: line.call(fn, values, {})


def extern_nodes(graph: Graph, externs: Sequence[tuple[str, int]]) -> frozenset[Node]:
    """The nodes of `graph` that ran as the extern calls `(op name, origin)`: that op at
    the origin's line (an in-place op and its functional twin count as the same op)."""
    found: set[Node] = set()
    for op_name, origin in externs:
        if 0 <= origin < len(graph.nodes):
            line = graph.locations.get(graph.nodes[origin])
            found |= {
                node
                for node in graph.nodes
                if node.op is not None
                and node.op.name.rstrip("_") == op_name.rstrip("_")
                and graph.locations.get(node) is line
            }
    return frozenset(found)
