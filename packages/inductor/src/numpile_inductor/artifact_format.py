"""The on-disk format of cached graph artifacts: tagged JSON that can hold data, never code.

A graph artifact (`graph_cache.GraphArtifact`) is read back from a folder other
processes may have written; `pickle` would run whatever a planted file names. This
format holds only plain values (None, bools, ints, floats bit for bit, strings, bytes,
tuples, lists, dicts, slices, `...`, NumPy dtypes, scalars and small arrays) and
instances of the few attrs classes a caller names; anything else cannot be written
(the graph is then not cached) and any other tag cannot be read (the entry is a miss).

    >>> data = encode_artifact((1, slice(None, 2), float("nan")), classes=())
    >>> decode_artifact(data, classes=())
    (1, slice(None, 2, None), nan)
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

# Bump when the layout changes: old entries then fail to decode (a cache miss).
FORMAT_VERSION = 1

# Python types a value may name (as a dtype argument, say), by name.
_BUILTIN_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "complex": complex}


class ArtifactFormatError(ValueError):
    """A value cannot be written in the artifact format, or data is not a valid artifact."""


def encode_artifact(value: Any, *, classes: Sequence[type]) -> bytes:
    """`value` as tagged JSON bytes; `classes` are the attrs classes it may contain.

    Raises `ArtifactFormatError` for anything else (a function, an arbitrary object).

        >>> encode_artifact(b"ab", classes=())
        b'{"format": 1, "value": {"$": "bytes", "v": "YWI="}}'
    """
    allowed = {cls.__name__: cls for cls in classes}
    document = {"format": FORMAT_VERSION, "value": _encode(value, allowed)}
    return json.dumps(document, allow_nan=False).encode()


def decode_artifact(data: bytes, *, classes: Sequence[type]) -> Any:
    """The value `encode_artifact` wrote; `ArtifactFormatError` for anything else.

    >>> decode_artifact(b'{"format": 1, "value": {"$": "os.system", "v": "ls"}}',
    ...                 classes=())  # doctest: +SKIP
    Traceback (most recent call last):
    ArtifactFormatError: unknown tag 'os.system'
    """
    allowed = {cls.__name__: cls for cls in classes}
    try:
        document = json.loads(data)
    except ValueError as error:
        raise ArtifactFormatError(f"not JSON: {error}") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT_VERSION:
        raise ArtifactFormatError("not an artifact of this format version")
    try:
        return _decode(document.get("value"), allowed)
    except ArtifactFormatError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise ArtifactFormatError(f"malformed artifact: {error}") from error


def _encode(value: Any, allowed: dict[str, type]) -> Any:
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return {"$": "float", "v": float.hex(value)}
    if kind is complex:
        return {"$": "complex", "v": [float.hex(value.real), float.hex(value.imag)]}
    if kind is bytes:
        return {"$": "bytes", "v": base64.b64encode(value).decode("ascii")}
    if kind is list:
        return [_encode(item, allowed) for item in value]
    if kind is tuple:
        return {"$": "tuple", "v": [_encode(item, allowed) for item in value]}
    if kind is dict:
        pairs = [[_encode(k, allowed), _encode(v, allowed)] for k, v in value.items()]
        return {"$": "dict", "v": pairs}
    if kind is slice:
        parts = [value.start, value.stop, value.step]
        return {"$": "slice", "v": [_encode(part, allowed) for part in parts]}
    if value is Ellipsis:
        return {"$": "ellipsis"}
    if isinstance(value, np.dtype):
        return {"$": "dtype", "v": _dtype_text(value)}
    if isinstance(value, np.generic):
        array = np.asarray(value)
        return {"$": "scalar", "v": _encode(_array_fields(array), allowed)}
    if kind is np.ndarray:
        return {"$": "ndarray", "v": _encode(_array_fields(value), allowed)}
    if isinstance(value, type):
        return {"$": "type", "v": _type_name(value)}
    if kind.__name__ in allowed and allowed[kind.__name__] is kind:
        fields = {
            field.name: _encode(getattr(value, field.name), allowed) for field in attrs.fields(kind)
        }
        return {"$": "attrs", "class": kind.__name__, "v": fields}
    raise ArtifactFormatError(f"cannot store a {kind.__module__}.{kind.__qualname__}")


def _dtype_text(dtype: np.dtype[Any]) -> str:
    if dtype.fields is not None or dtype.kind in "OV":
        raise ArtifactFormatError(f"cannot store the dtype {dtype}")
    return dtype.str


def _array_fields(array: np.ndarray[Any, Any]) -> tuple[str, tuple[int, ...], bytes]:
    contiguous = np.ascontiguousarray(array)
    return (_dtype_text(array.dtype), tuple(array.shape), contiguous.tobytes())


def _type_name(value: type) -> str:
    for name, builtin in _BUILTIN_TYPES.items():
        if value is builtin:
            return name
    if issubclass(value, np.generic) and value is not np.generic:
        return "numpy:" + _dtype_text(np.dtype(value))
    raise ArtifactFormatError(f"cannot store the type {value.__qualname__}")


def _decode(data: Any, allowed: dict[str, type]) -> Any:
    if data is None or type(data) in (bool, int, str):
        return data
    if type(data) is list:
        return [_decode(item, allowed) for item in data]
    if type(data) is not dict:
        raise ArtifactFormatError(f"unexpected {type(data).__name__}")
    tag = data.get("$")
    payload: Any = data.get("v")
    if tag == "float":
        return float.fromhex(payload)
    if tag == "complex":
        return complex(float.fromhex(payload[0]), float.fromhex(payload[1]))
    if tag == "bytes":
        return base64.b64decode(payload, validate=True)
    if tag == "tuple":
        return tuple(_decode(item, allowed) for item in payload)
    if tag == "dict":
        return {_decode(k, allowed): _decode(v, allowed) for k, v in payload}
    if tag == "slice":
        return slice(*(_decode(part, allowed) for part in payload))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "dtype":
        return _plain_dtype(payload)
    if tag in ("scalar", "ndarray"):
        dtype_text, shape, raw = _decode(payload, allowed)
        array = np.frombuffer(raw, dtype=_plain_dtype(dtype_text)).reshape(shape).copy()
        return array[()] if tag == "scalar" else array
    if tag == "type":
        return _decode_type(payload)
    if tag == "attrs":
        cls = allowed.get(data.get("class", ""))
        if cls is None:
            raise ArtifactFormatError(f"unknown class {data.get('class')!r}")
        return cls(**{name: _decode(item, allowed) for name, item in payload.items()})
    raise ArtifactFormatError(f"unknown tag {tag!r}")


def _plain_dtype(text: Any) -> np.dtype[Any]:
    # Only a simple dtype string ("<f8", "|b1"): never object or structured dtypes.
    if type(text) is not str or not 2 <= len(text) <= 5 or text[0] not in "<>|=":
        raise ArtifactFormatError(f"not a plain dtype: {text!r}")
    dtype = np.dtype(text)
    if dtype.kind in "OV":
        raise ArtifactFormatError(f"not a plain dtype: {text!r}")
    return dtype


def _decode_type(name: Any) -> type:
    if type(name) is not str:
        raise ArtifactFormatError("a type name must be a string")
    if name in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[name]
    if name.startswith("numpy:"):
        scalar_type: type = _plain_dtype(name.removeprefix("numpy:")).type
        return scalar_type
    raise ArtifactFormatError(f"unknown type {name!r}")
