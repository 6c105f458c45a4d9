"""Probe values: tiny stand-ins for metadata, used to ask NumPy itself for dtypes and errors.

A meta rule never re-derives NumPy's promotion rules: it calls the real NumPy
function on empty (or one-element) arrays of the input dtypes, with weak
Python scalars passed as they are, and reads the result's dtype. Any
exception NumPy raises (a casting error, an out-of-bounds Python int) is the
exception the user's program would raise.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

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
