"""Shape and stride arithmetic shared by the meta rules.

Everything here is pure Python over shape tuples, so a dimension may be a
plain int or a sympy expression. Where NumPy would raise, these raise NumPy's
own exception types with NumPy's messages.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.exceptions import AxisError

from ..meta import ArrayMeta, contiguous_strides, k_order_axes


def _is_static(dim: Any) -> bool:
    return isinstance(dim, int)


def _same_size(left: Any, right: Any) -> bool:
    # Two sizes, one symbolic, neither 1: broadcasting needs them equal (a guard says so).
    # Late import: the capture's shape environment lives above the op set.
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    if env is None:
        raise NotImplementedError(f"broadcasting symbolic sizes {left} and {right}")
    import sympy

    if env.is_unbacked(left) or env.is_unbacked(right):
        # A data-dependent size has no value at capture time: equal where its bounds prove
        # it, else a run-time check in the graph (`Graph.call` catches this).
        if env.decide(sympy.Eq(left, right)) is True:
            return True
        raise UnbackedBroadcast(left, right)
    return env.evaluate(sympy.Eq(left, right), reason="broadcasting")


class UnbackedBroadcast(NotImplementedError):  # noqa: N818 - it names the event
    """Broadcasting sizes `left` and `right`, one data-dependent, that capture cannot prove
    equal: the graph checks them at run time (`ops/unbacked_broadcast.py`); where no such
    check fits, a graph break as before."""

    def __init__(self, left: Any, right: Any) -> None:
        super().__init__(f"broadcasting data-dependent sizes {left} and {right}")
        self.left = left
        self.right = right


def unbacked_size(name: str, low: Any = 0, high: Any = None) -> Any:
    """The size symbol of a data-dependent length (`u<k>`), with the bounds its op implies
    (`low <= u <= high`, ints or size expressions; None: unbounded) recorded in the
    capture's shape environment, where the simplifier uses them.

    >>> unbacked_size("u3", 0, 8)
    u3
    """
    import sympy

    from ..dynamic_shapes import active_shape_env

    symbol = sympy.Symbol(name, integer=True, nonnegative=True)
    env = active_shape_env()
    if env is not None:
        env.create_unbacked(symbol, low, high)
    return symbol


def symbolic_quotient(numel: Any, known: Any) -> Any:
    """`numel / known` for a reshape's -1 with symbolic sizes; guards that it divides exactly.

    NumPy's ValueError when it does not divide for the sizes seen now.

        >>> symbolic_quotient(12, 4)
        3
    """
    import sympy

    from numpile_guards.shape_env import has_fraction

    from ..dynamic_shapes import active_shape_env

    if isinstance(numel, int) and isinstance(known, int):
        return numel // known
    env = active_shape_env()
    if env is None:
        quotient = sympy.sympify(numel) / known
        if not quotient.is_integer:
            raise NotImplementedError(f"reshape of symbolic size {numel} outside a capture")
        return int(quotient) if quotient.is_Integer else quotient
    if not env.evaluate(sympy.Ne(known, 0), reason="reshape"):
        raise ValueError(f"cannot reshape array of size {env.hint(numel)} into a -1 dimension")
    divides = env.evaluate(sympy.Eq(sympy.Mod(numel, known), 0), reason="reshape with -1")
    if not divides:
        size = env.hint(numel)
        raise ValueError(f"cannot reshape array of size {size} into a shape with {known}")
    quotient = env.simplify(sympy.sympify(numel) / known)
    if quotient.is_Integer:
        return int(quotient)
    if has_fraction(quotient):
        # Exact by the guard above; floor keeps it an integer expression (`floor(s0/2)`).
        return sympy.floor(quotient)
    return quotient


def symbolic_slice_length(size: Any, item: slice) -> Any:
    """The length of `item` applied to a symbolic `size`, with guards on the branches taken.

    >>> symbolic_slice_length(5, slice(1, None))
    4
    """
    return symbolic_slice(size, item)[1]


def symbolic_slice(size: Any, item: slice) -> tuple[Any, Any]:
    """Where `item` applied to a symbolic `size` starts (the index of its first element,
    where it has one) and its length, with guards on the branches taken: the clamps
    Python makes, decided once for both.

    >>> symbolic_slice(5, slice(-2, None))
    (3, 2)
    """
    import sympy

    from ..dynamic_shapes import active_shape_env

    if isinstance(size, int):
        first, _, _ = item.indices(size)
        return first, len(range(*item.indices(size)))
    env = active_shape_env()
    step = 1 if item.step is None else operator.index(item.step)
    if env is not None and env.is_unbacked(size):
        # A data-dependent size has no value to guard a branch on: the exact clamp
        # expression, simplified under its bounds (`u[1:]` of unique's `u >= 1` is `u - 1`).
        from ..loop_index import slice_span

        if step == 0:
            raise ValueError("slice step cannot be zero")
        start, stop = (None if v is None else operator.index(v) for v in (item.start, item.stop))
        return slice_span(size, start, stop, step, env)
    if env is None:
        raise NotImplementedError(f"slicing symbolic size {size} with {item}")
    if step == 0:
        raise ValueError("slice step cannot be zero")
    # Python's clamps: into [0, size] for a positive step, into [-1, size - 1] for a
    # negative one.
    low, high = (0, size) if step > 0 else (-1, size - 1)

    def clamp(bound: Any, default: Any) -> Any:
        if bound is None:
            return default
        value = operator.index(bound)
        if value < 0:
            inside = env.evaluate(sympy.Ge(size + value, low), reason="slice bound")
            return size + value if inside else low
        inside = env.evaluate(sympy.Le(value, high), reason="slice bound")
        return value if inside else high

    if step > 0:
        start, stop = clamp(item.start, 0), clamp(item.stop, size)
        span = stop - start
    else:
        start, stop = clamp(item.start, size - 1), clamp(item.stop, -1)
        span = start - stop
    if not env.evaluate(sympy.Gt(span, 0), reason="slice length"):
        return 0, 0  # an empty view: it starts nowhere
    stride = abs(step)
    length = env.simplify(
        sympy.sympify(span)
        if stride == 1
        else sympy.floor((span + stride - 1) / sympy.Integer(stride))
    )
    first = sympy.sympify(start)
    return (int(first) if first.is_Integer else first), (
        int(length) if length.is_Integer else length
    )


def check_symbolic_index(size: Any, index: int) -> None:
    """Raise NumPy's IndexError unless `index` is inside symbolic `size` (a guard keeps it so).

    >>> check_symbolic_index(3, 2)
    """
    if isinstance(size, int):
        return  # a static size: NumPy's own check of the concrete index is the one
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    if env is None:
        return
    from numpile_guards import relation  # sympy's relation, or a light capture's

    bound = index if index >= 0 else -index - 1
    if not env.evaluate(relation(">", size, bound), reason="index in bounds"):
        raise IndexError(f"index {index} is out of bounds for size {env.hint(size)}")


def broadcast_shapes(*shapes: tuple[Any, ...]) -> tuple[Any, ...]:
    """NumPy's broadcasting of `shapes`; raises NumPy's ValueError when they clash.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        return ()
    first = shapes[0]
    if all(shape == first for shape in shapes):
        return tuple(first)
    ndim = max(len(shape) for shape in shapes)
    result: list[Any] = []
    for position in range(-ndim, 0):
        dim: Any = 1
        for shape in shapes:
            if len(shape) < -position:
                continue
            other = shape[position]
            if other == 1 or other == dim:
                continue
            if dim == 1:
                dim = other
                continue
            if _is_static(dim) and _is_static(other):
                if all(_is_static(d) for s in shapes for d in s):
                    np.broadcast_shapes(*shapes)  # raises NumPy's own message
                raise ValueError(f"shapes {shapes} cannot be broadcast together")
            if _same_size(dim, other):
                continue
            raise ValueError(
                f"shape mismatch: objects cannot be broadcast to a single shape "
                f"(sizes {dim} and {other} differ)"
            )
        result.append(dim)
    return tuple(result)


