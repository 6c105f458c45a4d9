"""Argument binding for the dispatcher: a generated function with the exact parameters of `fn`.

CPython itself binds each call (defaults, keywords, `*args`, `**kwargs`) and
raises its own TypeErrors; the binder returns the bound arguments as the
dict `L` that guards and input fetching read.

    >>> bind = make_binder(lambda a, b=2: None)
    >>> bind(1)
    {'a': 1, 'b': 2}
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from numpile_guards import EntryParameters

_MISSING = object()  # a keyword-only argument not passed: read from `__kwdefaults__`


def _parameters(
    code: types.CodeType, has_defaults: int, kwdefaults: dict[str, Any]
) -> tuple[list[str], list[str], list[str]]:
    # fn's exact parameters as a `def` spells them (defaults read from `_d`, keyword-only
    # ones marked `_missing`), the bound names in order, and the lines resolving the marks.
    positional = code.co_argcount
    posonly = code.co_posonlyargcount
    kwonly = code.co_kwonlyargcount
    names = code.co_varnames
    params: list[str] = []
    first_default = positional - has_defaults
    for index in range(positional):
        default = f"=_d[{index - first_default}]" if index >= first_default else ""
        params.append(f"{names[index]}{default}")
        if posonly and index == posonly - 1:
            params.append("/")
    cursor = positional + kwonly
    if code.co_flags & inspect.CO_VARARGS:
        params.append(f"*{names[cursor]}")
        cursor += 1
    elif kwonly:
        params.append("*")
    for index in range(positional, positional + kwonly):
        name = names[index]
        # NOTE: a marker, replaced by the dict's value on each call: `__kwdefaults__` is a
        # mutable dict that a user may change in place.
        params.append(f"{name}=_missing" if name in kwdefaults else name)
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append(f"**{names[cursor]}")
    bound = [name for name in params if name not in ("/", "*")]
    keys = [name.split("=")[0].lstrip("*") for name in bound]
    prologue: list[str] = []
    for key in keys:
        if key in kwdefaults:
            prologue.append(f"if {key} is _missing:")
            prologue.append(f"    {key} = _kd[{key!r}]")
    return params, keys, prologue


def _binder_source(code: types.CodeType, has_defaults: int, kwdefaults: dict[str, Any]) -> str:
    # A function with fn's exact parameters that returns them as a dict: CPython binds.
    params, keys, prologue = _parameters(code, has_defaults, kwdefaults)
    lines = [f"def bind({', '.join(params)}):"]
    lines += [f"    {line}" for line in prologue]
    body = ", ".join(f"{key!r}: {key}" for key in keys)
    lines.append(f"    return {{{body}}}")
    return "\n".join(lines) + "\n"


def make_binder(fn: types.FunctionType) -> Callable[..., dict[str, Any]]:
    """A function binding `fn`'s parameters like a call to `fn` would, returning them as a dict."""
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    source = _binder_source(fn.__code__, len(defaults), kwdefaults)
    namespace: dict[str, Any] = {"_d": defaults, "_kd": kwdefaults, "_missing": _MISSING}
    exec(compile(source, f"<numpile binder {fn.__qualname__}>", "exec"), namespace)
    binder: Callable[..., dict[str, Any]] = namespace["bind"]
    return binder


def entry_parameters(fn: types.FunctionType) -> EntryParameters:
    """`fn`'s parameters for an entry function (`numpile_guards.compile_entry`): bound as
    `make_binder` binds them, defaults as they are now.

    >>> entry_parameters(lambda a, b=2: None).text
    'a, b=_d[0]'
    """
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    params, keys, prologue = _parameters(fn.__code__, len(defaults), kwdefaults)
    namespace = {"_d": defaults, "_kd": kwdefaults, "_missing": _MISSING}
    return EntryParameters(", ".join(params), tuple(keys), tuple(prologue), namespace)
