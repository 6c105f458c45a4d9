"""View ops: results that alias their first input (reshape, transpose, basic indexing, ...).

Every meta rule gives the element strides of the view, computed from the
input's strides (`None`, a fresh array, counts as C-contiguous): transpose
permutes them, slicing multiplies them by the step, broadcasting and new
axes give 0, a reshape that NumPy can do without a copy keeps them
consistent. `reshape` is a view only when NumPy would not copy; the bindings
emit a `copy` first otherwise (see `reshape_strides`).

    >>> from numpile_capture import ArrayMeta, get_op
    >>> m = get_op("transpose").meta(ArrayMeta((2, 3), "float32"), axes=(1, 0))
    >>> m.shape, m.strides
    ((3, 2), (1, 3))
"""

from __future__ import annotations

import math
import operator
from typing import Any

import attrs
import numpy as np

from ..meta import ArrayMeta
from ..op import Op, OpKind, register_op
from ._probes import is_static_shape, shaped_probe
from ._shapes import (
    canonical_strides,
    check_symbolic_index,
    normalize_axes,
    normalize_axis,
    reshape_strides,
    resolved_shape,
    strides_of,
    symbolic_quotient,
    symbolic_slice,
)

BasicIndex = tuple[Any, ...]


def _view(shape: tuple[Any, ...], dtype: Any, strides: tuple[Any, ...], device: str) -> ArrayMeta:
    return ArrayMeta(shape, dtype, canonical_strides(shape, tuple(strides)), device)


# --- reshape -------------------------------------------------------------------------------


