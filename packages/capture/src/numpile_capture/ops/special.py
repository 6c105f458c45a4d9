"""Special functions of `scipy.special` that libm has: erf, erfc, gamma and lgamma (gammaln).

They are pointwise ops, so the inductor fuses them into its kernels (spelled with libm's
`erf`, `erfc`, `tgamma` and `lgamma`); `math` has them too, so they exist without SciPy.
The binding of `scipy.special.erf` & co. registers only once the user has imported
`scipy.special` (SciPy is no dependency of numpile). Eager, an op calls SciPy's own ufunc
when SciPy is importable (bit-identical results), else `math` element by element.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("lgamma").meta(ArrayMeta((3,), "float32")))
    'float32[3]'
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, register_op

# NOTE: op name -> (scipy.special's name, math's function).
SPECIAL_FUNCTIONS: dict[str, tuple[str, Callable[[float], float]]] = {
    "erf": ("erf", math.erf),
    "erfc": ("erfc", math.erfc),
    "gamma": ("gamma", math.gamma),
    "lgamma": ("gammaln", math.lgamma),
}


def scipy_special() -> Any:
    """`scipy.special` when SciPy is importable, else None."""
    try:
        return importlib.import_module("scipy.special")
    except ImportError:
        return None


def _result_dtype(x: Any) -> np.dtype[Any]:
    dtype = np.dtype(x.dtype if isinstance(x, ArrayMeta) else np.asarray(x).dtype)
    if isinstance(x, ScalarMeta):
        dtype = np.dtype(x.type)
    if dtype.kind == "c":
        raise TypeError("complex arguments of special functions are not supported yet")
    return np.dtype(np.float32) if dtype == np.float32 else np.dtype(np.float64)


def _meta(x: Any) -> ArrayMeta:
    shape = x.shape if isinstance(x, ArrayMeta) else ()
    return ArrayMeta(shape, _result_dtype(x))


def _library_value(function: Callable[[float], float], value: float) -> float:
    # math raises where SciPy gives inf or nan (poles, overflow): SciPy's values.
    try:
        return function(value)
    except (ValueError, OverflowError):
        if function is math.lgamma:
            return math.inf
        if function is math.gamma:
            return math.inf if value == 0 or value > 0 else math.nan
        return math.nan


def _impl(name: str) -> Callable[[Any], Any]:
    scipy_name, function = SPECIAL_FUNCTIONS[name]

    def impl(x: Any) -> Any:
        special = scipy_special()
        if special is not None:
            return getattr(special, scipy_name)(x)
        array = np.asarray(x)
        dtype = _result_dtype(array)
        values = [_library_value(function, float(v)) for v in array.ravel()]
        result = np.array(values, dtype=dtype).reshape(array.shape)
        return result[()] if array.ndim == 0 else result

    return impl


erf = register_op(Op("erf", OpKind.POINTWISE, _meta, _impl("erf")))
erfc = register_op(Op("erfc", OpKind.POINTWISE, _meta, _impl("erfc")))
gamma = register_op(Op("gamma", OpKind.POINTWISE, _meta, _impl("gamma")))
lgamma = register_op(Op("lgamma", OpKind.POINTWISE, _meta, _impl("lgamma")))
