"""Guards compiled into one Python function: the fast check run on every call.

`compile_guards` turns a cache entry's guards into the source of one function
`check(L, G, F) -> bool` whose body is a single `and` chain, and compiles it
with `compile()`. The chain is ordered cheapest and most discriminating first
(types and argument identities, array dtypes, shapes, argument values, strides,
shape relations, then what is read from globals); a value fetched more than once
is fetched once, with `:=`. Any exception while checking (a missing key,
attribute or closure cell) means the check fails.

    >>> from numpile_guards import GlobalSource
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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from numpile_runtime import timed

from .guard import ArraySpec, Guard, GuardKind, ShapeRelation
from .reasons import constants_match, guard_failure
from .source import (
    KEYS,
    AttrSource,
    ItemSource,
    LocalSource,
    Source,
    StateSource,
    attribute_text,
    is_literal_constant,
)

log = logging.getLogger("numpile.guards")

CheckFn = Callable[[dict[str, Any], dict[str, Any], Any], bool]
FetchFn = Callable[[dict[str, Any], dict[str, Any], Any], tuple[Any, ...]]

# Clause priorities: lower runs first. A guard's own clauses keep their relative order.
# NOTE: cheapest and most discriminating first. Exact-type checks (and identities of
# arguments) reject a wrong kind of input at once; dtypes and shapes are what changes between
# calls in NumPy code, then the values and lengths of Python arguments; strides differ only
# for views; shape relations evaluate arithmetic; what is read from globals or the function
# (lengths, keys, identities, constants) almost never changes and goes last.
_TYPE = 0
_DTYPE = 1
_SHAPE = 2
_ARGUMENT_VALUE = 3
_STRIDES = 4
_RELATION = 5
_LENGTH = 6
_KEYS = 7
_IDENTITY = 8
_VALUE = 9

# Where each kind of guard runs, for a source under the arguments (`L`) and for any other.
_PRIORITY = {
    GuardKind.TYPE_MATCH: (_TYPE, _TYPE),
    GuardKind.ARRAY_MATCH: (_TYPE, _TYPE),
    GuardKind.ID_MATCH: (_TYPE, _IDENTITY),
    GuardKind.EQUALS_MATCH: (_ARGUMENT_VALUE, _VALUE),
    GuardKind.LENGTH_MATCH: (_ARGUMENT_VALUE, _LENGTH),
    GuardKind.DICT_KEYS: (_KEYS, _KEYS),
    GuardKind.SHAPE_RELATION: (_RELATION, _RELATION),
}


def _priority(guard: Guard) -> int:
    # The priority of a guard's first clause; `failure` walks guards in this order.
    source: Source = guard.source
    while isinstance(source, AttrSource | ItemSource):
        source = source.base
    on_argument, elsewhere = _PRIORITY[guard.kind]
    return on_argument if isinstance(source, LocalSource) else elsewhere


# Types whose constants print as Python literals that compare exactly with `==` after a
# type check (floats need NaN and signed-zero care, so they are not here).
_LITERAL_TYPES: tuple[type, ...] = (bool, int, str, bytes)


def order_guards(guards: Sequence[Guard]) -> tuple[Guard, ...]:
    """`guards` in evaluation order: types and arrays first, values last (stable).

    >>> [g.kind.name for g in order_guards([equals_guard, type_guard])]  # doctest: +SKIP
    ['TYPE_MATCH', 'EQUALS_MATCH']
    """
    return tuple(sorted(guards, key=_priority))


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


def _same_text(text: str) -> str:
    return text


class _Emitter:
    # Renders sources and constants into Python text, binding repeated fetches with `:=`.
    # With `local_names`, an argument is the variable it names (the entry function's
    # parameter) instead of `L[...]`; `rewrite` applies the same to texts written over `L`.

    def __init__(
        self,
        uses: dict[Source, int],
        local_names: Mapping[str, str] | None = None,
        rewrite: Callable[[str], str] = _same_text,
    ) -> None:
        self.uses = uses
        self.bound: dict[Source, str] = {}
        self.constants: dict[str, Any] = {}
        self._constant_names: dict[int, str] = {}
        self.local_names = local_names or {}
        self.rewrite = rewrite

    def fetch(self, source: Source) -> str:
        if source in self.bound:
            return self.bound[source]
        if isinstance(source, AttrSource):
            text = attribute_text(self.fetch(source.base), source.attr)
        elif isinstance(source, ItemSource):
            text = f"{self.fetch(source.base)}[{_key_text(self, source.key)}]"
        elif isinstance(source, StateSource):
            text = f"{self.constant(source.probe)}()"
        elif isinstance(source, LocalSource) and source.local in self.local_names:
            return self.local_names[source.local]  # a variable: nothing to bind
        else:
            text = self.rewrite(source.name)
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


def _key_text(emit: _Emitter, key: Any) -> str:
    # A plain literal key is spelled out; any other is a closure constant (never its repr).
    if is_literal_constant(key):
        return repr(key)
    return emit.constant(key)


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
    clauses: list[Clause] = [
        (_TYPE, lambda emit: f"type({emit.fetch(source)}) is {emit.constant(spec.type)}"),
        (_DTYPE, lambda emit: f"{emit.fetch(source)}.dtype == {emit.constant(dtype)}"),
        (_SHAPE, lambda emit: _tuple_clause(emit, shape, spec.shape)),
        (_STRIDES, lambda emit: _tuple_clause(emit, strides, spec.strides)),
    ]
    if spec.device_id is not None:
        device_id = AttrSource(AttrSource(source, "device"), "id")
        clauses.append((_SHAPE, lambda emit: f"{emit.fetch(device_id)} == {spec.device_id}"))
    return clauses


def _equals_clause(emit: _Emitter, source: Source, expected: Any) -> str:
    kind = type(expected)
    plain_float = kind is float and math.isfinite(expected) and expected != 0.0
    if expected is None:
        return f"{emit.fetch(source)} is None"
    if kind in _LITERAL_TYPES or plain_float:
        value = emit.fetch(source)
        return f"type({value}) is {kind.__name__} and {emit.fetch(source)} == {expected!r}"
    return f"_constants_match({emit.fetch(source)}, {emit.constant(expected)})"


def _relation_clause(relation: ShapeRelation) -> str:
    # Inlined: the relation's own Python text over L, G and F, in parentheses.
    return f"({relation.text})"


def _clauses(guard: Guard) -> list[Clause]:
    # Each clause renders lazily, so `:=` bindings land where the clause sits in the chain.
    kind = guard.kind
    source = guard.source
    expected = guard.expected
    if kind is GuardKind.ARRAY_MATCH:
        return _array_clauses(source, expected)
    if kind not in _PRIORITY:
        raise ValueError(f"unknown guard kind {kind!r}")
    priority = _priority(guard)
    if kind is GuardKind.TYPE_MATCH:
        return [(priority, lambda emit: f"type({emit.fetch(source)}) is {emit.constant(expected)}")]
    if kind is GuardKind.ID_MATCH:
        return [(priority, lambda emit: f"{emit.fetch(source)} is {emit.constant(expected)}")]
    if kind is GuardKind.EQUALS_MATCH:
        return [(priority, lambda emit: _equals_clause(emit, source, expected))]
    if kind is GuardKind.LENGTH_MATCH:
        return [(priority, lambda emit: f"len({emit.fetch(source)}) == {int(expected)}")]
    if kind is GuardKind.DICT_KEYS:
        keys = list(expected)
        return [(priority, lambda emit: f"list({emit.fetch(source)}) == {emit.constant(keys)}")]
    return [(priority, lambda emit: emit.rewrite(_relation_clause(expected)))]


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
        if guard.expected.device_id is not None:
            fetches.append(AttrSource(AttrSource(guard.source, "device"), "id"))
        if any(item is None for item in guard.expected.shape):
            fetches.append(shape)
        if any(item is None for item in guard.expected.strides):
            fetches.append(strides)
        return fetches
    if guard.kind is GuardKind.EQUALS_MATCH and _is_plain_equals(guard):
        return [guard.source, guard.source]
    return [guard.source]


def _render(guards: Sequence[Guard]) -> tuple[list[str], dict[str, Any]]:
    texts, _, constants = render_chain(guards, ())
    return texts, constants


def render_chain(
    guards: Sequence[Guard],
    inputs: Sequence[Source],
    *,
    local_names: Mapping[str, str] | None = None,
    rewrite: Callable[[str], str] = _same_text,
) -> tuple[list[str], list[str], dict[str, Any]]:
    """The clauses of `guards`' check, in the order given (`order_guards` sorts), then
    the texts of `inputs` as they read after a check that passed (a value both read is
    bound once, with `:=`), and the constants the texts name (`_c0`, ...).

    `local_names` spells an argument as a variable (`{"x": "x"}`: `L['x']` is `x`);
    `rewrite` does the same to the texts of relations and expressions.

    >>> clauses, fetches, _ = render_chain(
    ...     [Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int)], [LocalSource("n")],
    ...     local_names={"n": "n"},
    ... )
    >>> clauses, fetches
    (['type(n) is _c0'], ['n'])
    """
    uses: dict[Source, int] = {}
    for guard in guards:
        _count_uses(_guard_fetches(guard), uses)
    _count_uses(inputs, uses)
    pending: list[tuple[int, int, int, Callable[[_Emitter], str]]] = []
    for position, guard in enumerate(guards):
        for index, (priority, render) in enumerate(_clauses(guard)):
            pending.append((priority, position, index, render))
    # NOTE: sorted on (priority, guard position, clause index): deterministic, and a
    # guard's own clauses keep their order (its type check runs before its dtype check).
    pending.sort(key=lambda item: item[:3])
    emit = _Emitter(uses, local_names, rewrite)
    texts = [render(emit) for *_, render in pending]
    fetches = [emit.fetch(source) for source in inputs]
    return texts, fetches, emit.constants


def build_function(name: str, source: str, constants: dict[str, Any]) -> Any:
    """Compile generated `source` and return its function `name`; `constants` (and the
    names every check may use: `math`, `np`, `KEYS`) are its globals.

    >>> build_function("f", "def f(): return math.pi", {})() > 3
    True
    """
    return _build(name, source, constants)


def _build(name: str, source: str, constants: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = dict(constants)
    namespace["_constants_match"] = constants_match
    namespace["math"] = math  # ExpressionSource texts may call it
    namespace["np"] = np  # and NumPy's scalar types and ufuncs (see capture's guarded_scalars)
    namespace["KEYS"] = KEYS  # source texts name non-literal keys by index
    code = compile(source, f"<numpile guards {name}>", "exec")
    exec(code, namespace)
    return namespace[name]


def _constants_comment(constants: dict[str, Any]) -> list[str]:
    # NOTE: a user object's own repr never goes into the source, not even as a comment: a
    # repr with a newline would end the comment and become code.
    return [f"# {name} = {_describe_constant(value)}" for name, value in constants.items()]


def _describe_constant(value: Any) -> str:
    if is_literal_constant(value) or isinstance(value, np.dtype):
        text = repr(value)
    elif isinstance(value, type):
        text = f"<class {value.__module__}.{value.__qualname__}>"
    else:
        text = f"<{type(value).__module__}.{type(value).__qualname__} object>"
    # ascii() escapes line breaks and non-ASCII as the unicode_escape codec would, without
    # importing that codec in each process (its first use costs a module import).
    return ascii(text)[1:-1]


def compile_guards(guards: Sequence[Guard], *, name: str | None = None) -> GuardCheck:
    """Compile `guards` into one `GuardCheck` (one generated Python function).

    `name` (the compiled function's name) makes the guard listing go to the
    `numpile.guards` log at INFO (`NUMPILE_LOGS=guards`); the source goes at DEBUG.

    >>> spec = ArraySpec(np.ndarray, np.dtype("float64"), (3,), (8,))
    >>> check = compile_guards([Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec)])
    >>> check({"x": np.zeros(3)}, {}, None), check({"x": np.zeros(4)}, {}, None)
    (True, False)
    """
    with timed("guards"):
        check = _compile_check(guards)
    if name is not None and log.isEnabledFor(logging.INFO):
        listing = "\n".join(f"  {guard}" for guard in check.guards) or "  (none)"
        log.info("GUARDS of %s (%d):\n%s", name, len(check.guards), listing)
    log.debug("compiled guards:\n%s", check.source)
    return check


def _compile_check(guards: Sequence[Guard]) -> GuardCheck:
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
