"""The entry function: binding, guard check, input fetch and call of one cache entry, fused.

A warm call of a compiled function used to bind its arguments into a dict `L` (one
generated function), check the entry's guards over `L` (another), fetch the inputs as a
tuple (a third) and call the compiled code with them. `compile_entry` writes the four
as one generated function with the compiled function's own parameters: CPython binds
the call, the guards read the parameters as local variables (`L['x']` is `x`), a value
both a guard and a fetch read is read once (`:=`), and the compiled callable is called
with the inputs spelled out. It returns `miss` when a guard fails (the dispatcher then
looks the call up in full), and lets any exception of the compiled code through.

    >>> import numpy as np
    >>> from numpile_guards import ArraySpec, GuardKind, LocalSource
    >>> spec = ArraySpec(np.ndarray, np.dtype("float64"), (3,), (8,))
    >>> guard = Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec)
    >>> params = EntryParameters("x, n=_d[0]", ("x", "n"), namespace={"_d": (2,)})
    >>> enter = compile_entry(
    ...     [guard], [LocalSource("x"), LocalSource("n")], params, run=lambda x, n: x * n,
    ...     miss=None, G={}, F=None,
    ... )
    >>> enter(np.ones(3))
    array([2., 2., 2.])
    >>> enter(np.ones(4)) is None
    True
    >>> print(enter.source)  # doctest: +SKIP
    def entry(x, n=_d[0]):
        try:
            _ok = (
                type(x) is _c0
                and x.dtype == _c1
            ...
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .check import build_function, render_chain
from .guard import Guard
from .source import Source

# Names the generated text itself uses besides the parameters: a function whose
# parameters take one of them (or a builtin's name, or a generated `_c0`/`_v0`) keeps the
# unfused path, where parameters live in a dict.
_RESERVED = frozenset({"L", "G", "F", "math", "np", "KEYS", "_constants_match", "_run", "_miss"})
_GENERATED = re.compile(r"_[cv]\d+|_ok|_d|_kd|_missing")
# `L['name']` in a relation's or expression's text, where `L` is not an attribute or a key.
_LOCAL_TEXT = re.compile(r"(?<![\w.'\"\]])L\[('[A-Za-z_][A-Za-z0-9_]*')\]")


@attrs.frozen
class EntryParameters:
    """The compiled function's parameters, as the entry function's `def` spells them.

    `text` is the parameter list (`a, b=_d[0], *, k=_missing`); `names` the bound names in
    order (`L`'s keys); `prologue` lines that run first (a keyword-only default read from
    `__kwdefaults__` on each call); `namespace` the objects `text` and `prologue` name.

        >>> EntryParameters("x", ("x",)).names
        ('x',)
    """

    text: str
    names: tuple[str, ...]
    prologue: tuple[str, ...] = ()
    namespace: Mapping[str, Any] = attrs.field(factory=dict)


def fusable(parameters: EntryParameters) -> bool:
    """Whether the parameters' names leave the generated names alone (see `_RESERVED`).

    >>> fusable(EntryParameters("x, len", ("x", "len")))
    False
    """
    for name in parameters.names:
        if name in _RESERVED or hasattr(builtins, name) or _GENERATED.fullmatch(name):
            return False
        if keyword.iskeyword(name):
            return False
    return True


def _plain_name(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _locals_text(text: str, names: tuple[str, ...]) -> str:
    # `L['x']` as the parameter `x` in texts written over `L` (relations, expressions).
    def replace(match: re.Match[str]) -> str:
        name = str(match.group(1))[1:-1]
        return name if name in names else match.group(0)

    return _LOCAL_TEXT.sub(replace, text)


def compile_entry(
    guards: Sequence[Guard],
    inputs: Sequence[Source],
    parameters: EntryParameters,
    *,
    run: Callable[..., Any],
    miss: Any,
    G: dict[str, Any],
    F: Any,
    name: str = "entry",
) -> Callable[..., Any]:
    """One function taking the compiled function's arguments: `run(*inputs)` when
    `guards` hold (in `order_guards`' order), else `miss`. `G` and `F` are the globals and
    the function the guards and inputs read. The result has `.source`, the generated text.

    Raises ValueError when `fusable(parameters)` is False.
    """
    if not fusable(parameters):
        raise ValueError(f"parameters {parameters.names} clash with the entry's own names")
    if name in _RESERVED or _GENERATED.fullmatch(name) or not _plain_name(name):
        name = "_numpile_entry"  # the def binds its name among the names the body reads
    local_names = {local: local for local in parameters.names}
    clauses, fetches, constants = render_chain(
        guards, inputs, local_names=local_names, rewrite=_rewriter(parameters.names)
    )
    lines = [f"def {name}({parameters.text}):"]
    lines += [f"    {line}" for line in parameters.prologue]
    # A text still naming `L` (a source this rewrite does not know) reads the dict.
    needs_dict = any(re.search(r"(?<![\w.'\"\]])L\b", text) for text in (*clauses, *fetches))
    if needs_dict:
        items = ", ".join(f"{key!r}: {key}" for key in parameters.names)
        lines.append(f"    L = {{{items}}}")
    if clauses:
        lines.append("    try:")
        lines.append("        _ok = (")
        lines.append(f"            {clauses[0]}")
        lines += [f"            and {text}" for text in clauses[1:]]
        lines.append("        )")
        lines.append("    except Exception:")
        lines.append("        _ok = False")
        lines.append("    if not _ok:")
        lines.append("        return _miss")
    lines.append(f"    return _run({', '.join(fetches)})")
    source = "\n".join(lines) + "\n"
    namespace: dict[str, Any] = {**constants, **parameters.namespace}
    namespace.update(G=G, F=F, _run=run, _miss=miss)
    if name in namespace:
        raise ValueError(f"the entry's name {name!r} is one of the names it reads")
    fn = build_function(name, source, namespace)
    fn.source = source
    result: Callable[..., Any] = fn
    return result


def _rewriter(names: tuple[str, ...]) -> Callable[[str], str]:
    def rewrite(text: str) -> str:
        return _locals_text(text, names)

    return rewrite
