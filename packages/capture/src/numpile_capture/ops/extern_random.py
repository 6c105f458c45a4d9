"""Extern rows of `np.random.Generator` methods: draws that advance the generator in order.

The generator object is the node's first input (a constant of the graph, guarded by
identity, so later calls with the same generator run the same compiled code); the inductor
runs the nodes in program order and never drops one, so the generator's state advances
exactly as in eager and the results are bit-identical. A draw's shape is `size`, or the
broadcast shape of its array parameters; `size` may be symbolic (`size=x.shape`: the rows'
`sizes`, see `ExternRow`), so one graph serves every size.

    >>> from numpile_capture.ops.extern import extern_row
    >>> str(extern_row("random.normal").meta(loc=0.0, scale=1.0, size=(3, 2)))
    'float64[3, 2]'
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ._shapes import broadcast_shapes
from .extern import ExternRow, ExternState, register_extern, shaped

_RANDOM = "a random draw: no reparametrized gradient"


def _probe(value: Any) -> Any:
    if isinstance(value, ArrayMeta):
        return np.ones((1,), dtype=value.dtype)
    if isinstance(value, ScalarMeta):
        return value.type(1)
    return value


def _size(size: Any) -> tuple[Any, ...] | None:
    if size is None:
        return None
    if isinstance(size, tuple | list):
        return tuple(size)
    return (operator.index(size),) if isinstance(size, int) else (size,)


def _draw(method: Callable[..., Any], arrays: tuple[str, ...]) -> Callable[..., ArrayMeta]:
    def meta(**arguments: Any) -> ArrayMeta:
        size = _size(arguments.pop("size", None))
        shapes = [value.shape for value in arguments.values() if isinstance(value, ArrayMeta)]
        if size is None and not shapes:
            raise NotImplementedError(
                "a scalar draw (size=None and scalar parameters gives a Python float)"
            )
        probes = {key: _probe(value) for key, value in arguments.items()}
        sample = np.asarray(method(np.random.default_rng(0), **probes, size=1))
        shape = size if size is not None else broadcast_shapes(*shapes)
        return ArrayMeta(shape, sample.dtype)

    return meta


def _sized(method: Callable[..., Any]) -> Callable[..., ArrayMeta]:
    # Methods whose only shape parameter is `size` (random, standard_normal, ...).
    def meta(size: Any = None, **arguments: Any) -> ArrayMeta:
        shape = _size(size)
        if shape is None:
            raise NotImplementedError("a scalar draw (size=None gives a Python float)")
        sample = np.asarray(method(np.random.default_rng(0), size=1, **arguments))
        return ArrayMeta(shape, sample.dtype)

    return meta


def _integers_meta(
    low: Any, high: Any = None, size: Any = None, dtype: Any = np.int64, endpoint: bool = False
) -> ArrayMeta:
    shape = _size(size)
    shapes = [value.shape for value in (low, high) if isinstance(value, ArrayMeta)]
    if shape is None and not shapes:
        raise NotImplementedError("a scalar draw (size=None gives a NumPy scalar)")
    return ArrayMeta(shape if shape is not None else broadcast_shapes(*shapes), np.dtype(dtype))


def _permutation_meta(x: Any, axis: int = 0) -> ArrayMeta:
    if isinstance(x, ArrayMeta):
        return ArrayMeta(x.shape, x.dtype)
    return shaped((operator.index(x),), np.dtype(np.int64))


def _choice_meta(
    a: Any,
    size: Any = None,
    replace: bool = True,
    p: Any = None,
    axis: int = 0,
    shuffle: bool = True,
) -> ArrayMeta:
    shape = _size(size)
    if shape is None:
        raise NotImplementedError("a scalar draw (size=None)")
    if isinstance(a, ArrayMeta):
        if a.ndim != 1:
            raise NotImplementedError("choice from a multi-dimensional array")
        return ArrayMeta(shape, a.dtype)
    return ArrayMeta(shape, np.dtype(np.int64))


_DRAWS = {
    "normal": ("loc", "scale"),
    "uniform": ("low", "high"),
    "exponential": ("scale",),
    "poisson": ("lam",),
    "binomial": ("n", "p"),
    "gamma": ("shape", "scale"),
    "beta": ("a", "b"),
    "lognormal": ("mean", "sigma"),
    "laplace": ("loc", "scale"),
    "logistic": ("loc", "scale"),
    "geometric": ("p",),
    "standard_t": ("df",),
    "chisquare": ("df",),
}
_SIZED = ("random", "standard_normal", "standard_exponential")

_ROWS: list[ExternRow] = []
for _name, _arrays in _DRAWS.items():
    _method = getattr(np.random.Generator, _name)
    _ROWS.append(
        ExternRow(
            f"random.{_name}",
            _method,
            _draw(_method, _arrays),
            _arrays,
            no_grad=_RANDOM,
            state=ExternState.GENERATOR,
            sizes=("size",),
        )
    )
for _name in _SIZED:
    _method = getattr(np.random.Generator, _name)
    _ROWS.append(
        ExternRow(
            f"random.{_name}",
            _method,
            _sized(_method),
            (),
            no_grad=_RANDOM,
            state=ExternState.GENERATOR,
            sizes=("size",),
        )
    )
_ROWS += [
    ExternRow(
        "random.integers",
        np.random.Generator.integers,
        _integers_meta,
        ("low", "high"),
        no_grad=_RANDOM,
        state=ExternState.GENERATOR,
        sizes=("size",),
    ),
    ExternRow(
        "random.permutation",
        np.random.Generator.permutation,
        _permutation_meta,
        ("x",),
        no_grad=_RANDOM,
        state=ExternState.GENERATOR,
    ),
    ExternRow(
        "random.choice",
        np.random.Generator.choice,
        _choice_meta,
        ("a", "p"),
        no_grad=_RANDOM,
        state=ExternState.GENERATOR,
        sizes=("size",),
    ),
]
for _row in _ROWS:
    register_extern(_row)
