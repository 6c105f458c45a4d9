"""Guards: the facts a compiled entry assumed about its inputs and globals.

A `Guard` pairs a `Source` with a `GuardKind` and the expected value. Guards
are plain data; `compile_guards` turns a list of them into one fast check.

    >>> from numpile_guards import LocalSource
    >>> print(Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int))
    TYPE_MATCH(L['n'], class int)
"""

from __future__ import annotations

import enum
import types
from typing import Any, Protocol, runtime_checkable

import attrs

from .source import Source


class GuardKind(enum.Enum):
    """What a guard checks about its source's value.

    TYPE_MATCH: `type(value) is expected`.
    ID_MATCH: `value is expected` (modules, functions, classes, None, ...).
    EQUALS_MATCH: same type and `value == expected` (Python constants).
    ARRAY_MATCH: an array with `expected` = `ArraySpec` (dtype, shape, strides, device).
    LENGTH_MATCH: `len(value) == expected` (lists, tuples, dicts).
    DICT_KEYS: `list(value) == expected` (keys in order).
    SHAPE_RELATION: `expected` (a `ShapeRelation`) holds for the sizes it reads;
        `source` names the relation (symbolic shapes: `L['y'].shape[0] == L['x'].shape[0]`).
    """

    TYPE_MATCH = "type_match"
    ID_MATCH = "id_match"
    EQUALS_MATCH = "equals_match"
    ARRAY_MATCH = "array_match"
    LENGTH_MATCH = "length_match"
    DICT_KEYS = "dict_keys"
    SHAPE_RELATION = "shape_relation"


@runtime_checkable
class ShapeRelation(Protocol):
    """A fact about sizes a dynamic entry relies on (`s0 == s1`, `s0 % 4 == 0`, ...).

    `text` is the relation as a Python expression over sources (`L`, `G`, `F`),
    e.g. `L['x'].shape[0] % 4 == 0`: the compiled check inlines it in its chain;
    `evaluate(L, G, F)` is the same test, slowly (False when a source is missing).
    `numpile_guards.symbolic.ShapeGuard` is one.

        >>> Guard(GuardKind.SHAPE_RELATION, RelationSource(rel.text), rel)  # doctest: +SKIP
    """

    @property
    def text(self) -> str: ...

    def evaluate(self, L: dict[str, Any], G: dict[str, Any], F: Any) -> bool: ...


@attrs.frozen
class ArraySpec:
    """What ARRAY_MATCH expects of an array: its type, dtype, shape and byte strides.

    `shape` and `strides` entries may be None, meaning "any size" for that
    dimension (dynamic shapes fill these in through the shape environment).
    `device_id` is the GPU ordinal of a device array (CuPy's `x.device.id`),
    None for a NumPy array.
    """

    type: type
    dtype: Any
    shape: tuple[int | None, ...]
    strides: tuple[int | None, ...]
    device_id: int | None = None


@attrs.frozen
class Guard:
    """One assumption of a compiled entry: `kind` holds for `source`'s value."""

    kind: GuardKind
    source: Source
    expected: Any = attrs.field(eq=False)

    def __str__(self) -> str:
        if self.kind is GuardKind.SHAPE_RELATION:
            return f"{self.kind.name}({self.expected.text})"
        return f"{self.kind.name}({self.source.name}, {_describe(self.expected)})"


def _describe(expected: Any) -> str:
    # Short, readable forms for guard listings (explain, logs); repr for everything else.
    if isinstance(expected, ArraySpec):
        dims = ", ".join("?" if d is None else str(d) for d in expected.shape)
        strides = ", ".join("?" if s is None else str(s) for s in expected.strides)
        kind = "" if expected.type.__name__ == "ndarray" else f"{expected.type.__name__} "
        device = ""
        if expected.device_id is not None:  # e.g. "cupy.ndarray float32[8] ... device=0"
            kind = f"{expected.type.__module__}.{expected.type.__name__} "
            device = f" device={expected.device_id}"
        return f"{kind}{expected.dtype}[{dims}] strides=({strides}){device}"
    if isinstance(expected, ShapeRelation):
        return expected.text
    if isinstance(expected, types.ModuleType):
        return f"module {expected.__name__}"
    if isinstance(expected, type):
        return f"class {expected.__qualname__}"
    if callable(expected) and hasattr(expected, "__qualname__"):
        return f"{type(expected).__name__} {expected.__qualname__}"
    return repr(expected)
