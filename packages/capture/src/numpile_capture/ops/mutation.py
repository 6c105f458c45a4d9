"""Mutation ops: in-place ufuncs (`x += y`), basic-index assignment (`x[1:3] = v`), fill, copyto.

Each writes its input 0 (`mutates=(0,)`) and returns that same array, so the
eager backend reproduces NumPy's in-place effects exactly, through views
too. An in-place ufunc op is named after its ufunc with a trailing
underscore (`add_`, `matmul_`) and keeps NumPy's checks: the result must
cast to the target with casting='same_kind' (NumPy's UFuncTypeError
otherwise) and must not broadcast the target to a larger shape.

    >>> from numpile_capture import ArrayMeta, get_op
    >>> get_op("add_").mutates
    (0,)
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..meta import ArrayMeta
from ..op import Op, OpKind, get_op, register_op
from ._probes import is_static_shape, probe, shaped_probe
from ._shapes import broadcast_shapes
from .pointwise import UFUNC_NAMES, ufunc_errors
from .view import BasicIndex, _getitem_meta


def format_shape(shape: tuple[Any, ...]) -> str:
    """A shape as NumPy writes it in error messages.

    >>> format_shape((3,))
    '(3,)'
    """
    inner = ",".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def check_target_shape(target: ArrayMeta, value: Any) -> None:
    if not isinstance(value, ArrayMeta):
        return
    shape = broadcast_shapes(target.shape, value.shape)
    if shape != target.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {format_shape(target.shape)} "
            f"doesn't match the broadcast shape {format_shape(shape)}"
        )


def inplace_op(ufunc_name: str) -> Op:
    """The in-place op of a binary ufunc (`x += y` is `add_(x, y)`).

    >>> inplace_op("add").name
    'add_'
    """
    return get_op(f"{ufunc_name}_")


def _inplace_meta(ufunc: np.ufunc) -> Callable[..., ArrayMeta]:
    def meta(x: ArrayMeta, y: Any) -> ArrayMeta:
        target = np.zeros((0,), dtype=x.dtype)
        with np.errstate(all="ignore"):
            ufunc(target, probe(y), out=target)  # NumPy's casting and overflow errors
        negative = isinstance(y, int | np.integer) and not isinstance(y, bool) and y < 0
        if ufunc is np.power and x.dtype.kind in "iu" and negative:
            raise ValueError("Integers to negative integer powers are not allowed.")
        check_target_shape(x, y)
        return x

    return meta


# In-place operators NumPy implements in C as `ufunc(x, y, out=x)`: as impls they add no
# Python frame, so NumPy's warnings name the line that called them (see SourceLine).
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.iadd,
    "subtract": operator.isub,
    "multiply": operator.imul,
    "divide": operator.itruediv,
    "floor_divide": operator.ifloordiv,
    "remainder": operator.imod,
    "power": operator.ipow,
    "bitwise_and": operator.iand,
    "bitwise_or": operator.ior,
    "bitwise_xor": operator.ixor,
    "left_shift": operator.ilshift,
    "right_shift": operator.irshift,
}


def _inplace_impl(ufunc: np.ufunc) -> Callable[..., Any]:
    in_c = _OPERATORS.get(ufunc.__name__)
    if in_c is not None:
        return in_c

    def impl(x: Any, y: Any) -> Any:
        ufunc(x, y, out=x)
        return x

    return impl


for _name in UFUNC_NAMES:
    _ufunc = getattr(np, _name)
    if _ufunc.nin == 2:
        register_op(
            Op(
                f"{_ufunc.__name__}_",
                OpKind.MUTATION,
                _inplace_meta(_ufunc),
                _inplace_impl(_ufunc),
                mutates=(0,),
                **ufunc_errors(_ufunc),
            )
        )


def _matmul_inplace_meta(x: ArrayMeta, y: Any) -> ArrayMeta:
    result = get_op("matmul").meta(x, y)
    assert isinstance(result, ArrayMeta)
    target = np.zeros((1,) * x.ndim, dtype=x.dtype)
    np.matmul(target, np.zeros((1,) * y.ndim, dtype=y.dtype), out=target)
    if result.shape != x.shape:
        if is_static_shape(x) and x.numel <= 1 << 16:
            np.matmul(shaped_probe(x), shaped_probe(y), out=np.empty(x.shape, x.dtype))
        raise ValueError(
            f"matmul: output shape {format_shape(x.shape)} does not match "
            f"{format_shape(result.shape)}"
        )
    return x


def _matmul_inplace_impl(x: Any, y: Any) -> Any:
    np.matmul(x, y, out=x)
    return x


matmul_ = register_op(
    Op("matmul_", OpKind.MUTATION, _matmul_inplace_meta, _matmul_inplace_impl, mutates=(0,))
)


def check_assignment(target: ArrayMeta, value: Any) -> None:
    """Raise what NumPy raises when `value` is assigned into an array region shaped `target`.

    >>> check_assignment(ArrayMeta((2,), "int8"), 300)
    Traceback (most recent call last):
    OverflowError: Python integer 300 out of bounds for int8
    """
    cell = np.zeros((), dtype=target.dtype)
    sample = np.zeros((), dtype=value.dtype) if isinstance(value, ArrayMeta) else probe(value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cell[...] = sample
    if not isinstance(value, ArrayMeta):
        return
    static = is_static_shape(target, value)
    try:
        fits = broadcast_shapes(target.shape, value.shape) == target.shape
    except ValueError:
        fits = False
    if not fits and static:
        raise ValueError(
            f"could not broadcast input array from shape {format_shape(value.shape)} "
            f"into shape {format_shape(target.shape)}"
        )
    if not fits:
        raise ValueError(f"cannot assign shape {value.shape} into shape {target.shape}")


def _setitem_meta(x: ArrayMeta, value: Any, *, index: BasicIndex) -> ArrayMeta:
    # The result is `x`, with the start of the view the store writes (`ArrayMeta.starts`,
    # None unless `x` has a symbolic size): a lowering of the store reads it.
    view = _getitem_meta(x, index=index)
    check_assignment(view, value)
    return x if x.starts is view.starts else attrs.evolve(x, starts=view.starts)


def _setitem_impl(x: Any, value: Any, *, index: BasicIndex) -> Any:
    x[index] = value
    return x


setitem = register_op(Op("setitem", OpKind.MUTATION, _setitem_meta, _setitem_impl, mutates=(0,)))


def _fill_meta(x: ArrayMeta, value: Any) -> ArrayMeta:
    check_assignment(ArrayMeta((), x.dtype), value)
    return x


def _fill_impl(x: Any, value: Any) -> Any:
    x.fill(value)
    return x


fill = register_op(Op("fill", OpKind.MUTATION, _fill_meta, _fill_impl, mutates=(0,)))


def _copyto_meta(dst: ArrayMeta, src: Any, *, casting: Any = "same_kind") -> ArrayMeta:
    np.copyto(np.zeros((0,), dtype=dst.dtype), probe(src), casting=casting)
    check_assignment(dst, src)
    return dst


def _copyto_impl(dst: Any, src: Any, *, casting: Any = "same_kind") -> Any:
    np.copyto(dst, src, casting=casting)
    return dst


copyto = register_op(Op("copyto", OpKind.MUTATION, _copyto_meta, _copyto_impl, mutates=(0,)))
