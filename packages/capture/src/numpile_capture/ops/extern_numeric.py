"""Extern rows of NumPy's numerical helpers: interpolation, histograms, convolution, sorted
search, polynomials and padding.

    >>> from numpile_capture import ArrayMeta
    >>> from numpile_capture.ops.extern import extern_row
    >>> [str(m) for m in extern_row("histogram").meta(a=ArrayMeta((100,), "float64"), bins=8)]
    ['int64[8]', 'float64[9]']
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..meta import ArrayMeta, ScalarMeta
from .extern import ExternRow, axis_of, dtype_of, register_extern, require_array, shaped


def _probe(value: Any, length: int = 3) -> Any:
    # A small concrete stand-in: ones of the meta's dtype (1-D), or the constant itself.
    if isinstance(value, ArrayMeta):
        return np.arange(1, length + 1).astype(value.dtype)
    if isinstance(value, ScalarMeta):
        return value.type(1)
    return value


def _shape(value: Any) -> tuple[Any, ...]:
    return value.shape if isinstance(value, ArrayMeta) else np.shape(value)


def _interp_meta(
    x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None
) -> ArrayMeta:
    dtype = dtype_of(
        np.interp, _probe(x), _probe(xp), _probe(fp), _probe(left), _probe(right), period
    )
    return ArrayMeta(_shape(x), dtype)


def _bins(bins: Any) -> Any:
    if isinstance(bins, ArrayMeta):
        if bins.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        return bins.shape[0] - 1
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram with bins={bins!r} (a data-dependent bin count)")
    count = operator.index(bins)
    if count < 1:
        raise ValueError("`bins` must be positive, when an integer")
    return count


def _histogram_meta(
    a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[ArrayMeta, ArrayMeta]:
    require_array(a, "a")
    count = _bins(bins)
    probe_bins = _probe(bins) if isinstance(bins, ArrayMeta) else 2
    weight_probe = None if weights is None else _probe(weights)
    hist, edges = np.histogram(
        _probe(a), probe_bins, range=range, density=density, weights=weight_probe
    )
    return shaped((count,), hist.dtype), shaped((count + 1,), edges.dtype)


def _histogram2d_meta(
    x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[ArrayMeta, ...]:
    require_array(x, "x")
    require_array(y, "y")
    pair = bins if isinstance(bins, tuple) else (bins, bins)
    nx, ny = (_bins(item) for item in pair)
    weight_probe = None if weights is None else _probe(weights)
    hist, xedges, yedges = np.histogram2d(
        _probe(x), _probe(y), 2, range=range, density=density, weights=weight_probe
    )
    return (
        shaped((nx, ny), hist.dtype),
        shaped((nx + 1,), xedges.dtype),
        shaped((ny + 1,), yedges.dtype),
    )


def _convolution(function: Any, default: str) -> Any:
    def meta(a: Any, v: Any, mode: str = default) -> ArrayMeta:
        n, m = (_shape(value) for value in (a, v))
        if len(n) != 1 or len(m) != 1:
            function(np.ones((2, 2)), np.ones(2))  # NumPy's own error
        dtype = dtype_of(function, _probe(a), _probe(v))
        big, little = n[0], m[0]
        if mode == "full":
            return ArrayMeta((big + little - 1,), dtype)
        if not (isinstance(big, int) and isinstance(little, int)):
            raise NotImplementedError(f"{function.__name__} mode={mode!r} of symbolic lengths")
        if min(big, little) == 0:
            function(np.ones(0), np.ones(1))  # NumPy's own error
        if mode == "same":
            return shaped((max(big, little),), dtype)
        if mode == "valid":
            return shaped((max(big, little) - min(big, little) + 1,), dtype)
        function(np.ones(1), np.ones(1), mode)  # NumPy's own error for the mode
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")

    return meta


def _searchsorted_meta(a: Any, v: Any, side: str = "left", sorter: Any = None) -> ArrayMeta:
    require_array(a, "a")
    return ArrayMeta(_shape(v), np.dtype(np.intp))


def _polyval_meta(p: Any, x: Any) -> ArrayMeta:
    if isinstance(p, ArrayMeta) and p.ndim != 1:
        raise NotImplementedError("polyval of a non-1-D coefficient array")
    return ArrayMeta(_shape(x), dtype_of(np.polyval, _probe(p), _probe(x)))


def _polyfit_meta(
    x: Any,
    y: Any,
    deg: Any,
    rcond: Any = None,
    full: bool = False,
    w: Any = None,
    cov: Any = False,
) -> ArrayMeta:
    degree = operator.index(deg)
    if degree < 0:
        raise ValueError("expected deg >= 0")
    if full or cov:
        raise NotImplementedError("polyfit with full= or cov=")
    shape_y = _shape(y)
    dtype = dtype_of(np.polyfit, np.arange(4.0), np.arange(4.0).astype(y.dtype), 1)
    return shaped((degree + 1, *shape_y[1:]), dtype)


def _pad_meta(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> ArrayMeta:
    meta = require_array(array, "array")
    if not isinstance(mode, str):
        raise NotImplementedError("np.pad with a callable mode")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (meta.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    shape = tuple(
        dim + int(before) + int(after)
        for dim, (before, after) in zip(meta.shape, widths, strict=True)
    )
    return ArrayMeta(shape, meta.dtype)


def _diff_meta(
    a: Any, n: Any = 1, axis: Any = -1, prepend: Any = np._NoValue, append: Any = np._NoValue
) -> ArrayMeta:
    array = require_array(a, "a")
    count = operator.index(n)
    if count < 0:
        raise ValueError(f"order must be non-negative but got {count!r}")
    if array.ndim == 0:
        np.diff(np.zeros(()))  # NumPy's own error
    ax = axis_of(axis, array.ndim)
    size = array.shape[ax]
    for end, first in ((prepend, True), (append, False)):
        if end is not np._NoValue:
            size = size + _end_length(array, ax, end, first=first)
    length = max(size - count, 0) if isinstance(size, int) else size - count
    # The dtype NumPy gives: `a` joined with its ends (a Python scalar end is a 0-d array).
    probes = {"prepend": _end_probe(prepend), "append": _end_probe(append)}
    dtype = dtype_of(np.diff, np.zeros(2 + count, array.dtype), count, **probes)
    return shaped(tuple(length if d == ax else dim for d, dim in enumerate(array.shape)), dtype)


def _end_length(array: ArrayMeta, axis: int, end: Any, *, first: bool) -> Any:
    # How many items np.diff's prepend= or append= adds along `axis` (a 0-d end: one).
    shape = _shape(end)
    if len(shape) == 0:
        return 1
    others = [dim for d, dim in enumerate(array.shape) if d != axis]
    if len(shape) != array.ndim or [dim for d, dim in enumerate(shape) if d != axis] != others:
        # NumPy's own error, from empty stand-ins of the two shapes in NumPy's order
        pair = [_empty_like_shape(array.shape, axis), _empty_like_shape(shape, axis)]
        np.concatenate(pair[::-1] if first else pair, axis)
    return shape[axis]


def _empty_like_shape(shape: tuple[Any, ...], axis: int) -> Any:
    # Zero-length along `axis` (no memory) and the given length elsewhere (ints only).
    dims = [0 if d == axis or not isinstance(dim, int) else dim for d, dim in enumerate(shape)]
    return np.empty(dims, np.int8)


def _end_probe(end: Any) -> Any:
    if isinstance(end, ArrayMeta):
        return np.zeros((1,) * min(end.ndim, 1), end.dtype)
    if isinstance(end, ScalarMeta):
        return end.type(0)
    return end


def _gradient_meta(
    f: Any, varargs: tuple[Any, ...] = (), axis: Any = None, edge_order: Any = 1
) -> ArrayMeta | tuple[ArrayMeta, ...]:
    array = require_array(f, "f")
    if any(isinstance(spacing, ArrayMeta) for spacing in varargs):
        raise NotImplementedError("np.gradient with coordinate arrays as spacing")
    # NumPy's dtype, result structure and argument errors, from a probe with three items
    # along every axis; the sizes' own check ("Shape of array too small") on static sizes.
    probe = np.zeros((3,) * array.ndim, array.dtype)
    result = dtype_of(np.gradient, probe, *varargs, axis=axis, edge_order=edge_order)
    axes = range(array.ndim) if axis is None else normalize_axis_tuple(axis, array.ndim)
    for ax in axes:
        if isinstance(array.shape[ax], int) and array.shape[ax] < operator.index(edge_order) + 1:
            np.gradient(np.zeros(array.shape[ax]), edge_order=edge_order)
    each = shaped(array.shape, result)
    return each if len(axes) == 1 else tuple(each for _ in axes)


def _window_meta(M: Any, **_: Any) -> ArrayMeta:
    return shaped((max(operator.index(M), 0),), np.dtype(np.float64))


_INTEGER = "integer or bool result"
for _row in (
    ExternRow(
        "interp",
        np.interp,
        _interp_meta,
        ("x", "xp", "fp", "left", "right"),
    ),
    ExternRow(
        "histogram",
        np.histogram,
        _histogram_meta,
        ("a", "bins", "weights"),
        no_grad="counts are piecewise constant: no gradient almost everywhere",
    ),
    ExternRow(
        "histogram2d",
        np.histogram2d,
        _histogram2d_meta,
        ("x", "y", "weights"),
        no_grad="counts are piecewise constant: no gradient almost everywhere",
    ),
    ExternRow("convolve", np.convolve, _convolution(np.convolve, "full"), ("a", "v")),
    ExternRow("correlate", np.correlate, _convolution(np.correlate, "valid"), ("a", "v")),
    ExternRow(
        "searchsorted", np.searchsorted, _searchsorted_meta, ("a", "v", "sorter"), no_grad=_INTEGER
    ),
    ExternRow("polyval", np.polyval, _polyval_meta, ("p", "x")),
    ExternRow("polyfit", np.polyfit, _polyfit_meta, ("x", "y", "w")),
    ExternRow("pad", np.pad, _pad_meta, ("array",)),
    ExternRow("diff", np.diff, _diff_meta, ("a", "prepend", "append")),
    ExternRow(
        "gradient",
        np.gradient,
        _gradient_meta,
        ("f",),
        no_grad="not written yet: np.gradient is linear in f (its differences transposed)",
    ),
):
    register_extern(_row)

for _name in ("hanning", "hamming", "blackman", "bartlett", "kaiser"):
    _window = getattr(np, _name)
    register_extern(
        ExternRow(_name, _window, _window_meta, (), no_grad="a window from its length: no input")
    )