def infer_reshape(shape: tuple[Any, ...], new_shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """`new_shape` with its one `-1` resolved against `shape`; NumPy's ValueError if impossible.

    >>> infer_reshape((2, 3), (-1, 2))
    (3, 2)
    """
    new_shape = tuple(
        operator.index(d) if isinstance(d, int | np.integer) else d for d in new_shape
    )
    shape = resolved_shape(shape)
    unknown = [i for i, d in enumerate(new_shape) if isinstance(d, int) and d < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if not is_static_shape(ArrayMeta(shape, "b"), ArrayMeta(new_shape, "b")):
        if not unknown:
            return new_shape
        if new_shape[unknown[0]] != -1:
            raise ValueError(f"cannot reshape array of size {math.prod(shape)} into {new_shape}")
        quotient = symbolic_quotient(
            math.prod(shape), math.prod(d for i, d in enumerate(new_shape) if i != unknown[0])
        )
        return tuple(quotient if i == unknown[0] else d for i, d in enumerate(new_shape))
    numel = math.prod(shape)
    known = math.prod(d for d in new_shape if d >= 0)
    resolved = new_shape
    if unknown and new_shape[unknown[0]] == -1 and known != 0 and numel % known == 0:
        resolved = tuple(numel // known if d == -1 else d for d in new_shape)
    if all(d >= 0 for d in resolved) and math.prod(resolved) == numel:
        return resolved
    np.broadcast_to(np.zeros(()), shape).reshape(new_shape)  # raises NumPy's own error
    raise ValueError(f"cannot reshape array of size {numel} into shape {new_shape}")


def _reshape_meta(x: ArrayMeta, *, shape: tuple[Any, ...]) -> ArrayMeta:
    resolved = infer_reshape(x.shape, shape)
    strides = reshape_strides(x.shape, strides_of(x), resolved)
    if strides is None:
        return ArrayMeta(resolved, x.dtype, None, x.device)
    return _view(resolved, x.dtype, strides, x.device)


def _reshape_impl(x: Any, *, shape: tuple[Any, ...]) -> Any:
    # A symbolic size (at most one; see `symbolic_params`) is the -1 NumPy infers again.
    if not all(isinstance(d, int) for d in shape):
        shape = tuple(d if isinstance(d, int) else -1 for d in shape)
    return np.reshape(x, shape)


reshape = register_op(Op("reshape", OpKind.VIEW, _reshape_meta, _reshape_impl))


# --- axis permutations and insertions ------------------------------------------------------


def normalize_transpose_axes(axes: Any, ndim: int) -> tuple[int, ...]:
    """`axes` of np.transpose as a permutation (None reverses); NumPy's errors otherwise.

    >>> normalize_transpose_axes((-1, 0), 2)
    (1, 0)
    """
    if axes is None:
        return tuple(reversed(range(ndim)))
    items = tuple(axes)
    if len(items) != ndim:
        raise ValueError("axes don't match array")
    return normalize_axes(items, ndim, what="repeated axis in transpose")


def _transpose_meta(x: ArrayMeta, *, axes: tuple[int, ...]) -> ArrayMeta:
    perm = normalize_transpose_axes(axes, x.ndim)
    strides = strides_of(x)
    return _view(
        tuple(x.shape[a] for a in perm), x.dtype, tuple(strides[a] for a in perm), x.device
    )


def _transpose_impl(x: Any, *, axes: tuple[int, ...]) -> Any:
    return np.transpose(x, axes)


transpose = register_op(Op("transpose", OpKind.VIEW, _transpose_meta, _transpose_impl))


def _expand_dims_meta(x: ArrayMeta, *, axis: tuple[int, ...]) -> ArrayMeta:
    out_ndim = x.ndim + len(axis)
    axes = normalize_axes(axis, out_ndim, what="repeated axis")
    rest = iter(zip(x.shape, strides_of(x), strict=True))
    shape: list[Any] = []
    strides: list[Any] = []
    for i in range(out_ndim):
        dim, stride = (1, 0) if i in axes else next(rest)
        shape.append(dim)
        strides.append(stride)
    return _view(tuple(shape), x.dtype, tuple(strides), x.device)


def _expand_dims_impl(x: Any, *, axis: tuple[int, ...]) -> Any:
    return np.expand_dims(x, axis)


expand_dims = register_op(Op("expand_dims", OpKind.VIEW, _expand_dims_meta, _expand_dims_impl))


def _squeeze_meta(x: ArrayMeta, *, axis: tuple[int, ...] | None = None) -> ArrayMeta:
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes(axis, x.ndim)
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    keep = [i for i in range(x.ndim) if i not in axes]
    strides = strides_of(x)
    return _view(
        tuple(x.shape[i] for i in keep), x.dtype, tuple(strides[i] for i in keep), x.device
    )


def _squeeze_impl(x: Any, *, axis: tuple[int, ...] | None = None) -> Any:
    return np.squeeze(x, axis)


squeeze = register_op(Op("squeeze", OpKind.VIEW, _squeeze_meta, _squeeze_impl))


def _broadcast_to_meta(
    x: ArrayMeta, *, shape: tuple[Any, ...], writeable: bool = False
) -> ArrayMeta:
    lead = len(shape) - x.ndim
    valid = lead >= 0 and all(not (isinstance(d, int) and d < 0) for d in shape)
    valid = valid and all(d in (1, shape[lead + i]) for i, d in enumerate(x.shape))
    if not valid:
        if is_static_shape(x) and all(isinstance(d, int) for d in shape):
            np.broadcast_to(shaped_probe(x), shape)  # raises NumPy's own error
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    strides: list[Any] = [0] * lead
    for i, (dim, stride) in enumerate(zip(x.shape, strides_of(x), strict=True)):
        strides.append(0 if dim == 1 and shape[lead + i] != 1 else stride)
    return _view(tuple(shape), x.dtype, tuple(strides), x.device)


def _broadcast_to_impl(x: Any, *, shape: tuple[Any, ...], writeable: bool = False) -> Any:
    if not writeable:
        return np.broadcast_to(x, shape)
    # `np.broadcast_arrays`' own views: writeable, warning on write (NumPy 2). A dummy of
    # another shape (0-d when `x` has the target shape) makes NumPy build a view of `x`.
    dummy_shape = () if tuple(np.shape(x)) == tuple(shape) else tuple(shape)
    dummy = np.broadcast_to(np.empty((), dtype=bool), dummy_shape)
    return np.broadcast_arrays(x, dummy)[0]


broadcast_to = register_op(
    Op("broadcast_to", OpKind.VIEW, _broadcast_to_meta, _broadcast_to_impl, read_only=True)
)


# --- basic indexing ------------------------------------------------------------------------


def normalize_index(index: tuple[Any, ...], shape: tuple[Any, ...]) -> BasicIndex:
    """A basic index (ints, slices, None, one Ellipsis) with the Ellipsis expanded.

    Negative ints against static sizes become non-negative; NumPy's IndexError
    for out-of-bounds ints and too many indices.

    >>> normalize_index((Ellipsis, -1), (2, 3))
    (slice(None, None, None), 2)
    """
    if sum(1 for item in index if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, "
            f"but {consumed} were indexed"
        )
    result: list[Any] = []
    axis = 0
    for item in index:
        if item is Ellipsis:
            # NOTE: an Ellipsis that stands for no dims still matters: x[0, ...] is a 0-d view,
            # x[0] a scalar copy; it is kept then.
            result.extend(slice(None) for _ in range(len(shape) - consumed))
            if len(shape) == consumed:
                result.append(Ellipsis)
            axis += len(shape) - consumed
        elif item is None:
            result.append(None)
        elif isinstance(item, slice):
            if item.step is not None and operator.index(item.step) == 0:
                raise ValueError("slice step cannot be zero")
            result.append(item)
            axis += 1
        else:
            value = operator.index(item)
            size = shape[axis]
            if isinstance(size, int):
                if not -size <= value < size:
                    raise IndexError(
                        f"index {value} is out of bounds for axis {axis} with size {size}"
                    )
                value %= size
            result.append(value)
            axis += 1
    return tuple(result)


def _getitem_meta(x: ArrayMeta, *, index: BasicIndex) -> ArrayMeta:
    items = normalize_index(index, x.shape)
    in_strides = strides_of(x)
    shape: list[Any] = []
    strides: list[Any] = []
    starts: list[Any] = []  # per input axis, where the view starts (see ArrayMeta.starts)
    axis = 0
    for item in items:
        if item is Ellipsis:
            continue
        if item is None:
            shape.append(1)
            strides.append(0)
            continue
        size, stride = x.shape[axis], in_strides[axis]
        axis += 1
        if not isinstance(item, slice):
            check_symbolic_index(size, item)
            starts.append(item if item >= 0 else size + item)
            continue
        if isinstance(size, int):
            start, stop, step = item.indices(size)
            shape.append(len(range(start, stop, step)))
            strides.append(stride * step)
            starts.append(start)
        elif item.start is None and item.stop is None and item.step in (None, 1):
            shape.append(size)
            strides.append(stride)
            starts.append(0)
        else:
            start, length = _slice_span(size, item)
            shape.append(length)
            strides.append(stride * (1 if item.step is None else item.step))
            starts.append(start)
    shape.extend(x.shape[axis:])
    strides.extend(in_strides[axis:])
    meta = _view(tuple(shape), x.dtype, tuple(strides), x.device)
    if all(isinstance(size, int) for size in x.shape):
        return meta  # the stride probe finds a static view's start
    starts.extend(0 for _ in x.shape[axis:])
    return attrs.evolve(meta, starts=tuple(starts))


def _slice_span(size: Any, item: slice) -> tuple[Any, Any]:
    # Where a slice of a symbolic size starts and its length. A length that depends on a
    # loop index (`x[i:][::-1]`) is simplified under the index's bounds, never guarded;
    # other symbolic sizes guard the branches they take.
    # Late import: loop_index reads the capture's shape environment.
    from ..dynamic_shapes import active_shape_env
    from ..loop_index import mentions_loop_symbol, slice_span

    if not mentions_loop_symbol((size,)):
        return symbolic_slice(size, item)
    step = 1 if item.step is None else operator.index(item.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start, stop = (None if v is None else operator.index(v) for v in (item.start, item.stop))
    return slice_span(size, start, stop, step, active_shape_env())


def _getitem_impl(x: Any, *, index: BasicIndex) -> Any:
    return x[index]


getitem = register_op(Op("getitem", OpKind.VIEW, _getitem_meta, _getitem_impl))


def is_element_index(index: BasicIndex, ndim: int) -> bool:
    """Whether a normalized basic index picks one element (NumPy returns a scalar copy then).

    >>> is_element_index((1, 2), 2), is_element_index((1, Ellipsis), 1)
    (True, False)
    """
    return len(index) == ndim and all(isinstance(item, int) for item in index)


def _element_meta(x: ArrayMeta, *, index: BasicIndex) -> ArrayMeta:
    normalize_index(index, x.shape)
    if not is_element_index(index, x.ndim):
        raise ValueError(f"element needs one int per dimension, got {index}")
    return ArrayMeta((), x.dtype, None, x.device)


# NOTE: not a VIEW: NumPy returns a fresh scalar for x[i, j] on a 2-d array.
element = register_op(Op("element", OpKind.INDEXING, _element_meta, _getitem_impl))


# --- diagonals -----------------------------------------------------------------------------


def _diagonal_meta(x: ArrayMeta, *, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ArrayMeta:
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    first = normalize_axis(axis1, x.ndim)
    second = normalize_axis(axis2, x.ndim)
    if first == second:
        raise ValueError("axis1 and axis2 cannot be the same")
    rows, cols = x.shape[first], x.shape[second]
    if not (isinstance(rows, int) and isinstance(cols, int)):
        raise NotImplementedError("the diagonal of symbolic sizes waits for issue 6")
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    strides = strides_of(x)
    keep = [i for i in range(x.ndim) if i not in (first, second)]
    shape = (*(x.shape[i] for i in keep), length)
    return _view(
        shape, x.dtype, (*(strides[i] for i in keep), strides[first] + strides[second]), x.device
    )


def _diagonal_impl(x: Any, *, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return np.diagonal(x, offset, axis1, axis2)


diagonal = register_op(Op("diagonal", OpKind.VIEW, _diagonal_meta, _diagonal_impl, read_only=True))


# --- a new view of the whole array ---------------------------------------------------------


def _alias_meta(x: ArrayMeta) -> ArrayMeta:
    return ArrayMeta(x.shape, x.dtype, x.strides, x.device)


def _alias_impl(x: Any) -> Any:
    return x.view()


# NOTE: `x.view()` and `x.view(x.dtype)`: a new array object over the same memory.
alias = register_op(Op("alias", OpKind.VIEW, _alias_meta, _alias_impl))


# --- complex parts -------------------------------------------------------------------------


def _part_meta(x: ArrayMeta, part: str) -> ArrayMeta:
    if x.dtype.kind != "c":
        if part == "imag":
            raise TypeError(f"the imag view needs a complex array, not {x.dtype.name}")
        return _view(x.shape, x.dtype, strides_of(x), x.device)
    real_dtype = np.empty(0, dtype=x.dtype).real.dtype
    return _view(x.shape, real_dtype, tuple(2 * s for s in strides_of(x)), x.device)


def _real_meta(x: ArrayMeta) -> ArrayMeta:
    return _part_meta(x, "real")


def _imag_meta(x: ArrayMeta) -> ArrayMeta:
    return _part_meta(x, "imag")


real = register_op(Op("real", OpKind.VIEW, _real_meta, np.real))
imag = register_op(Op("imag", OpKind.VIEW, _imag_meta, np.imag))

__all__ = [
    "BasicIndex",
    "infer_reshape",
    "is_element_index",
    "normalize_axis",
    "normalize_index",
    "normalize_transpose_axes",
]