def normalize_axis(axis: Any, ndim: int) -> int:
    """`axis` as a non-negative int; AxisError when out of range, TypeError when not an int.

    >>> normalize_axis(-1, 3)
    2
    """
    value = operator.index(axis)
    if not -ndim <= value < ndim:
        raise AxisError(value, ndim)
    return value % ndim if ndim else value


def normalize_axes(
    axis: Any, ndim: int, *, what: str = "duplicate value in 'axis'"
) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of non-negative axes, in the given order.

    >>> normalize_axes((0, -1), 3)
    (0, 2)
    """
    items = tuple(axis) if isinstance(axis, Sequence) else (axis,)
    result = tuple(normalize_axis(item, ndim) for item in items)
    if len(set(result)) != len(result):
        raise ValueError(what)
    return result


def reduced_shape(shape: tuple[Any, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    """The shape left after reducing `axes` of `shape`.

    >>> reduced_shape((2, 3, 4), (1,), False)
    (2, 4)
    """
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def strides_of(meta: ArrayMeta) -> tuple[Any, ...]:
    """Element strides of `meta`, taking `None` (a fresh array) as C-contiguous.

    >>> strides_of(ArrayMeta((2, 3), "float32"))
    (3, 1)
    """
    if meta.strides is None:
        return contiguous_strides(meta.shape)
    return meta.strides


def is_c_contiguous(meta: ArrayMeta) -> bool:
    """Whether `meta` is C-contiguous, ignoring the strides of size-1 dims as NumPy does.

    >>> is_c_contiguous(ArrayMeta((2, 3), "float32", (1, 2)))
    False
    """
    if meta.strides is None:
        return True
    if any(d == 0 for d in meta.shape):
        return True
    expected = contiguous_strides(meta.shape)
    return all(d == 1 or s == e for d, s, e in zip(meta.shape, meta.strides, expected, strict=True))


def is_f_contiguous(meta: ArrayMeta) -> bool:
    """Whether `meta` is Fortran-contiguous, ignoring the strides of size-1 dims as NumPy does.

    >>> is_f_contiguous(ArrayMeta((2, 3), "float32", (1, 2)))
    True
    """
    if any(d == 0 for d in meta.shape):
        return True
    strides = strides_of(meta)
    expected = tuple(reversed(contiguous_strides(tuple(reversed(meta.shape)))))
    return all(d == 1 or s == e for d, s, e in zip(meta.shape, strides, expected, strict=True))


def fortran_strides(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """Element strides of a Fortran-contiguous array of `shape`.

    >>> fortran_strides((2, 3, 4))
    (1, 2, 6)
    """
    return tuple(reversed(contiguous_strides(tuple(reversed(shape)))))


def canonical_strides(shape: tuple[Any, ...], strides: tuple[Any, ...]) -> tuple[Any, ...]:
    """`strides` with each size-1 dim given the stride a C-contiguous layout would give it.

    A size-1 dim's stride never matters; fixing it keeps printed metadata quiet.

    >>> canonical_strides((2, 1), (1, 0))
    (1, 1)
    """
    result = list(strides)
    for i in reversed(range(len(shape))):
        if shape[i] == 1:
            result[i] = result[i + 1] * shape[i + 1] if i + 1 < len(shape) else 1
    return tuple(result)


def k_order_strides(shape: tuple[Any, ...], strides: tuple[Any, ...]) -> tuple[Any, ...]:
    """Strides of a fresh array laid out like `strides` (NumPy's order='K').

    >>> k_order_strides((2, 3), (1, 2))
    (1, 2)
    """
    ndim = len(shape)
    order = sorted(range(ndim), key=lambda i: -abs(strides[i]) if _is_static(strides[i]) else 0)
    result: list[Any] = [0] * ndim
    step: Any = 1
    for axis in reversed(order):
        result[axis] = step
        step = step * shape[axis]
    return tuple(result)


def resolved_shape(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """`shape` with what the capture's guards pinned substituted (a specialized size is an int).

    >>> resolved_shape((2, 3))
    (2, 3)
    """
    if all(_is_static(d) for d in shape):
        return shape
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    if env is None:
        return shape
    result = []
    for dim in shape:
        value = env.simplify(dim) if not _is_static(dim) else dim
        result.append(int(value) if getattr(value, "is_Integer", False) else value)
    return tuple(result)


def _contiguous(shape: tuple[Any, ...], strides: tuple[Any, ...]) -> bool:
    expected = contiguous_strides(shape)
    return all(d == 1 or s == e for d, s, e in zip(shape, strides, expected, strict=True))


def _multiple_of(big: Any, small: Any) -> bool:
    # Whether the size `big` is `small` times a whole number of at least 2 for every value
    # the capture's bounds allow (a symbolic size's run of dims grows until the two meet).
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    if env is None:
        return False
    import sympy

    ratio = sympy.cancel(sympy.sympify(big) / small)
    if sympy.fraction(ratio)[1] != 1:
        return False
    return env.decide(sympy.Ge(ratio, 2)) is True


def reshape_strides(
    shape: tuple[Any, ...], strides: tuple[Any, ...], new_shape: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """Strides of `new_shape` viewing an array of `shape`/`strides` without a copy, or None.

    Follows NumPy's no-copy reshape (C order): runs of old dims that map onto
    runs of new dims must be contiguous among themselves.

    >>> reshape_strides((2, 3), (1, 2), (6,)) is None
    True
    """
    shape = resolved_shape(shape)
    strides = resolved_shape(strides)
    new_shape = resolved_shape(new_shape)
    if any(d == 0 for d in shape) or any(d == 0 for d in new_shape):
        return contiguous_strides(new_shape)
    symbolic = not all(_is_static(d) for d in (*shape, *new_shape))
    if symbolic and _contiguous(shape, strides):
        # A C-contiguous array reshapes to any shape of its size without a copy.
        return contiguous_strides(new_shape)
    old = [(d, s) for d, s in zip(shape, strides, strict=True) if d != 1]
    result: list[Any] = []
    oi = 0
    ni = 0
    new = list(new_shape)
    while ni < len(new):
        if new[ni] == 1:
            result.append(0)
            ni += 1
            continue
        if oi >= len(old):
            return None
        old_start, new_start = oi, ni
        old_size, new_size = old[oi][0], new[ni]
        while old_size != new_size:
            if _is_static(old_size) and _is_static(new_size):
                old_smaller = old_size < new_size
            elif _multiple_of(new_size, old_size):
                old_smaller = True
            elif _multiple_of(old_size, new_size):
                old_smaller = False
            else:
                return None
            if old_smaller:
                oi += 1
                if oi >= len(old):
                    return None
                old_size = old_size * old[oi][0]
            else:
                ni += 1
                if ni >= len(new):
                    return None
                new_size = new_size * new[ni]
        for k in range(old_start, oi):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        stride = old[oi][1]
        chunk: list[Any] = []
        for k in range(ni, new_start - 1, -1):
            if new[k] == 1:
                chunk.append(0)
                continue
            chunk.append(stride)
            stride = stride * new[k]
        result.extend(reversed(chunk))
        oi += 1
        ni += 1
    if oi < len(old):
        return None
    return tuple(result)


def elementwise_strides(shape: tuple[Any, ...], *inputs: Any) -> tuple[Any, ...] | None:
    """Element strides of an element-wise result of `shape` from `inputs` (NumPy's order='K'),
    or None where that layout is C-contiguous (or the capture's facts cannot order the
    inputs' symbolic strides: `{1, s0}` orders, `{s0, s1}` does not).

    The result's axes are in the order NumPy's iterator gives them (`elementwise_axes`).
    The result is dense and its strides positive whatever the inputs' signs.

    >>> elementwise_strides((3, 4), ArrayMeta((3, 4), "float64", (1, 3)))  # Fortran order
    (1, 3)
    >>> elementwise_strides((3, 4), ArrayMeta((3, 4), "float64", (-4, 1))) is None  # rows reversed
    True
    """
    if len(shape) < 2 or any(isinstance(d, int) and d <= 0 for d in shape):
        return None
    axes = elementwise_axes(shape, *inputs)
    if axes is None:
        return None
    strides = dense_strides_in(shape, axes)
    return None if strides == contiguous_strides(shape) else strides


def elementwise_axes(shape: tuple[Any, ...], *inputs: Any) -> tuple[int, ...] | None:
    """The axes of an iteration of `shape` over `inputs`, outermost first, as NumPy's
    iterator orders them (`k_order_axes`: a broadcast or size-1 axis of an input moves
    nothing; C order wins ties and disagreements between inputs), or None where the
    capture's facts cannot order the inputs' symbolic strides. Non-array inputs take no
    part.

    >>> elementwise_axes((3, 4, 5), ArrayMeta((3, 4, 5), "float64", (20, 1, 4)))
    (0, 2, 1)
    """
    arrays = [m for m in inputs if isinstance(m, ArrayMeta)]
    ndim = len(shape)
    rows: list[tuple[Any, ...]] = []
    for meta in arrays:
        strides = (0,) * (ndim - meta.ndim) + tuple(strides_of(meta))
        sizes = (1,) * (ndim - meta.ndim) + tuple(meta.shape)
        rows.append(tuple(0 if size == 1 else s for size, s in zip(sizes, strides, strict=True)))
    table = _stride_ranks(rows)
    return None if table is None else k_order_axes(table, ndim)


def dense_strides_in(shape: tuple[Any, ...], axes: tuple[int, ...]) -> tuple[Any, ...]:
    """Element strides of a dense array of `shape` whose axes lie in memory in the order
    `axes` (outermost first).

    >>> dense_strides_in((2, 3, 4), (2, 0, 1))
    (3, 1, 6)
    """
    result: list[Any] = [0] * len(shape)
    step: Any = 1
    for axis in reversed(axes):
        result[axis] = step
        step *= shape[axis]
    return tuple(result)


def _stride_ranks(rows: list[tuple[Any, ...]]) -> list[tuple[int, ...]] | None:
    # The rows with each stride replaced by the rank of its magnitude among all of them (0
    # stays 0), or None where the capture's facts cannot order two symbolic strides. Sizes
    # 0 and 1 are specialized, so `1 < s0 < 6*s0` is decided for every admitted size.
    if all(isinstance(s, int) for row in rows for s in row):
        return [tuple(abs(s) for s in row) for row in rows]
    magnitudes: list[Any] = []
    for row in rows:
        for stride in row:
            size = _magnitude(stride)
            if size is None:
                return None
            if size != 0 and all(size != seen for seen in magnitudes):
                magnitudes.append(size)
    ranked: list[Any] = []
    for size in magnitudes:
        position = 0
        for earlier in ranked:
            less = _less(earlier, size)
            if less is None:
                return None
            position += int(less)
        ranked.insert(position, size)
    for low, high in itertools.pairwise(ranked):
        if _less(low, high) is not True:
            return None
    rank = {size: i + 1 for i, size in enumerate(ranked)}
    return [tuple(rank[_magnitude(s)] if s != 0 else 0 for s in row) for row in rows]


def _less(small: Any, big: Any) -> bool | None:
    # Whether the magnitude `small` is less than `big` for every admitted size. Strides of
    # a dense layout are products of sizes, which ranges alone do not order (`s0 < s0*s1`
    # needs `s1 >= 2`): where one is the other times a product of sizes, that product
    # decides (sizes 0 and 1 are specialized, so a symbolic one is at least 2).
    less = _decide(small < big)
    if less is not None or (isinstance(small, int) and isinstance(big, int)):
        return less
    if _ratio_above_one(big, small):
        return True
    if _ratio_above_one(small, big):
        return False
    return None


def _ratio_above_one(big: Any, small: Any) -> bool:
    # Whether `big / small` is a polynomial in the sizes greater than 1 (see `_less`).
    import sympy

    ratio = sympy.cancel(sympy.sympify(big) / small)
    if sympy.fraction(ratio)[1] != 1:
        return False
    return _decide(sympy.Gt(ratio, 1)) is True


def _magnitude(stride: Any) -> Any:
    # |stride| where its sign is decided (a reversed axis's stride is negative).
    if isinstance(stride, int):
        return abs(stride)
    negative = _decide(stride < 0)
    if negative is None:
        return None
    return -stride if negative else stride


def _decide(relation: Any) -> bool | None:
    # Late import: the capture's shape environment lives above the op set.
    from ..dynamic_shapes import active_shape_env

    if isinstance(relation, bool):
        return relation
    env = active_shape_env()
    return None if env is None else env.decide(relation)
