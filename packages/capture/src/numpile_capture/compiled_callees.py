"""A frame that runs in Python while the functions it calls compile: `disable(recursive=False)`.

`disable(fn, recursive=False)` skips `fn`'s own frame only (the seeds' FAQ: "disable
TorchDynamo on the function frame but enable it back on the recursively invoked
frames"). torch gets this from its frame-evaluation hook, which sees every frame
start. numpile has no such hook, so when compiled code calls such a function,
`run_compiling_callees` runs a copy of its code in which every function read from a
global or a closure cell passes through `CalleeCompiler` first: a user function
comes back compiled (with the caller's options, through `wrap`), anything else
as it was. Functions reached another way (an attribute, an argument) run as they
are.

    >>> def inner(x):
    ...     return x + 1
    >>> def outer(x):
    ...     return inner(x) * 2
    >>> run_compiling_callees(outer, lambda fn: fn, (1,), {})
    4
"""

from __future__ import annotations

import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import bytecode as bc

from numpile_runtime import new_lock

from .trace_rules import RuleKind, rule_for
from .user_classes import is_library_code

Wrap = Callable[[types.FunctionType], Callable[..., Any]]

# NOTE: the code of a disabled frame -> its copy whose global and cell reads pass through the
# callee compiler; rewritten once per code object, dropped with it.
_REWRITTEN: weakref.WeakKeyDictionary[types.CodeType, types.CodeType] = weakref.WeakKeyDictionary()
_LOCK = new_lock()
_state = threading.local()

# Generators and coroutines are never compiled on their own (as at graph breaks).
_NOT_COMPILED_FLAGS = 0x20 | 0x80 | 0x100 | 0x200


class CalleeCompiler:
    """`compiler[value]`: `value` as the rewritten frame should call it.

    A user function (not library code, not marked by a trace rule) comes back
    compiled by the innermost running `wrap`; a function disabled with
    `recursive=False` runs the same way as its caller; any other value is unchanged.

        >>> CALLEE_COMPILER[len] is len
        True
    """

    def __getitem__(self, value: Any) -> Any:
        if not isinstance(value, types.FunctionType):
            return value
        stack: list[Wrap] = getattr(_state, "wraps", [])
        if not stack:
            return value
        rule = rule_for(value)
        if rule is not None:
            if _compiles_callees(rule.kind, rule.recursive, rule.original):
                return _bound_runner(rule.original, stack[-1])
            return value
        code = value.__code__
        if is_library_code(code) or code.co_flags & _NOT_COMPILED_FLAGS:
            return value
        return stack[-1](value)


CALLEE_COMPILER = CalleeCompiler()


def _compiles_callees(kind: RuleKind, recursive: bool, original: Any) -> bool:
    return kind is RuleKind.DISABLED and not recursive and isinstance(original, types.FunctionType)


def compiles_callees(fn: Any) -> bool:
    """Whether `fn` is a `disable(recursive=False)` wrapper: its callees compile.

    >>> compiles_callees(len)
    False
    """
    rule = rule_for(fn)
    return rule is not None and _compiles_callees(rule.kind, rule.recursive, rule.original)


def disabled_original(fn: Any) -> types.FunctionType:
    """The function a `disable(recursive=False)` wrapper runs (see `compiles_callees`)."""
    rule = rule_for(fn)
    assert rule is not None and isinstance(rule.original, types.FunctionType)
    return rule.original


def _bound_runner(original: types.FunctionType, wrap: Wrap) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        return run_compiling_callees(original, wrap, args, kwargs)

    return run


def compiling_callees(fn: Any, wrap: Wrap) -> Callable[..., Any]:
    """A callable that runs the `disable(recursive=False)` wrapper `fn` with its callees
    compiled by `wrap` (see the module doc)."""
    return _bound_runner(disabled_original(fn), wrap)


def run_compiling_callees(
    original: types.FunctionType, wrap: Wrap, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Run `original(*args, **kwargs)` in Python, its callees compiled by `wrap`."""
    runnable = types.FunctionType(
        _rewritten(original.__code__),
        original.__globals__,
        original.__name__,
        original.__defaults__,
        original.__closure__,
    )
    runnable.__kwdefaults__ = original.__kwdefaults__
    stack: list[Wrap] = getattr(_state, "wraps", None) or []
    _state.wraps = stack
    stack.append(wrap)
    try:
        return runnable(*args, **kwargs)
    finally:
        stack.pop()


def _rewritten(code: types.CodeType) -> types.CodeType:
    found = _REWRITTEN.get(code)
    if found is None:
        found = _rewrite(code)
        with _LOCK:
            _REWRITTEN[code] = found
    return found


def _through_compiler(location: Any) -> list[bc.Instr]:
    # TOS = compiler[TOS]: one subscript of a constant, the same on 3.11-3.13.
    return [
        bc.Instr("LOAD_CONST", CALLEE_COMPILER, location=location),
        bc.Instr("SWAP", 2, location=location),
        bc.Instr("BINARY_SUBSCR", location=location),
    ]


def _rewrite(code: types.CodeType) -> types.CodeType:
    program = bc.Bytecode.from_code(code)
    null_after = sys.version_info >= (3, 13)  # 3.13 pushes NULL above the callable
    result: list[Any] = []
    for instr in program:
        if not isinstance(instr, bc.Instr):
            result.append(instr)
            continue
        location = instr.location
        if instr.name == "LOAD_GLOBAL":
            arg: Any = instr.arg
            push_null, name = arg
            if push_null and not null_after:
                result.append(bc.Instr("PUSH_NULL", location=location))
            result.append(bc.Instr("LOAD_GLOBAL", (False, name), location=location))
            result.extend(_through_compiler(location))
            if push_null and null_after:
                result.append(bc.Instr("PUSH_NULL", location=location))
            continue
        result.append(instr)
        if instr.name == "LOAD_DEREF":
            result.extend(_through_compiler(location))
    program.clear()
    program.extend(result)
    return program.to_code()
