"""Sources: where a value the compiled code depends on came from.

A source's `name` is a Python expression over the names a guard check sees:
`L` (the call's bound arguments, by parameter name), `G` (the compiled
function's globals) and `F` (the compiled function itself, for closures and
defaults). Guards and input fetching both read values through it. A
`StateSource` is the exception: process state that a probe function reads.

    >>> AttrSource(LocalSource("x"), "shape").name
    "L['x'].shape"
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_runtime import new_lock

# Constants a source's text refers to by index (`KEYS[3]`) rather than by spelling: user
# objects (an Enum member, a NaN, an object whose `__repr__` returns code) are never
# rendered as Python text, so nothing user-made is parsed as code.
# NOTE: holds strong references, so an index stays valid (and an id is never reused) for the
# life of the process; keys are few (one per distinct non-literal dict key or attribute name).
KEYS: list[Any] = []
_KEY_INDEX: dict[int, int] = {}
_KEYS_LOCK = new_lock()


def is_literal_constant(value: Any) -> bool:
    """True for exact builtin values whose repr is a literal that evaluates back to an
    equal value (ints, strings, bytes, finite floats, None, tuples of them).

    >>> is_literal_constant(3), is_literal_constant(float("nan"))
    (True, False)
    """
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is tuple:
        return all(is_literal_constant(item) for item in value)
    return False


def constant_text(value: Any) -> str:
    """Python text for `value` inside a source's name: its literal when it is a plain
    builtin (int, str, finite float, ...), else a lookup in the `KEYS` registry by index.

    >>> constant_text(3), constant_text("w")
    ('3', "'w'")
    >>> constant_text(float("nan"))  # doctest: +SKIP
    'KEYS[0]'
    """
    if is_literal_constant(value):
        return repr(value)
    with _KEYS_LOCK:
        index = _KEY_INDEX.get(id(value))
        if index is None:
            index = len(KEYS)
            KEYS.append(value)
            _KEY_INDEX[id(value)] = index
    return f"KEYS[{index}]"


def attribute_text(base: str, attr: str) -> str:
    """`base.attr`, or `getattr(base, ...)` where `attr` is not a plain identifier.

    >>> attribute_text("L['o']", "a-b")
    "getattr(L['o'], 'a-b')"
    """
    if type(attr) is str and attr.isidentifier() and not keyword.iskeyword(attr):
        return f"{base}.{attr}"
    return f"getattr({base}, {constant_text(attr)})"


def evaluation_names(L: dict[str, Any], G: dict[str, Any], F: Any) -> dict[str, Any]:
    """The names a source's or relation's text may use: `L`, `G`, `F`, builtins, `math`,
    `np` (NumPy: its scalar types and ufuncs) and `KEYS` (constants by index).

    >>> eval("math.sqrt(L['x'])", evaluation_names({"x": 4.0}, {}, None))
    2.0
    """
    return {"L": L, "G": G, "F": F, "math": math, "np": np, "KEYS": KEYS}


@attrs.frozen
class Source:
    """Base of all sources; subclasses define `name`."""

    @property
    def name(self) -> str:
        raise NotImplementedError

    def get(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> Any:
        """Fetch the value this source names (slow path; guards compile `name`)."""
        return eval(self.name, evaluation_names(L, G, F))

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class LocalSource(Source):
    """An argument of the compiled function, by parameter name."""

    local: str

    @property
    def name(self) -> str:
        return f"L[{self.local!r}]"


@attrs.frozen
class GlobalSource(Source):
    """A global of the compiled function's module."""

    global_name: str

    @property
    def name(self) -> str:
        return f"G[{self.global_name!r}]"


@attrs.frozen
class ClosureSource(Source):
    """The content of the compiled function's closure cell `index` (variable `var`)."""

    var: str
    index: int

    @property
    def name(self) -> str:
        return f"F.__closure__[{self.index}].cell_contents"


@attrs.frozen
class AttrSource(Source):
    """Attribute `attr` of another source's value."""

    base: Source
    attr: str

    @property
    def name(self) -> str:
        return attribute_text(self.base.name, self.attr)

    def get(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> Any:
        """`getattr` on the base's value (never text evaluation)."""
        return getattr(self.base.get(L, G, F), self.attr)


@attrs.frozen
class ItemSource(Source):
    """`base[key]` for a constant key (an int, a string, ...)."""

    base: Source
    key: Any

    @property
    def name(self) -> str:
        return f"{self.base.name}[{constant_text(self.key)}]"

    def get(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> Any:
        """The base's value indexed by the key object itself (never text evaluation)."""
        return self.base.get(L, G, F)[self.key]


@attrs.frozen
class ExpressionSource(Source):
    """A value computed from other sources by Python arithmetic, as `text` spells it
    (builtins, the `math` module and NumPy as `np` included).

    Guards and input fetching evaluate the expression on each call, so a graph
    input derived from arguments (`1 - 0.9 ** step`) follows them.

        >>> ExpressionSource("1 - 0.9 ** L['t']").get({"t": 2}, {}, None)
        0.18999999999999995
    """

    text: str

    @property
    def name(self) -> str:
        return f"({self.text})"


@attrs.frozen
class FunctionSource(Source):
    """The compiled function itself (`F`): the root for its defaults, closure and code.

    >>> AttrSource(FunctionSource(), "__defaults__").name
    'F.__defaults__'
    """

    @property
    def name(self) -> str:
        return "F"


@attrs.frozen
class StateSource(Source):
    """Process state a capture decision read (NumPy's error state, say): `probe()` reads it.

    Sources with the same `label` are the same source; the check calls the probe.

    >>> StateSource("numpy_errstate_raises", lambda: False).name
    "STATE['numpy_errstate_raises']"
    """

    label: str
    probe: Callable[[], Any] = attrs.field(eq=False, repr=False)

    @property
    def name(self) -> str:
        return f"STATE[{self.label!r}]"

    def get(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> Any:
        """The state now (the probe's answer)."""
        return self.probe()
