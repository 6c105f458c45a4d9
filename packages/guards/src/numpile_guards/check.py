"""Guards compiled into one Python function: the fast check run on every call.

`compile_guards` turns a cache entry's guards into the source of one function
`check(L, G, F) -> bool` whose body is a single `and` chain, and compiles it
with `compile()`. The chain is ordered cheapest and most discriminating first
(type checks, then array dtypes, shapes and strides, then lengths, identities
and values); a value fetched more than once is fetched once, with `:=`. Any
exception while checking (a missing key, attribute or closure cell) means the
check fails.

    >>> check = compile_guards([Guard(GuardKind.EQUALS_MATCH, GlobalSource("scale"), 2.0)])
    >>> check({}, {"scale": 2.0}, None), check.failure({}, {"scale": 3.0}, None)
    (True, "G['scale']: expected 2.0, got 3.0")
    >>> print(check.source)  # doctest: +SKIP
    def check(L, G, F):
        try:
            if (
                type(G['scale']) is float and G['scale'] == 2.0
            ...

`compile_fetch` does the same for the inputs of a compiled graph: one function
that returns the values of a list of sources as a tuple.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from .guard import ArraySpec, Guard, GuardKind
from .reasons import constants_match, guard_failure
from .source import AttrSource, ItemSource, Source

log = logging.getLogger("numpile.guards")

CheckFn = Callable[[dict[str, Any], dict[str, Any], Any], bool]
FetchFn = Callable[[dict[str, Any], dict[str, Any], Any], tuple[Any, ...]]

# Clause priorities: lower runs first. A guard's own clauses keep their relative order.
_TYPE = 0
_DTYPE = 1
_SHAPE = 2
_STRIDES = 3
_LENGTH = 4
_KEYS = 5
_IDENTITY = 6
_VALUE = 7

# The order `failure` walks guards in, matching the clause order of the fast check.
_GUARD_ORDER = {
    GuardKind.TYPE_MATCH: _TYPE,
    GuardKind.ARRAY_MATCH: _TYPE,
    GuardKind.LENGTH_MATCH: _LENGTH,
    GuardKind.DICT_KEYS: _KEYS,
    GuardKind.ID_MATCH: _IDENTITY,
    GuardKind.EQUALS_MATCH: _VALUE,
}

# Types whose constants print as Python literals that compare exactly with `==` after a
# type check (floats need NaN and signed-zero care, so they are not here).
_LITERAL_TYPES: tuple[type, ...] = (bool, int, str, bytes)


def order_guards(guards: Sequence[Guard]) -> tuple[Guard, ...]:
    """`guards` in evaluation order: types and arrays first, values last (stable).

    >>> [g.kind.name for g in order_guards([equals_guard, type_guard])]  # doctest: +SKIP
    ['TYPE_MATCH', 'EQUALS_MATCH']
    """
    return tuple(sorted(guards, key=lambda guard: _GUARD_ORDER[guard.kind]))


@attrs.frozen
class GuardCheck:
    """The compiled guards of one cache entry.

    Call it as `check(L, G, F)` for the fast yes/no; `failure(L, G, F)` says
    which guard failed, in words (slow; for recompile reasons). `source` is
    the generated Python, readable and dumpable.

        >>> check = compile_guards([Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int)])
        >>> check({"n": 3}, {}, None), check({"n": 3.0}, {}, None)
        (True, False)
    """

    guards: tuple[Guard, ...]
    source: str
    fn: CheckFn = attrs.field(repr=False)

    def __call__(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> bool:
        return self.fn(L, G, F)

    def failure(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> str | None:
        """The first failing guard as readable text, or None when all hold."""
        for guard in self.guards:
            text = guard_failure(guard, L, G, F)
            if text is not None:
                return text
        return None


class _Emitter:
    # Renders sources and constants into Python text, binding repeated fetches with `:=`.

    def __init__(self, uses: dict[Source, int]) -> None:
        self.uses = uses
        self.bound: dict[Source, str] = {}
        self.constants: dict[str, Any] = {}
        self._constant_names: dict[int, str] = {}

    def fetch(self, source: Source) -> str:
        if source in self.bound:
            return self.bound[source]
        if isinstance(source, AttrSource):
            text = f"{self.fetch(source.base)}.{source.attr}"
        elif isinstance(source, ItemSource):
            text = f"{self.fetch(source.base)}[{source.key!r}]"
        else:
            text = source.name
        if self.uses.get(source, 0) < 2:
            return text
        name = f"_v{len(self.bound)}"
        self.bound[source] = name
        return f"({name} := {text})"

    def constant(self, value: Any) -> str:
        # NOTE: keyed by id and holding a strong reference, so an ID_MATCH'd object stays
        # alive as long as the check does and its id cannot be reused by another object.
        key = id(value)
        if key not in self._constant_names:
            name = f"_c{len(self._constant_names)}"
            self._constant_names[key] = name
            self.constants[name] = value
        return self._constant_names[key]


def _count_uses(sources: Sequence[Source], uses: dict[Source, int]) -> None:
    for source in sources:
        node: Source | None = source
        while node is not None:
            uses[node] = uses.get(node, 0) + 1
            node = node.base if isinstance(node, AttrSource | ItemSource) else None


def _tuple_clause(emit: _Emitter, source: Source, expected: tuple[int | None, ...]) -> str:
    # `source` is a shape or strides tuple; None entries are "any size".
    if all(item is not None for item in expected):
        return f"{emit.fetch(source)} == {expected!r}"
    parts = [f"len({emit.fetch(source)}) == {len(expected)}"]
    for index, item in enumerate(expected):
        if item is not None:
            parts.append(f"{emit.fetch(source)}[{index}] == {item}")
    return " and ".join(parts)


Clause = tuple[int, Callable[[_Emitter], str]]


def _array_clauses(source: Source, spec: ArraySpec) -> list[Clause]:
    shape = AttrSource(source, "shape")
    strides = AttrSource(source, "strides")
    dtype = np.dtype(spec.dtype)
    return [
        (_TYPE, lambda emit: f"type({emit.fetch(source)}) is {emit.constant(spec.type)}"),
        (_DTYPE, lambda emit: f"{emit.fetch(source)}.dtype == {emit.constant(dtype)}"),
        (_SHAPE, lambda emit: _tuple_clause(emit, shape, spec.shape)),
        (_STRIDES, lambda emit: _tuple_clause(emit, strides, spec.strides)),
    ]


def _equals_clause(emit: _Emitter, source: Source, expected: Any) -> str:
    kind = type(expected)
    plain_float = kind is float and math.isfinite(expected) and expected != 0.0
    if expected is None:
        return f"{emit.fetch(source)} is None"
    if kind in _LITERAL_TYPES or plain_float:
        value = emit.fetch(source)
        return f"type({value}) is {kind.__name__} and {emit.fetch(source)} == {expected!r}"
    return f"_constants_match({emit.fetch(source)}, {emit.constant(expected)})"


def _clauses(guard: Guard) -> list[Clause]:
    # Each clause renders lazily, so `:=` bindings land where the clause sits in the chain.
    kind = guard.kind
    source = guard.source
    expected = guard.expected
    if kind is GuardKind.TYPE_MATCH:
        return [(_TYPE, lambda emit: f"type({emit.fetch(source)}) is {emit.constant(expected)}")]
    if kind is GuardKind.ARRAY_MATCH:
        return _array_clauses(source, expected)
    if kind is GuardKind.ID_MATCH:
        return [(_IDENTITY, lambda emit: f"{emit.fetch(source)} is {emit.constant(expected)}")]
    if kind is GuardKind.EQUALS_MATCH:
        return [(_VALUE, lambda emit: _equals_clause(emit, source, expected))]
    if kind is GuardKind.LENGTH_MATCH:
        return [(_LENGTH, lambda emit: f"len({emit.fetch(source)}) == {int(expected)}")]
    if kind is GuardKind.DICT_KEYS:
        keys = list(expected)
        return [(_KEYS, lambda emit: f"list({emit.fetch(source)}) == {emit.constant(keys)}")]
    raise ValueError(f"unknown guard kind {kind!r}")


def _is_plain_equals(guard: Guard) -> bool:
    # True for the constants whose clause fetches the value twice (type check, then ==).
    expected = guard.expected
    if type(expected) in _LITERAL_TYPES:
        return True
    return type(expected) is float and math.isfinite(expected) and expected != 0.0


def _guard_fetches(guard: Guard) -> list[Source]:
    # Every fetch a guard's clauses make, for finding the shared sub-expressions.
    if guard.kind is GuardKind.ARRAY_MATCH:
        shape = AttrSource(guard.source, "shape")
        strides = AttrSource(guard.source, "strides")
        fetches = [guard.source, guard.source, shape, strides]
        if any(item is None for item in guard.expected.shape):
            fetches.append(shape)
        if any(item is None for item in guard.expected.strides):
            fetches.append(strides)
        return fetches
    if guard.kind is GuardKind.EQUALS_MATCH and _is_plain_equals(guard):
        return [guard.source, guard.source]
    return [guard.source]


def _render(guards: Sequence[Guard]) -> tuple[list[str], dict[str, Any]]:
    uses: dict[Source, int] = {}
    for guard in guards:
        _count_uses(_guard_fetches(guard), uses)
    pending: list[tuple[int, int, int, Callable[[_Emitter], str]]] = []
    for position, guard in enumerate(guards):
        for index, (priority, render) in enumerate(_clauses(guard)):
            pending.append((priority, position, index, render))
    # NOTE: sorted on (priority, guard position, clause index): deterministic, and a
    # guard's own clauses keep their order (its type check runs before its dtype check).
    pending.sort(key=lambda item: item[:3])
    emit = _Emitter(uses)
    texts = [render(emit) for *_, render in pending]
    return texts, emit.constants


def _build(name: str, source: str, constants: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = dict(constants)
    namespace["_constants_match"] = constants_match
    code = compile(source, f"<numpile guards {name}>", "exec")
    exec(code, namespace)
    return namespace[name]


def _constants_comment(constants: dict[str, Any]) -> list[str]:
    return [f"# {name} = {value!r}" for name, value in constants.items()]


def compile_guards(guards: Sequence[Guard]) -> GuardCheck:
    """Compile `guards` into one `GuardCheck` (one generated Python function).

    >>> spec = ArraySpec(np.ndarray, np.dtype("float64"), (3,), (8,))
    >>> check = compile_guards([Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec)])
    >>> check({"x": np.zeros(3)}, {}, None), check({"x": np.zeros(4)}, {}, None)
    (True, False)
    """
    ordered = order_guards(guards)
    texts, constants = _render(ordered)
    lines = _constants_comment(constants)
    lines.append("def check(L, G, F):")
    if not texts:
        lines.append("    return True")
    else:
        lines.append("    try:")
        lines.append("        if (")
        lines.append("            " + texts[0])
        lines += [f"            and {text}" for text in texts[1:]]
        lines.append("        ):")
        lines.append("            return True")
        lines.append("        return False")
        lines.append("    except Exception:")
        lines.append("        return False")
    source = "\n".join(lines) + "\n"
    log.debug("compiled guards:\n%s", source)
    return GuardCheck(ordered, source, _build("check", source, constants))


def compile_fetch(sources: Sequence[Source]) -> FetchFn:
    """One function `fetch(L, G, F)` returning the values of `sources` as a tuple.

    >>> fetch = compile_fetch([LocalSource("x"), AttrSource(LocalSource("x"), "size")])
    >>> fetch({"x": np.zeros(3)}, {}, None)[1]
    3
    """
    uses: dict[Source, int] = {}
    _count_uses(sources, uses)
    emit = _Emitter(uses)
    items = [emit.fetch(source) for source in sources]
    body = ", ".join(items) + ("," if len(items) == 1 else "")
    lines = _constants_comment(emit.constants)
    lines.append("def fetch(L, G, F):")
    lines.append(f"    return ({body})")
    fn: FetchFn = _build("fetch", "\n".join(lines) + "\n", emit.constants)
    return fn
