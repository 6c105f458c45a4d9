"""libdevice for Triton's CPU interpreter: the math functions generated kernels call, in NumPy.

`TILE_SUM` is `tl.sum` of a 1-d tile for the loop programs' tiles (`program_views.py`): the
interpreter runs `tl.sum`, a `triton.jit` function, by patching the language anew on each
call (some 10 ms), where NumPy's sum of the tile takes microseconds.

Triton's interpreter (`TRITON_INTERPRET=1`) runs a kernel as Python on NumPy
blocks but refuses CUDA's libdevice (`extern_elementwise` is not supported
there). Generated modules bind the name `libdevice` to `LIBDEVICE` below when
interpreting, so the same kernel text runs on a GPU (libdevice) and on the
CPU (NumPy's ufuncs, which give NumPy's own values). Only imported under the
interpreter; it needs triton.

    >>> LIBDEVICE.exp  # doctest: +SKIP
    <function _unary.<locals>.apply ...>
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language as tl
from triton.runtime.interpreter import TensorHandle


def _wrap(data: np.ndarray[Any, Any], like: Any) -> Any:
    handle = TensorHandle(np.asarray(data, dtype=like.handle.data.dtype), like.handle.dtype.scalar)
    return tl.core.tensor(handle, like.type)


def _unary(ufunc: Callable[..., Any]) -> Callable[[Any], Any]:
    def apply(x: Any) -> Any:
        with np.errstate(all="ignore"):
            return _wrap(ufunc(x.handle.data), x)

    return apply


def _binary(ufunc: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    def apply(x: Any, y: Any) -> Any:
        x, y = tl.broadcast(x, y)  # the kernel's broadcasting rules, then NumPy's ufunc
        a = x.handle.data
        with np.errstate(all="ignore"):
            return _wrap(ufunc(a, y.handle.data.astype(a.dtype)), x)

    return apply


_UNARY: dict[str, Callable[..., Any]] = {
    "sqrt": np.sqrt,
    "cbrt": np.cbrt,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
    "tgamma": np.vectorize(math.gamma, otypes=[np.float64]),
    "lgamma": np.vectorize(math.lgamma, otypes=[np.float64]),
}
_BINARY: dict[str, Callable[..., Any]] = {
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "pow": np.power,
    "fmod": np.fmod,
    "copysign": np.copysign,
}

LIBDEVICE = types.SimpleNamespace(
    **{name: _unary(fn) for name, fn in _UNARY.items()},
    **{name: _binary(fn) for name, fn in _BINARY.items()},
)
"""NumPy stand-ins for the libdevice functions of `codegen/triton/ops.py`, for the interpreter."""


def _tile_sum(x: Any) -> Any:
    data = x.handle.data
    with np.errstate(all="ignore"):
        total = np.array([np.sum(data)]).astype(data.dtype)
    return tl.core.tensor(TensorHandle(total, x.dtype.scalar), x.dtype)


TILE_SUM = _tile_sum
"""The sum of a 1-d tile as a 0-d value, for the interpreter (`tl.sum` on a GPU)."""
