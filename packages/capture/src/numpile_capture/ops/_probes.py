"""Probe values: tiny stand-ins for metadata, used to ask NumPy itself for dtypes and errors.

A meta rule never re-derives NumPy's promotion rules: it calls the real NumPy
function on empty (or one-element) arrays of the input dtypes, with weak
Python scalars passed as they are, and reads the result's dtype. Any
exception NumPy raises (a casting error, an out-of-bounds Python int) is the
exception the user's program would raise.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Hashable
from typing import Any, cast

import numpy as np

from ..meta import ArrayMeta, ScalarMeta

# A representative value of each weak Python scalar type (its value never matters under NEP 50).
_SCALAR_SAMPLES: dict[type, Any] = {bool: False, int: 0, float: 0.0, complex: 0j}


def probe(value: Any, shape: tuple[int, ...] = (0,)) -> Any:
    """A concrete stand-in for an input of a meta rule: an array of `shape` for an ArrayMeta.

    >>> probe(ArrayMeta((5, 7), "int8")).dtype
    dtype('int8')
    """
    if isinstance(value, ArrayMeta):
        return np.zeros(shape, dtype=value.dtype)
    if isinstance(value, ScalarMeta):
        return _SCALAR_SAMPLES.get(value.type, value.type())
    return value


def shaped_probe(meta: ArrayMeta) -> np.ndarray[Any, Any]:
    """A zero-strided, read-only array with `meta`'s static shape and dtype (costs no memory).

    >>> shaped_probe(ArrayMeta((1000, 1000), "float64")).strides
    (0, 0)
    """
    return np.broadcast_to(np.zeros((), dtype=meta.dtype), meta.shape)


def is_static_shape(*metas: Any) -> bool:
    """Whether every ArrayMeta among `metas` has only plain int dims."""
    return all(isinstance(d, int) for m in metas if isinstance(m, ArrayMeta) for d in m.shape)


def result_dtype(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> np.dtype[Any]:
    """The dtype of `fn(*args, **kwargs)` on probes, with NumPy's warnings silenced.

    >>> result_dtype(np.add, probe(ArrayMeta((3,), "int8")), 1.5)
    dtype('float64')
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return np.asarray(fn(*args, **kwargs)).dtype


def dtype_operand(value: Any) -> Any:
    """The dtype (strong) or Python type (weak) NumPy promotes `value` with."""
    if isinstance(value, ArrayMeta):
        return value.dtype
    if isinstance(value, ScalarMeta):
        return value.type
    if isinstance(value, np.generic):
        return value.dtype
    return type(value)


def dtype_key(value: Any) -> Hashable | None:
    """What decides the dtype behaviour of an input, as a hashable key (None: do not cache).

    Arrays and NumPy scalars count by dtype, weak Python scalars by type, except
    Python ints, whose value decides NumPy's OverflowError.

    >>> dtype_key(3), dtype_key(2.5)
    (('int', 3), <class 'float'>)
    """
    if isinstance(value, ArrayMeta):
        return value.dtype
    if isinstance(value, ScalarMeta):
        return value.type
    if isinstance(value, np.generic):
        return ("strong", value.dtype)
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float | complex):
        return cast(Hashable, type(value))
    return None


def _from_key(key: Hashable) -> Any:
    if isinstance(key, np.dtype):
        return np.zeros((0,), dtype=key)
    if isinstance(key, tuple) and key[0] == "strong":
        return key[1].type(0)
    if isinstance(key, tuple) and key[0] == "int":
        return key[1]
    assert isinstance(key, type)
    return _SCALAR_SAMPLES.get(key, 0)


@functools.lru_cache(maxsize=8192)
def _cached_ufunc_dtype(ufunc: np.ufunc, keys: tuple[Hashable, ...]) -> np.dtype[Any]:
    return result_dtype(ufunc, *(_from_key(key) for key in keys))


def ufunc_result_dtype(ufunc: np.ufunc, inputs: tuple[Any, ...]) -> np.dtype[Any]:
    """The result dtype of `ufunc` on meta inputs, cached by dtypes (NumPy's errors propagate).

    >>> ufunc_result_dtype(np.add, (ArrayMeta((3,), "int8"), 1.5))
    dtype('float64')
    """
    keys = tuple(dtype_key(value) for value in inputs)
    if any(key is None for key in keys):
        return result_dtype(ufunc, *(probe(value) for value in inputs))
    return _cached_ufunc_dtype(ufunc, keys)
