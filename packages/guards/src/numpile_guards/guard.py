"""Guards: the facts a compiled entry assumed about its inputs and globals.

A `Guard` pairs a `Source` with a `GuardKind` and the expected value. Guards
are plain data; `compile_guards` turns a list of them into one fast check.

    >>> Guard(GuardKind.TYPE_MATCH, LocalSource("n"), int)
"""

from __future__ import annotations

import enum
import types
from typing import Any

import attrs

from .source import Source


class GuardKind(enum.Enum):
    """What a guard checks about its source's value.

    TYPE_MATCH: `type(value) is expected`.
    ID_MATCH: `value is expected` (modules, functions, classes, None, ...).
    EQUALS_MATCH: same type and `value == expected` (Python constants).
    ARRAY_MATCH: an ndarray with `expected` = `ArraySpec` (dtype, shape, strides).
    LENGTH_MATCH: `len(value) == expected` (lists, tuples, dicts).
    DICT_KEYS: `list(value) == expected` (keys in order).
    """

    TYPE_MATCH = "type_match"
    ID_MATCH = "id_match"
    EQUALS_MATCH = "equals_match"
    ARRAY_MATCH = "array_match"
    LENGTH_MATCH = "length_match"
    DICT_KEYS = "dict_keys"


@attrs.frozen
class ArraySpec:
    """What ARRAY_MATCH expects of an ndarray: its type, dtype, shape and byte strides.

    `shape` and `strides` entries may be None, meaning "any size" for that
    dimension (dynamic shapes fill these in through the shape environment).
    """

    type: type
    dtype: Any
    shape: tuple[int | None, ...]
    strides: tuple[int | None, ...]


@attrs.frozen
class Guard:
    """One assumption of a compiled entry: `kind` holds for `source`'s value."""

    kind: GuardKind
    source: Source
    expected: Any = attrs.field(eq=False)

    def __str__(self) -> str:
        return f"{self.kind.name}({self.source.name}, {_describe(self.expected)})"


def _describe(expected: Any) -> str:
    # Short, readable forms for guard listings (explain, logs); repr for everything else.
    if isinstance(expected, ArraySpec):
        dims = ", ".join("?" if d is None else str(d) for d in expected.shape)
        strides = ", ".join("?" if s is None else str(s) for s in expected.strides)
        kind = "" if expected.type.__name__ == "ndarray" else f"{expected.type.__name__} "
        return f"{kind}{expected.dtype}[{dims}] strides=({strides})"
    if isinstance(expected, types.ModuleType):
        return f"module {expected.__name__}"
    if isinstance(expected, type):
        return f"class {expected.__qualname__}"
    if callable(expected) and hasattr(expected, "__qualname__"):
        return f"{type(expected).__name__} {expected.__qualname__}"
    return repr(expected)
