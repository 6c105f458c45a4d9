"""Metadata of the values that flow through a graph.

An `ArrayMeta` describes an array without holding its data: shape, dtype,
element strides (when known) and device. A `ScalarMeta` describes a Python
scalar that reaches the graph as a weak-typed operand (NEP 50).

Shapes are tuples of `Dim`: plain ints for static sizes, sympy expressions
over size symbols once shapes are dynamic.

    >>> str(ArrayMeta((3, 4), np.dtype("float32")))
    'float32[3, 4]'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs
import numpy as np

from numpile_runtime import is_device_array

if TYPE_CHECKING:
    import sympy

Dim: TypeAlias = "int | sympy.Expr"
Shape: TypeAlias = "tuple[Dim, ...]"


def _to_dtype(value: Any) -> np.dtype[Any]:
    dtype: np.dtype[Any] = np.dtype(value)
    return dtype


@attrs.frozen
class ArrayMeta:
    """Shape, dtype, element strides and device of an array value.

    `strides` are in elements, not bytes; `None` means the op produces a fresh
    array in NumPy's default (C-contiguous) layout or the layout is not tracked.
    `starts`: for a basic-index view (`getitem`) of an input of symbolic shape, the index
    of the input where the view starts, per input axis, with each slice bound clamped as
    capture decided it (its guards keep it so); for a store into such a view (`setitem`,
    whose result is its target), where the view it writes starts; None otherwise. It does
    not take part in equality and prints with the node (`Node.format`), not here.
    """

    shape: tuple[Any, ...] = attrs.field(converter=tuple)
    dtype: np.dtype[Any] = attrs.field(converter=_to_dtype)
    strides: tuple[Any, ...] | None = None
    device: str = "cpu"
    starts: tuple[Any, ...] | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Any:
        return math.prod(self.shape) if self.shape else 1

    def with_dtype(self, dtype: Any) -> ArrayMeta:
        return attrs.evolve(self, dtype=np.dtype(dtype))

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        text = f"{self.dtype.name}[{dims}]"
        if self.strides is not None and self.strides != contiguous_strides(self.shape):
            text += "{" + ", ".join(str(s) for s in self.strides) + "}"
        if self.device != "cpu":
            text += f"@{self.device}"
        return text


@attrs.frozen
class ScalarMeta:
    """A Python scalar (bool, int, float or complex) used as a weak operand."""

    type: type

    def __str__(self) -> str:
        return self.type.__name__


Meta: TypeAlias = "ArrayMeta | ScalarMeta"


def contiguous_strides(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """Element strides of a C-contiguous array of `shape`.

    >>> contiguous_strides((2, 3, 4))
    (12, 4, 1)
    """
    strides: list[Any] = []
    step: Any = 1
    for dim in reversed(shape[1:]):
        strides.append(step)
        step = step * dim
    if shape:
        strides.append(step)  # the outermost size takes part in no stride
    return tuple(reversed(strides))


def k_order_axes(steps: Sequence[Sequence[int]], ndim: int) -> tuple[int, ...]:
    """The axes of an iteration over operands that step by `steps`, outermost first, in
    NumPy's memory order (order='K', `npyiter_find_best_axis_ordering`).

    `steps` holds one row per operand: its element step along each of the `ndim` axes (0
    where it does not move: a broadcast or size-1 axis). An insertion sort from the last
    axis out moves an axis inside another where every operand that moves along both steps
    less on it; C order wins ties and disagreements, so all-C operands keep C order.

    >>> k_order_axes([(1, 3)], 2)  # Fortran order: axis 0 innermost
    (1, 0)
    >>> k_order_axes([(4, 1), (1, 3)], 2)  # a C and a Fortran operand: C order
    (0, 1)
    """
    table = [tuple(abs(step) for step in row) for row in steps]
    order: list[int] = []  # innermost first
    for axis in reversed(range(ndim)):
        position = len(order)
        for earlier in reversed(range(len(order))):
            inside = _goes_inside(table, axis, order[earlier])
            if inside is None:
                continue
            if not inside:
                break
            position = earlier
        order.insert(position, axis)
    return tuple(reversed(order))


def _goes_inside(table: list[tuple[int, ...]], axis: int, inner: int) -> bool | None:
    # Whether `axis` goes inside `inner` (None: no operand moves along both, keep looking).
    # The first operand that moves along both decides a move; any of them may veto it.
    decided: bool | None = None
    for steps in table:
        if steps[axis] == 0 or steps[inner] == 0:
            continue
        if steps[inner] <= steps[axis]:
            decided = False
        elif decided is None:
            decided = True
    return decided


def laid_out_strides(
    strides: tuple[int, ...], shape: tuple[int, ...], sizes: tuple[Any, ...]
) -> tuple[Any, ...]:
    """The element `strides` of an array of concrete `shape`, in terms of its `sizes` (the
    same shape, some dimensions symbolic).

    Taking the axes from the smallest stride out: that stride is the array's step and stays
    the int it is; while the array is uniformly strided (each next stride, whatever its
    sign, the step times the sizes laid out inside it: any transpose of a C-contiguous
    array, Fortran order, reversed axes, every other column) a stride is that signed
    product of `sizes`; past the first gap (a sub-block of a larger array) and on axes of
    one element the strides stay the ints they are (guarded exactly).

    >>> import sympy
    >>> n, m = sympy.symbols("n m")
    >>> laid_out_strides((1, 5), (5, 5), (n, n))  # Fortran order
    (1, n)
    >>> laid_out_strides((-4, 1), (3, 4), (3, m))  # rows reversed
    (-m, 1)
    >>> laid_out_strides((8, 2), (4, 4), (n, m))  # every other column of a 4x8 array
    (2*m, 2)
    >>> laid_out_strides((20, 1), (4, 6), (n, m))  # six columns of a 4x20 array
    (20, 1)
    """
    result: list[Any] = list(strides)
    order = sorted((a for a, size in enumerate(shape) if size > 1), key=lambda a: abs(strides[a]))
    if not order or strides[order[0]] == 0:
        return tuple(result)
    step = abs(strides[order[0]])
    inside: Any = step * sizes[order[0]]
    expected = step * shape[order[0]]
    for axis in order[1:]:
        if abs(strides[axis]) != expected:
            break
        result[axis] = inside if strides[axis] > 0 else -inside
        inside = inside * sizes[axis]
        expected *= shape[axis]
    return tuple(result)


def meta_of(value: Any) -> ArrayMeta | ScalarMeta:
    """The metadata of a concrete value: an ndarray (NumPy or CuPy), a NumPy or Python scalar.

    >>> str(meta_of(np.zeros((2, 3), np.int8)))
    'int8[2, 3]'
    """
    if is_device_array(value):
        itemsize = value.itemsize or 1
        strides = tuple(s // itemsize for s in value.strides)
        return ArrayMeta(tuple(value.shape), value.dtype, strides, device="cuda")
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        itemsize = arr.itemsize or 1
        strides = tuple(s // itemsize for s in arr.strides)
        return ArrayMeta(arr.shape, arr.dtype, strides)
    if isinstance(value, bool | int | float | complex):
        return ScalarMeta(type(value))
    raise TypeError(f"no metadata for a value of type {type(value).__name__}")
