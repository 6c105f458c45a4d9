"""The state of one frame being traced: its value stack, locals, cells and arguments.

`bind_arguments` maps a call's variables onto a function's parameters the
way CPython does (positional, keyword, defaults, `*args`, `**kwargs`) and
raises the same TypeErrors for calls that do not fit.

    >>> from numpile_capture.variables import ConstantVar
    >>> def f(a, b=2): ...
    >>> state = FrameState(f.__code__)
    >>> state.push(ConstantVar(1))
    >>> state.pop().as_python_constant()
    1
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import CodeType
from typing import Any

from .variables import DictVar, FunctionVar, TupleVar, Variable

# A root argument not read yet: its value and where it comes from (see Tracer).
LazyLocal = Callable[[], Variable]


class FrameState:
    """The value stack and the locals of one frame (cells live in the locals, as in CPython)."""

    def __init__(self, code: CodeType) -> None:
        self.code = code
        self.stack: list[Variable] = []
        self.locals: dict[str, Variable] = {}
        # NOTE: root arguments are wrapped on first read, so unused inputs get no guards.
        self.lazy: dict[str, LazyLocal] = {}

    def push(self, value: Variable) -> None:
        self.stack.append(value)

    def pop(self) -> Variable:
        return self.stack.pop()

    def pop_n(self, count: int) -> list[Variable]:
        if count == 0:
            return []
        items = self.stack[-count:]
        del self.stack[-count:]
        return items

    def peek(self, depth: int = 1) -> Variable:
        return self.stack[-depth]

    def read_local(self, name: str) -> Variable:
        if name in self.lazy:
            self.locals[name] = self.lazy.pop(name)()
        try:
            return self.locals[name]
        except KeyError:
            raise UnboundLocalError(
                f"cannot access local variable '{name}' where it is not associated with a value"
            ) from None

    def has_local(self, name: str) -> bool:
        return name in self.locals or name in self.lazy

    def delete_local(self, name: str) -> None:
        self.lazy.pop(name, None)
        self.locals.pop(name, None)


def bind_arguments(
    fn: FunctionVar,
    args: list[Variable],
    kwargs: dict[str, Variable],
    default: Callable[[int], Variable],
    kwdefault: Callable[[str], Variable | None],
) -> dict[str, Variable]:
    """Bind a call's arguments to `fn`'s parameters, as CPython would.

    `default(i)` gives the variable of the i-th positional default and
    `kwdefault(name)` that of a keyword-only default (None when there is none).
    """
    code = fn.code
    name = code.co_name
    positional_count = code.co_argcount
    posonly = code.co_posonlyargcount
    kwonly = code.co_kwonlyargcount
    names = code.co_varnames
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    bound: dict[str, Variable] = {}
    if len(args) > positional_count and not has_varargs:
        raise TypeError(
            f"{name}() takes {positional_count} positional arguments but {len(args)} were given"
        )
    for index, value in enumerate(args[:positional_count]):
        bound[names[index]] = value
    extra_kwargs: dict[str, Variable] = {}
    keyword_names = names[posonly : positional_count + kwonly]
    for key, value in kwargs.items():
        if key in keyword_names:
            if key in bound:
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            bound[key] = value
        elif has_varkw:
            extra_kwargs[key] = value
        else:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
    defaults_count = _defaults_count(fn)
    first_default = positional_count - defaults_count
    for index in range(positional_count):
        param = names[index]
        if param not in bound:
            if index < first_default:
                raise TypeError(f"{name}() missing required positional argument: '{param}'")
            bound[param] = default(index - first_default)
    for param in names[positional_count : positional_count + kwonly]:
        if param not in bound:
            found = kwdefault(param)
            if found is None:
                raise TypeError(f"{name}() missing required keyword-only argument: '{param}'")
            bound[param] = found
    slot = positional_count + kwonly
    if has_varargs:
        bound[names[slot]] = TupleVar(tuple(args[positional_count:]))
        slot += 1
    if has_varkw:
        bound[names[slot]] = DictVar(extra_kwargs)
    return bound


def _defaults_count(fn: FunctionVar) -> int:
    if fn.fn is not None:
        return len(fn.fn.__defaults__ or ())
    return len(fn.defaults or ())


def constant_tuple(value: Variable) -> tuple[Any, ...]:
    """The Python tuple held by a constant variable (keyword names of CALL_KW)."""
    result = value.as_python_constant()
    assert isinstance(result, tuple)
    return result
