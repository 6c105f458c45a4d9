"""Creation ops: fresh arrays from static params (zeros, arange, eye, ...) or shaped like an input.

Shapes are static params: tuples of ints where a size is `ScalarSlot(k)` when it is
symbolic (`np.zeros(x.shape[0])` of a dynamic size): the k-th int input after the
fill value computes it at run time and the slot's `expr` is what the meta rule sees, so
one graph serves every size. `arange`'s int `start` and `stop` may be slots too
(`np.arange(n)` of a run-time `n`); its `step` is a static int. `dtype` params are NumPy
dtypes or None for NumPy's default.
The `*_like` ops keep the prototype's layout as NumPy's order='K' does. `array` holds a
small constant (a Python list written in the program) as nested tuples.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> str(get_op("arange").meta(start=0, stop=5, step=2, dtype=None))
    'int64[3]'
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, register_op
from ._probes import probe, result_dtype
from ._shapes import is_c_contiguous, k_order_strides, strides_of
from .loop_values import ScalarSlot


def normalize_shape(shape: Any) -> tuple[Any, ...]:
    """A shape argument (an int or a sequence of ints) as a tuple; NumPy's errors for bad ones.

    >>> normalize_shape(3)
    (3,)
    """
    items = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    result = tuple(d if hasattr(d, "free_symbols") else operator.index(d) for d in items)
    if any(isinstance(d, int) and d < 0 for d in result):
        raise ValueError("negative dimensions are not allowed")
    return result


def filled_shape(shape: Any, sizes: tuple[Any, ...]) -> Any:
    """`shape` with each `ScalarSlot` replaced: by its `expr` when `sizes` are metas (the meta
    rule), by the int of its input otherwise (run time).

    >>> filled_shape((ScalarSlot(0), 3), (5,))
    (5, 3)
    """
    if isinstance(shape, ScalarSlot):
        size = sizes[shape.position]
        return shape.expr if isinstance(size, ScalarMeta) else operator.index(size)
    if isinstance(shape, tuple):
        return tuple(filled_shape(item, sizes) for item in shape)
    return shape


def _filled_meta(
    default: Callable[..., Any],
) -> Callable[..., ArrayMeta]:
    def meta(*sizes: Any, shape: tuple[Any, ...], dtype: Any = None) -> ArrayMeta:
        shape = filled_shape(shape, sizes)
        return ArrayMeta(normalize_shape(shape), result_dtype(default, (0,), dtype))

    return meta


def _filled_impl(function: Callable[..., Any]) -> Callable[..., Any]:
    def impl(*sizes: Any, shape: tuple[Any, ...], dtype: Any = None) -> Any:
        return function(filled_shape(shape, sizes), dtype)

    return impl


for _name, _function in (("zeros", np.zeros), ("ones", np.ones), ("empty", np.empty)):
    register_op(Op(_name, OpKind.CREATION, _filled_meta(_function), _filled_impl(_function)))


def _full_meta(
    fill_value: Any, *sizes: Any, shape: tuple[Any, ...], dtype: Any = None
) -> ArrayMeta:
    out_dtype = result_dtype(np.full, (0,), probe(fill_value), dtype)
    return ArrayMeta(normalize_shape(filled_shape(shape, sizes)), out_dtype)


def _full_impl(fill_value: Any, *sizes: Any, shape: tuple[Any, ...], dtype: Any = None) -> Any:
    return np.full(filled_shape(shape, sizes), fill_value, dtype)


full = register_op(Op("full", OpKind.CREATION, _full_meta, _full_impl))


def arange_length(start: Any, stop: Any, step: Any) -> int:
    """The number of elements np.arange(start, stop, step) produces.

    >>> arange_length(0, 1, 0.1)
    10
    """
    if step == 0:
        raise ZeroDivisionError("division by zero")
    if all(isinstance(v, int | np.integer) for v in (start, stop, step)):
        return max(0, -((int(start) - int(stop)) // int(step)))
    return max(0, math.ceil((float(stop) - float(start)) / float(step)))


def _arange_meta(*sizes: Any, start: Any, stop: Any, step: Any, dtype: Any = None) -> ArrayMeta:
    start, stop = filled_shape(start, sizes), filled_shape(stop, sizes)
    if _is_symbolic(start) or _is_symbolic(stop):
        length = symbolic_arange_length(start, stop, step)
        start, stop = (1 if _is_symbolic(v) else v for v in (start, stop))  # ints: the dtype
    else:
        length = arange_length(start, stop, step)
    out_dtype = result_dtype(np.arange, start, start, step, dtype=dtype)
    if dtype is None:
        out_dtype = np.result_type(out_dtype, result_dtype(np.arange, stop, stop, step))
    shape: tuple[Any, ...] = (length,)
    return ArrayMeta(shape, out_dtype)


def _is_symbolic(value: Any) -> bool:
    return hasattr(value, "free_symbols")


def symbolic_arange_length(start: Any, stop: Any, step: int) -> Any:
    """The length of `np.arange(start, stop, step)` with a symbolic bound and an int step:
    whether it is empty is a guarded branch, as a slice's clamps are.

    >>> symbolic_arange_length(0, 5, 2)
    3
    """
    import sympy

    from ..dynamic_shapes import active_shape_env

    if step == 0:
        raise ZeroDivisionError("division by zero")
    env = active_shape_env()
    if env is None:
        return arange_length(start, stop, step)
    span = stop - start if step > 0 else start - stop
    if not env.evaluate(sympy.Gt(span, 0), reason="arange length"):
        return 0
    stride = abs(step)
    length = env.simplify(
        sympy.sympify(span)
        if stride == 1
        else sympy.floor((span + stride - 1) / sympy.Integer(stride))
    )
    return int(length) if length.is_Integer else length


def _arange_impl(*sizes: Any, start: Any, stop: Any, step: Any, dtype: Any = None) -> Any:
    return np.arange(filled_shape(start, sizes), filled_shape(stop, sizes), step, dtype=dtype)


arange = register_op(Op("arange", OpKind.CREATION, _arange_meta, _arange_impl))


def _linspace_meta(
    *, start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None
) -> ArrayMeta:
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    out_dtype = result_dtype(np.linspace, start, stop, 2, endpoint=endpoint, dtype=dtype)
    shape: tuple[Any, ...] = (num,)
    return ArrayMeta(shape, out_dtype)


def _linspace_impl(
    *, start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None
) -> Any:
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


linspace = register_op(Op("linspace", OpKind.CREATION, _linspace_meta, _linspace_impl))


def _eye_meta(*, n: int, m: int | None = None, k: int = 0, dtype: Any = None) -> ArrayMeta:
    shape = normalize_shape((n, n if m is None else m))
    operator.index(k)
    return ArrayMeta(shape, result_dtype(np.eye, 0, dtype=dtype))


def _eye_impl(*, n: int, m: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    return np.eye(n, m, k, dtype=dtype)


eye = register_op(Op("eye", OpKind.CREATION, _eye_meta, _eye_impl))


def _like_layout(x: ArrayMeta, shape: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    if shape is not None or is_c_contiguous(x):
        return None
    return k_order_strides(x.shape, strides_of(x))


def _like_meta(function: Callable[..., Any]) -> Callable[..., ArrayMeta]:
    def meta(x: ArrayMeta, *, dtype: Any = None, shape: tuple[Any, ...] | None = None) -> ArrayMeta:
        out_dtype = result_dtype(function, probe(x), dtype=dtype)
        out_shape = x.shape if shape is None else normalize_shape(shape)
        return ArrayMeta(out_shape, out_dtype, _like_layout(x, shape), x.device)

    return meta


def _like_impl(function: Callable[..., Any]) -> Callable[..., Any]:
    def impl(x: Any, *, dtype: Any = None, shape: tuple[Any, ...] | None = None) -> Any:
        return function(x, dtype=dtype, shape=shape)

    return impl


for _name, _like_function in (
    ("zeros_like", np.zeros_like),
    ("ones_like", np.ones_like),
    ("empty_like", np.empty_like),
):
    register_op(Op(_name, OpKind.CREATION, _like_meta(_like_function), _like_impl(_like_function)))


def _full_like_meta(
    x: ArrayMeta, fill_value: Any, *, dtype: Any = None, shape: tuple[Any, ...] | None = None
) -> ArrayMeta:
    out_dtype = result_dtype(np.full_like, probe(x), probe(fill_value), dtype=dtype)
    out_shape = x.shape if shape is None else normalize_shape(shape)
    return ArrayMeta(out_shape, out_dtype, _like_layout(x, shape), x.device)


def _full_like_impl(
    x: Any, fill_value: Any, *, dtype: Any = None, shape: tuple[Any, ...] | None = None
) -> Any:
    return np.full_like(x, fill_value, dtype=dtype, shape=shape)


full_like = register_op(Op("full_like", OpKind.CREATION, _full_like_meta, _full_like_impl))


def _array_meta(*, value: Any, dtype: Any = None) -> ArrayMeta:
    constant = np.array(value, dtype=dtype)
    return ArrayMeta(constant.shape, constant.dtype)


def _array_impl(*, value: Any, dtype: Any = None) -> Any:
    return np.array(value, dtype=dtype)


array = register_op(Op("array", OpKind.CREATION, _array_meta, _array_impl))
