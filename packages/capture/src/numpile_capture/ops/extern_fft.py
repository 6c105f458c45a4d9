"""Extern rows of `np.fft`: every transform, the shifts and the sample frequencies.

Shapes follow NumPy's rules per axis: a complex transform keeps the length (or takes
`n`/`s`), a real-to-complex one gives `n // 2 + 1` on its last axis, a complex-to-real one
`n` or `2 * (m - 1)`. Dtypes come from NumPy on tiny probes (float32 stays single precision).

    >>> from numpile_capture import ArrayMeta
    >>> from numpile_capture.ops.extern import extern_row
    >>> str(extern_row("fft.irfftn").meta(a=ArrayMeta((4, 5), "complex128")))
    'float64[4, 8]'
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta
from .extern import ExternRow, axis_of, dtype_of, register_extern, replace_dims, require_array

_COMPLEX, _REAL_IN, _REAL_OUT = "c2c", "r2c", "c2r"


@functools.cache
def _fft_dtype(function: Callable[..., Any], dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype_of(function, np.ones((4, 4), dtype=dtype))


def _check_points(function: Callable[..., Any], size: Any, dtype: np.dtype[Any]) -> None:
    # Too few points: NumPy's own ValueError, message included.
    if isinstance(size, int) and size < 1:
        function(np.ones((1,), dtype=dtype), size)


def _length(kind: str, given: Any, current: Any) -> Any:
    if kind == _REAL_OUT:
        return given if given is not None else 2 * (current - 1)
    if kind == _REAL_IN:
        return (given if given is not None else current) // 2 + 1
    return given if given is not None else current


def _points(kind: str, given: Any, current: Any) -> Any:
    # The number of points the transform itself takes (NumPy checks it is at least 1).
    if kind == _REAL_OUT:
        return given if given is not None else 2 * (current - 1)
    return given if given is not None else current


def _one_axis(function: Callable[..., Any], kind: str) -> Callable[..., ArrayMeta]:
    def meta(a: Any, n: Any = None, axis: Any = -1, norm: Any = None, out: Any = None) -> ArrayMeta:
        array = require_array(a, "a")
        if array.ndim == 0:
            function(np.ones((), dtype=array.dtype))  # NumPy's own error
        ax = axis_of(axis, array.ndim)
        dtype = _fft_dtype(function, array.dtype)
        _check_points(function, _points(kind, n, array.shape[ax]), array.dtype)
        size = _length(kind, n, array.shape[ax])
        return ArrayMeta(replace_dims(array.shape, {ax: size}), dtype)

    return meta


def _many_axes(
    function: Callable[..., Any], kind: str, default: tuple[int, ...] | None
) -> Callable[..., ArrayMeta]:
    def meta(
        a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None
    ) -> ArrayMeta:
        array = require_array(a, "a")
        if axes is None:
            if default is not None:
                axes = default
            elif s is not None:
                axes = tuple(range(-len(s), 0))
            else:
                axes = tuple(range(array.ndim))
        normalized = [axis_of(axis, array.ndim) for axis in axes]
        sizes = list(s) if s is not None else [None] * len(normalized)
        if len(sizes) != len(normalized):
            raise ValueError("Shape and axes have different lengths.")
        dtype = _fft_dtype(function, array.dtype)
        changes: dict[int, Any] = {}
        for position, (axis, given) in enumerate(zip(normalized, sizes, strict=True)):
            last = position == len(normalized) - 1
            step = kind if last else _COMPLEX
            _check_points(function, _points(step, given, array.shape[axis]), array.dtype)
            changes[axis] = _length(step, given, array.shape[axis])
        return ArrayMeta(replace_dims(array.shape, changes), dtype)

    return meta


def _shift_meta(x: Any, axes: Any = None) -> ArrayMeta:
    array = require_array(x, "x")
    if axes is not None:
        for axis in axes if isinstance(axes, tuple) else (axes,):
            axis_of(axis, array.ndim)
    return ArrayMeta(array.shape, array.dtype)


def _frequencies(real: bool) -> Callable[..., ArrayMeta]:
    def meta(n: Any, d: Any = 1.0, device: Any = None) -> ArrayMeta:
        dtype = dtype_of(np.fft.fftfreq, 4, d)
        return ArrayMeta((n // 2 + 1 if real else n,), dtype)

    return meta


# NOTE: complex transforms, rfft and the shifts have VJP rules (autograd's vjp_extern.py).

for _name, _kind in (
    ("fft", _COMPLEX),
    ("ifft", _COMPLEX),
    ("rfft", _REAL_IN),
    ("irfft", _REAL_OUT),
    ("hfft", _REAL_OUT),
    ("ihfft", _REAL_IN),
):
    _function = getattr(np.fft, _name)
    _no_grad = ""
    _meta1 = _one_axis(_function, _kind)
    register_extern(ExternRow(f"fft.{_name}", _function, _meta1, ("a",), no_grad=_no_grad))

for _name, _kind, _default in (
    ("fft2", _COMPLEX, (-2, -1)),
    ("ifft2", _COMPLEX, (-2, -1)),
    ("rfft2", _REAL_IN, (-2, -1)),
    ("irfft2", _REAL_OUT, (-2, -1)),
    ("fftn", _COMPLEX, None),
    ("ifftn", _COMPLEX, None),
    ("rfftn", _REAL_IN, None),
    ("irfftn", _REAL_OUT, None),
):
    _function = getattr(np.fft, _name)
    _meta = _many_axes(_function, _kind, _default)
    register_extern(ExternRow(f"fft.{_name}", _function, _meta, ("a",)))

register_extern(ExternRow("fft.fftshift", np.fft.fftshift, _shift_meta, ("x",)))
register_extern(ExternRow("fft.ifftshift", np.fft.ifftshift, _shift_meta, ("x",)))
_FREQUENCIES = "sample frequencies from a length: no array input"
register_extern(
    ExternRow("fft.fftfreq", np.fft.fftfreq, _frequencies(False), (), no_grad=_FREQUENCIES)
)
register_extern(
    ExternRow("fft.rfftfreq", np.fft.rfftfreq, _frequencies(True), (), no_grad=_FREQUENCIES)
)
