"""Advanced indexing: `index` (x[int_array], x[mask]) and its assignment `index_put` (x[mask] = v).

The index is a static template (`index` param): ints, slices, None, and
`IndexArray(i)` slots that stand for the i-th array input after the
indexed array (and the value, for `index_put`). The result shape follows
NumPy's rules: integer arrays (and ints, once any array is present)
broadcast together; their dims go where the first of them is when they are
adjacent, else first. A boolean mask's result length depends on the data:
it is a size symbol named by the `nnz` param (an unbacked size).

    >>> from numpile_capture import ArrayMeta, get_op
    >>> x = ArrayMeta((5, 3), "float32")
    >>> str(get_op("index").meta(x, ArrayMeta((4,), "int64"), index=(IndexArray(0),)))
    'float32[4, 3]'
"""

from __future__ import annotations

from typing import Any

import attrs

from ..meta import ArrayMeta
from ..op import Op, OpKind, RaisesWhen, register_op
from ._shapes import broadcast_shapes, symbolic_slice_length, unbacked_size
from .mutation import check_assignment


@attrs.frozen(repr=False)
class IndexArray:
    """A slot of an index template standing for the `position`-th index array input.

    >>> IndexArray(0)
    arrays[0]
    """

    position: int

    def __repr__(self) -> str:
        return f"arrays[{self.position}]"


IndexTemplate = tuple[Any, ...]


def advanced_index_shape(
    x: ArrayMeta, arrays: tuple[ArrayMeta, ...], index: IndexTemplate, nnz: str | None
) -> tuple[Any, ...]:
    """The shape of `x[index]` with `arrays` in its `IndexArray` slots (NumPy's rules).

    >>> advanced_index_shape(
    ...     ArrayMeta((5, 3, 4), "f8"),
    ...     (ArrayMeta((2,), "i8"),),
    ...     (0, slice(None), IndexArray(0)),
    ...     None,
    ... )
    (2, 3)
    """
    consumed = sum(
        arrays[item.position].ndim if _is_mask(item, arrays) else 1
        for item in index
        if item is not None
    )
    if consumed > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, "
            f"but {consumed} were indexed"
        )
    basic: list[Any] = []
    advanced_shapes: list[tuple[Any, ...]] = []
    advanced_at: list[int] = []
    axis = 0
    for item in index:
        if item is None:
            basic.append(1)
            continue
        if isinstance(item, slice):
            size = x.shape[axis]
            basic.append(symbolic_slice_length(size, item))
            axis += 1
            continue
        advanced_at.append(len(basic))
        if isinstance(item, IndexArray):
            meta = arrays[item.position]
            if meta.dtype.kind == "b":
                advanced_shapes.append((_check_mask(x, axis, meta, nnz),))
                axis += meta.ndim
                continue
            if meta.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            advanced_shapes.append(meta.shape)
        else:
            size = x.shape[axis]
            if isinstance(size, int) and not -size <= item < size:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size {size}")
            advanced_shapes.append(())
        axis += 1
    broadcast = broadcast_shapes(*advanced_shapes)
    rest = tuple(x.shape[axis:])
    adjacent = all(b == advanced_at[0] for b in advanced_at)
    insert_at = advanced_at[0] if adjacent and advanced_at else 0
    return (*basic[:insert_at], *broadcast, *basic[insert_at:], *rest)


def _is_mask(item: Any, arrays: tuple[ArrayMeta, ...]) -> bool:
    return isinstance(item, IndexArray) and arrays[item.position].dtype.kind == "b"


def _check_mask(x: ArrayMeta, axis: int, mask: ArrayMeta, nnz: str | None) -> Any:
    for offset, dim in enumerate(mask.shape):
        size = x.shape[axis + offset]
        if isinstance(size, int) and isinstance(dim, int) and size != dim:
            raise IndexError(
                f"boolean index did not match indexed array along axis {axis + offset}; "
                f"size of axis is {size} but size of corresponding boolean axis is {dim}"
            )
    if nnz is None:
        raise ValueError("a boolean mask index needs an `nnz` size symbol name")
    return unbacked_size(nnz, 0, mask.numel)


def _concrete_index(index: IndexTemplate, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(arrays[item.position] if isinstance(item, IndexArray) else item for item in index)


def _index_meta(
    x: ArrayMeta, *arrays: ArrayMeta, index: IndexTemplate, nnz: str | None = None
) -> ArrayMeta:
    shape = advanced_index_shape(x, arrays, index, nnz)
    return ArrayMeta(shape, x.dtype, None, x.device)


def _index_impl(x: Any, *arrays: Any, index: IndexTemplate, nnz: str | None = None) -> Any:
    return x[_concrete_index(index, arrays)]


_OUT_OF_BOUNDS = "IndexError (an integer index out of bounds)"

index = register_op(
    Op(
        "index",
        OpKind.INDEXING,
        _index_meta,
        _index_impl,
        run_time_error=_OUT_OF_BOUNDS,
        raises_when=RaisesWhen.INTEGER_INDEX,
    )
)


def _index_put_meta(
    x: ArrayMeta, value: Any, *arrays: ArrayMeta, index: IndexTemplate, nnz: str | None = None
) -> ArrayMeta:
    shape = advanced_index_shape(x, arrays, index, nnz or "nnz")
    if isinstance(value, ArrayMeta) and not all(isinstance(d, int) for d in shape):
        check_assignment(ArrayMeta((), x.dtype), ArrayMeta((), value.dtype))
        if broadcast_shapes(shape, value.shape) != shape:
            raise ValueError(f"cannot assign shape {value.shape} into shape {shape}")
    else:
        check_assignment(ArrayMeta(shape, x.dtype), value)
    return x


def _index_put_impl(
    x: Any, value: Any, *arrays: Any, index: IndexTemplate, nnz: str | None = None
) -> Any:
    x[_concrete_index(index, arrays)] = value
    return x


index_put = register_op(
    Op(
        "index_put",
        OpKind.MUTATION,
        _index_put_meta,
        _index_put_impl,
        mutates=(0,),
        run_time_error=_OUT_OF_BOUNDS,
        raises_when=RaisesWhen.INTEGER_INDEX,
    )
)
