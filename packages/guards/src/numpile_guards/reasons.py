"""Why a guard fails, in words: the slow, verbose twin of the compiled check.

`guard_failure` evaluates one guard and returns a readable sentence when it
does not hold, or None when it does. The dispatcher calls it only on a cache
miss, to say why each existing entry was rejected:

    >>> from numpile_guards import GlobalSource
    >>> guard_failure(Guard(GuardKind.EQUALS_MATCH, GlobalSource("scale"), 2.0),
    ...               {}, {"scale": 3.0}, None)
    "G['scale']: expected 2.0, got 3.0"

`RecompileReason` is the record of one recompile: the function, and the
failing guard of every entry that was tried.

Invariant: for every guard and every (L, G, F), `guard_failure(...) is None`
exactly when the compiled check (`compile_guards`) accepts that guard.
"""

from __future__ import annotations

import math
import re
import reprlib
from typing import Any

import attrs
import numpy as np

from .guard import ArraySpec, Guard, GuardKind
from .source import evaluation_names

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40


def _short(value: Any) -> str:
    return _repr.repr(value)


def _type_name(cls: type) -> str:
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    return f"{module.split('.')[0]}.{cls.__qualname__}"


def _same_float(value: Any, expected: Any) -> bool:
    # NaN matches NaN, and -0.0 is not 0.0: both change what compiled code computes.
    if math.isnan(expected):
        return bool(math.isnan(value))
    if expected == 0.0:
        return bool(value == 0.0) and math.copysign(1.0, value) == math.copysign(1.0, expected)
    return bool(value == expected)


def constants_match(value: Any, expected: Any) -> bool:
    """True when `value` is the same Python constant as `expected`: same exact type, same value.

    Containers compare element by element with the same rule; NaN matches NaN
    and -0.0 differs from 0.0.

        >>> constants_match(2, 2), constants_match(2.0, 2), constants_match((1, 2.0), (1, 2))
        (True, False, False)
    """
    if type(value) is not type(expected):
        return False
    if isinstance(expected, float | np.floating):
        return _same_float(value, expected)
    if isinstance(expected, complex | np.complexfloating):
        return _same_float(value.real, expected.real) and _same_float(value.imag, expected.imag)
    if isinstance(expected, tuple | list):
        if len(value) != len(expected):
            return False
        return all(constants_match(v, e) for v, e in zip(value, expected, strict=True))
    if isinstance(expected, dict):
        if list(value) != list(expected):
            return False
        return all(constants_match(value[key], expected[key]) for key in expected)
    try:
        return bool(value == expected)
    except Exception:
        return False


def _array_failure(name: str, fetched: Any, spec: ArraySpec) -> str | None:
    if type(fetched) is not spec.type:
        return f"{name}: expected {_type_name(spec.type)}, got {_type_name(type(fetched))}"
    value: Any = fetched
    if value.dtype != spec.dtype:
        return f"{name}.dtype: expected {np.dtype(spec.dtype).name}, got {value.dtype.name}"
    shape = tuple(value.shape)
    if len(shape) != len(spec.shape):
        return f"{name}.ndim: expected {len(spec.shape)}, got {len(shape)}"
    for index, (got, want) in enumerate(zip(shape, spec.shape, strict=True)):
        if want is not None and got != want:
            return f"{name}.shape[{index}]: expected {want}, got {got}"
    strides = tuple(value.strides)
    if len(strides) != len(spec.strides) or any(
        want is not None and got != want for got, want in zip(strides, spec.strides, strict=True)
    ):
        return f"{name}.strides: expected {spec.strides}, got {strides} (byte strides differ)"
    if spec.device_id is not None and value.device.id != spec.device_id:
        return f"{name}.device.id: expected {spec.device_id}, got {value.device.id}"
    return None


# A source expression inside a relation's text: L['x'].shape[0], G['n'], F.__defaults__[1].
_SOURCE_PATTERN = re.compile(r"\b[LGF](?:\[[^\]\[]+\]|\.[A-Za-z_]\w*)+")


