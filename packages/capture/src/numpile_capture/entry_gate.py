"""Entry gates: a compiled function's remembered entry checked and called from C.

The dispatcher remembers the entries a function's last two hits found (see `dispatch`).
Where the call gate extension is loaded (`numpile_runtime.call_gate`, built once per
machine with the kernels' compiler) and an entry's guards and inputs translate into a gate
program (`numpile_guards.gate_plan`), `make_gate` returns a gate for it, which the
dispatcher arms with the generation of the epoch the hit was found in. No call waits for
the extension's build: until it is loaded, calls take the Python path; once it is, the
dispatch epoch advances and each function makes its gate on its next call. `install_caller`
makes a class's `__call__` the extension's `Caller`: a call reads the instance's `_gate`
(one gate, or a list of the two remembered entries' gates, which the `Caller` keeps most
recently answered first) and, when a gate is armed, valid and its checks hold, runs the
compiled callable with no Python frame; anything else (keywords, a guard miss, a stale
generation, a region of plain calls) runs the class's Python `__call__`, the reference, as
before. The gate calls the entry's compiled callable in the form
`numpile_runtime.gate_form` gives (a C form where it offers one).

    >>> make_gate(fn, entry, guards, NotCompiledYet)  # doctest: +SKIP
    <numpile_call_gate.Gate object at ...>
"""

from __future__ import annotations

import inspect
import logging
import types
from collections.abc import Callable, Sequence
from typing import Any

from numpile_guards import (
    VALIDITY,
    CacheEntry,
    GateRefusedError,
    Guard,
    advance_epoch,
    gate_plan,
)
from numpile_runtime import gate_form, gate_module, on_gate_loaded

__all__ = ["GATE_ATTRIBUTE", "gates_available", "install_caller", "make_gate"]

log = logging.getLogger("numpile.capture.gate")

# The instance attribute the installed `__call__` reads (a gate, or None).
GATE_ATTRIBUTE = "_gate"

_FREE_FORM = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

# NOTE: a compiled function's second call does not wait for the extension's build (a
# compiler process, in a fresh cache folder): it is built in the background and, once
# loaded, a new epoch sends every remembered hit back through a lookup, which makes its gate.
on_gate_loaded(advance_epoch)


def gates_available() -> bool:
    """Whether the gate extension is loaded (else `make_gate` answers None for now).

    >>> gates_available() in (True, False)
    True
    """
    return gate_module(wait=False) is not None


def make_gate(
    fn: types.FunctionType, entry: CacheEntry, guards: Sequence[Guard], retry: type[BaseException]
) -> Any:
    """A gate checking `guards` and calling `entry.compiled` for positional calls of `fn`,
    or None (no extension, or not yet: its build is queued; a graph break's tail, or a
    guard or source a gate cannot take).
    `retry` is the exception after which the call goes the Python way after all."""
    module = gate_module(wait=False)
    if module is None or entry.tail is not None or entry.inputs is None:
        return None
    code = fn.__code__
    if code.co_kwonlyargcount or code.co_flags & _FREE_FORM:
        return None
    parameters = code.co_varnames[: code.co_argcount]
    try:
        plan = gate_plan(guards, entry.inputs, parameters)
        # The compiled callable's form for a gate: its C form where it has one (the
        # inductor's error-state check, say), so that no Python frame runs between.
        target = gate_form(entry.compiled)
        return module.Gate(fn, target, plan.program, plan.inputs, VALIDITY, code.co_argcount, retry)
    except (GateRefusedError, ValueError, TypeError, OverflowError) as refused:
        log.debug("%s keeps the Python hit path: %s", fn.__qualname__, refused)
        return None


def install_caller(cls: type, retry: Callable[..., Any]) -> bool:
    """Make `cls.__call__` the extension's `Caller` over the Python one (once); whether it
    is installed now. `retry(self, *args)` runs a call whose compiled callable raised the
    gate's retry exception.

    >>> install_caller(type("C", (), {"__call__": lambda self: 1}), print)  # doctest: +SKIP
    True
    """
    module = gate_module(wait=False)
    if module is None:
        return False
    current = cls.__dict__.get("__call__")
    if isinstance(current, module.Caller):
        return True
    if not isinstance(current, types.FunctionType):
        return False
    caller = module.Caller(current, GATE_ATTRIBUTE, retry)
    type.__setattr__(cls, "__call__", caller)
    return True