def _relation_failure(relation: Any, L: dict[str, Any], G: dict[str, Any], F: Any) -> str | None:
    if relation.evaluate(L, G, F):
        return None
    text = relation.text
    values: list[str] = []
    for name in dict.fromkeys(_SOURCE_PATTERN.findall(text)):
        try:
            value = eval(name, evaluation_names(L, G, F))
        except Exception as exc:
            return f"{text}: {name} not found ({type(exc).__name__}: {exc})"
        values.append(f"{name} = {_short(value)}")
    got = f" for {', '.join(values)}" if values else ""
    return f"{text}: false{got}"


def guard_failure(guard: Guard, L: dict[str, Any], G: dict[str, Any], F: Any) -> str | None:
    """Why `guard` fails on (L, G, F), as one readable line; None when it holds.

    A source that cannot be fetched (missing key, attribute or closure cell)
    is a failure, never an exception.

        >>> from numpile_guards import LocalSource
        >>> spec = ArraySpec(np.ndarray, np.dtype("float32"), (8,), (4,))
        >>> guard_failure(Guard(GuardKind.ARRAY_MATCH, LocalSource("x"), spec),
        ...               {"x": np.zeros(9, np.float32)}, {}, None)
        "L['x'].shape[0]: expected 8, got 9"
    """
    if guard.kind is GuardKind.SHAPE_RELATION:
        return _relation_failure(guard.expected, L, G, F)
    name = guard.source.name
    try:
        value = guard.source.get(L, G, F)
    except Exception as exc:
        return f"{name}: not found ({type(exc).__name__}: {exc})"
    expected = guard.expected
    kind = guard.kind
    if kind is GuardKind.TYPE_MATCH:
        if type(value) is expected:
            return None
        return f"{name}: expected type {_type_name(expected)}, got {_type_name(type(value))}"
    if kind is GuardKind.ARRAY_MATCH:
        return _array_failure(name, value, expected)
    if kind is GuardKind.ID_MATCH:
        if value is expected:
            return None
        return f"{name}: expected the object {_short(expected)}, got {_short(value)}"
    if kind is GuardKind.EQUALS_MATCH:
        if constants_match(value, expected):
            return None
        if type(value) is type(expected):
            return f"{name}: expected {_short(expected)}, got {_short(value)}"
        return (
            f"{name}: expected {_short(expected)} ({_type_name(type(expected))}), "
            f"got {_short(value)} ({_type_name(type(value))})"
        )
    if kind is GuardKind.LENGTH_MATCH:
        try:
            length = len(value)
        except TypeError:
            return f"len({name}): {_type_name(type(value))} has no length"
        if length == expected:
            return None
        return f"len({name}): expected {expected}, got {length}"
    if kind is GuardKind.DICT_KEYS:
        try:
            keys = list(value)
        except TypeError:
            return f"{name}: {_type_name(type(value))} is not iterable"
        if keys == list(expected):
            return None
        return f"{name} keys: expected {_short(list(expected))}, got {_short(keys)}"
    raise ValueError(f"unknown guard kind {kind!r}")


@attrs.frozen
class RecompileReason:
    """One recompile of a function: where it is and why each cached entry was rejected.

    `failures[i]` is the first failing guard of entry `i` (newest first).

        >>> print(RecompileReason("f", "model.py", 3, ("L['x'].shape[0]: expected 8, got 9",)))
        Recompiling function f in model.py:3
          triggered by the following guard failure(s):
          - entry 0: L['x'].shape[0]: expected 8, got 9
    """

    function: str
    filename: str
    lineno: int
    failures: tuple[str, ...]

    def __str__(self) -> str:
        lines = [
            f"Recompiling function {self.function} in {self.filename}:{self.lineno}",
            "  triggered by the following guard failure(s):",
        ]
        lines += [f"  - entry {index}: {text}" for index, text in enumerate(self.failures)]
        return "\n".join(lines)
