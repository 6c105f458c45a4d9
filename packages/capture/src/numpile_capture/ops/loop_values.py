"""Values computed per loop iteration: Python scalars in the graph and indexing by them.

Inside a loop body the index is a run-time Python int (a `ScalarMeta` node), and
so is what the body computes from it with Python arithmetic (`i + 1`, `n - i`).
`py_binary` applies a Python operator to such scalars with Python's semantics
(unbounded ints, floor division and `%` as Python defines them); `dim` reads an
array's size at run time (a symbolic trip count). `getitem_at`, `element_at` and
`setitem_at` are basic indexing where some ints of the index are run-time scalars:
the `index` template holds `ScalarSlot(k)` for the k-th scalar input.

    >>> from numpile_capture import ArrayMeta, ScalarMeta, get_op
    >>> x = ArrayMeta((5, 3), "float32")
    >>> str(get_op("getitem_at").meta(x, ScalarMeta(int), index=(ScalarSlot(0),)))
    'float32[3]'
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_guards import relation

from ..meta import ArrayMeta, ScalarMeta
from ..op import Op, OpKind, register_op
from ._shapes import strides_of
from .mutation import check_assignment
from .view import _getitem_meta, is_element_index


@attrs.frozen(repr=False)
class ScalarSlot:
    """A slot of an index template standing for the `position`-th scalar input.

    >>> ScalarSlot(1)
    scalars[1]
    """

    position: int
    # The value as a sympy expression over loop indices and sizes (`i0 + 1`; an opaque
    # symbol when it has none): what a slice bounded by it is simplified with.
    expr: Any = attrs.field(default=None, eq=False)

    def __repr__(self) -> str:
        return f"scalars[{self.position}]"


# NOTE: Python's own operators, by the names BINARY_OP and COMPARE_OP use in capture.
PY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "ge": operator.ge,
}

# A representative nonzero value of each Python scalar type (the result type never
# depends on it, except for `int ** int`, which capture keeps out of the graph).
_SAMPLES: dict[type, Any] = {bool: True, int: 3, float: 1.5, complex: 1.5 + 0.5j}


def _scalar_type(value: Any) -> type:
    if isinstance(value, ScalarMeta) and value.type in _SAMPLES:
        return value.type
    if type(value) in _SAMPLES:
        return type(value)
    raise TypeError(f"py_binary takes Python bool, int, float or complex operands, got {value}")


def _py_binary_meta(left: Any, right: Any, *, operator: str) -> ScalarMeta:
    sample = PY_OPERATORS[operator](_SAMPLES[_scalar_type(left)], _SAMPLES[_scalar_type(right)])
    return ScalarMeta(type(sample))


def _py_binary_impl(left: Any, right: Any, *, operator: str) -> Any:
    return PY_OPERATORS[operator](left, right)


# NOTE: the Python operators that may raise on some scalars: by a zero (`/`, `//`, `%`,
# `0.0 ** -1`), a float overflow (`**`) or a negative shift count.
_RAISING_OPERATORS = frozenset({"truediv", "floordiv", "mod", "pow", "lshift", "rshift"})


def _operator_may_raise(inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return kwargs["operator"] in _RAISING_OPERATORS


py_binary = register_op(
    Op(
        "py_binary",
        OpKind.EXTERN,
        _py_binary_meta,
        _py_binary_impl,
        doc="a Python operator on Python scalars (int, float, bool), with Python's semantics",
        run_time_error="ZeroDivisionError",
        may_raise=_operator_may_raise,
    )
)


def _py_unary_meta(value: Any, *, operator: str) -> ScalarMeta:
    kind = _scalar_type(value)
    return ScalarMeta(int if kind is bool and operator in ("neg", "invert") else kind)


_PY_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "invert": operator.invert,
    "abs": abs,
}


def _py_unary_impl(value: Any, *, operator: str) -> Any:
    return _PY_UNARY[operator](value)


py_unary = register_op(
    Op("py_unary", OpKind.EXTERN, _py_unary_meta, _py_unary_impl, doc="-x, ~x, abs(x)")
)


def _dim_meta(x: ArrayMeta, *, axis: int) -> ScalarMeta:
    if not 0 <= axis < x.ndim:
        raise IndexError(f"axis {axis} is out of range for {x}")
    return ScalarMeta(int)


def _dim_impl(x: Any, *, axis: int) -> int:
    return int(x.shape[axis])


dim = register_op(Op("dim", OpKind.EXTERN, _dim_meta, _dim_impl, doc="x.shape[axis] at run time"))


def _with_sample_ints(x: ArrayMeta, index: tuple[Any, ...]) -> tuple[ArrayMeta, tuple[Any, ...]]:
    # The metadata of x[index] does not depend on the run-time ints: put 0 in each slot (on
    # a size of at least 1, so the sample is in bounds; NumPy checks the real value). An
    # indexed axis leaves the result, so its size may change; the strides stay x's.
    shape = list(x.shape)
    items: list[Any] = []
    axis = 0
    for item in index:
        if isinstance(item, ScalarSlot):
            if not _surely_positive(shape[axis]):
                shape[axis] = 1
            items.append(0)
        else:
            items.append(item)
        if item is not None and item is not Ellipsis:
            axis += 1
    if shape == list(x.shape):
        return x, tuple(items)
    return attrs.evolve(x, shape=tuple(shape), strides=strides_of(x)), tuple(items)


def _surely_positive(size: Any) -> bool:
    # Whether a size is at least 1 for every admitted value (a data-dependent or run-time
    # length, such as a loop VJP's stack of one row per iteration, may be 0).
    if isinstance(size, int):
        return size > 0
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    # `relation`: decided with integer arithmetic in a light capture (no sympy).
    return env is None or env.decide(relation(">=", size, 1)) is True


def _check_scalars(scalars: tuple[Any, ...]) -> None:
    for value in scalars:
        kind = value.type if isinstance(value, ScalarMeta) else type(value)
        if kind not in (int, bool):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                "integer or boolean arrays are valid indices"
            )


def _getitem_at_meta(x: ArrayMeta, *scalars: Any, index: tuple[Any, ...]) -> ArrayMeta:
    _check_scalars(scalars)
    if not any(_is_slot_slice(item) for item in index):
        sample, items = _with_sample_ints(x, index)
        return _getitem_meta(sample, index=items)
    return _slot_slices_meta(x, index)


def _is_slot_slice(item: Any) -> bool:
    return isinstance(item, slice) and any(
        isinstance(part, ScalarSlot) for part in (item.start, item.stop, item.step)
    )


def _slot_slices_meta(x: ArrayMeta, index: tuple[Any, ...]) -> ArrayMeta:
    # Slices bounded by run-time ints: the view of whole axes, then each such axis gets
    # its symbolic length (simplified under the loop indices' bounds) and stride.
    if Ellipsis in index:
        raise NotImplementedError("an Ellipsis beside a slice bounded by a loop's index")
    # Late imports: the shape environment lives above the op set.
    from ..dynamic_shapes import active_shape_env
    from ..loop_index import slice_length

    whole = tuple(slice(None) if _is_slot_slice(item) else item for item in index)
    sample, items = _with_sample_ints(x, whole)
    meta = _getitem_meta(sample, index=items)
    shape = list(meta.shape)
    strides = list(strides_of(meta))
    in_strides = strides_of(x)
    env = active_shape_env()
    axis = 0
    out = 0
    for item in index:
        if item is None:
            out += 1
            continue
        if not isinstance(item, slice):
            axis += 1
            continue
        if _is_slot_slice(item):
            step = item.step
            if isinstance(step, ScalarSlot):
                raise NotImplementedError("a slice step computed at run time")
            step = 1 if step is None else operator.index(step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            start, stop = (_slot_expr(part) for part in (item.start, item.stop))
            shape[out] = slice_length(x.shape[axis], start, stop, step, env)
            strides[out] = in_strides[axis] * step
        axis += 1
        out += 1
    return ArrayMeta(tuple(shape), meta.dtype, tuple(strides), meta.device)


def _slot_expr(part: Any) -> Any:
    if isinstance(part, ScalarSlot):
        if part.expr is None:
            import sympy

            return sympy.Dummy("r", integer=True)
        return part.expr
    return None if part is None else operator.index(part)


def _element_at_meta(x: ArrayMeta, *scalars: Any, index: tuple[Any, ...]) -> ArrayMeta:
    _check_scalars(scalars)
    if not is_element_index(_with_sample_ints(x, index)[1], x.ndim):
        raise ValueError(f"element_at needs one int per dimension, got {index}")
    return ArrayMeta((), x.dtype, None, x.device)


def concrete_index(index: tuple[Any, ...], scalars: tuple[Any, ...]) -> tuple[Any, ...]:
    """The index with each `ScalarSlot` replaced by its run-time value.

    >>> concrete_index((ScalarSlot(0), slice(None)), (4,))
    (4, slice(None, None, None))
    """
    return tuple(_concrete(item, scalars) for item in index)


def _concrete(item: Any, scalars: tuple[Any, ...]) -> Any:
    if isinstance(item, ScalarSlot):
        return operator.index(scalars[item.position])
    if isinstance(item, slice):
        parts = (item.start, item.stop, item.step)
        if any(isinstance(part, ScalarSlot) for part in parts):
            return slice(*(_concrete(part, scalars) for part in parts))
    return item


def _getitem_at_impl(x: Any, *scalars: Any, index: tuple[Any, ...]) -> Any:
    return x[concrete_index(index, scalars)]


def index_may_leave_bounds(inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether `x[index]` (x the first input) may raise IndexError: some int of the index
    (a run-time slot or a constant) is not proven within its axis by the sizes, the loop
    bounds of the capture running now, or the test of the loop whose counter it is (see
    `loop_counters`, which may guard this call's values to prove it); slices never raise.

        >>> from numpile_capture import Graph
        >>> x = Graph().placeholder("x", ArrayMeta((5,), "float64"))
        >>> [index_may_leave_bounds((x,), {"index": (k,)}) for k in (4, -5, 5)]
        [False, False, True]
    """
    template = kwargs["index"]
    if any(item is None or item is Ellipsis for item in template):
        return True
    for item, size in zip(template, inputs[0].meta.shape, strict=False):
        if isinstance(item, slice):
            continue
        if isinstance(item, ScalarSlot):
            # A while loop's counter: its test bounds it (see loop_counters).
            from ..loop_counters import counter_within

            within = counter_within(_scalar_input(inputs, template, item), size)
            if within is not None:
                if not within:
                    return True
                continue
        value = item.expr if isinstance(item, ScalarSlot) else item
        if value is None or not _within(value, size):
            return True
    return False


def _scalar_input(inputs: tuple[Any, ...], template: tuple[Any, ...], slot: ScalarSlot) -> Any:
    # The input a slot stands for: the scalars are the last inputs (after `x`, and the
    # value a store writes), one per slot position.
    positions = [
        part.position
        for item in template
        for part in ((item.start, item.stop, item.step) if isinstance(item, slice) else (item,))
        if isinstance(part, ScalarSlot)
    ]
    return inputs[len(inputs) - 1 - max(positions) + slot.position]


def _within(value: Any, size: Any) -> bool:
    # Whether -size <= value < size for every admitted value (NumPy wraps negative ints).
    if isinstance(value, int) and isinstance(size, int):
        return -size <= value < size
    from ..dynamic_shapes import active_shape_env

    env = active_shape_env()
    if env is None:
        return False
    return (
        env.decide(relation(">=", value, -size)) is True
        and env.decide(relation("<", value, size)) is True
    )


getitem_at = register_op(
    Op(
        "getitem_at",
        OpKind.VIEW,
        _getitem_at_meta,
        _getitem_at_impl,
        doc="x[index] with run-time ints in the index (a view)",
        run_time_error="IndexError",
        may_raise=index_may_leave_bounds,
    )
)

# NOTE: not a VIEW: NumPy returns a fresh scalar for x[i, j] on a 2-d array.
element_at = register_op(
    Op(
        "element_at",
        OpKind.INDEXING,
        _element_at_meta,
        _getitem_at_impl,
        doc="x[i, j] with run-time ints, one per dimension (a NumPy scalar)",
        run_time_error="IndexError",
        may_raise=index_may_leave_bounds,
    )
)


def _setitem_at_meta(x: ArrayMeta, value: Any, *scalars: Any, index: tuple[Any, ...]) -> ArrayMeta:
    check_assignment(_getitem_at_meta(x, *scalars, index=index), value)
    return x


def _setitem_at_impl(x: Any, value: Any, *scalars: Any, index: tuple[Any, ...]) -> Any:
    x[concrete_index(index, scalars)] = value
    return x


setitem_at = register_op(
    Op(
        "setitem_at",
        OpKind.MUTATION,
        _setitem_at_meta,
        _setitem_at_impl,
        mutates=(0,),
        doc="x[index] = value with run-time ints in the index",
        run_time_error="IndexError",
        may_raise=index_may_leave_bounds,
    )
)


def _setitem_at_scatter_meta(
    x: ArrayMeta, value: Any, *scalars: Any, index: tuple[Any, ...]
) -> ArrayMeta:
    _setitem_at_meta(x, value, *scalars, index=index)
    return ArrayMeta(x.shape, x.dtype, None, x.device)


def _setitem_at_scatter_impl(x: Any, value: Any, *scalars: Any, index: tuple[Any, ...]) -> Any:
    out = x.copy()
    out[concrete_index(index, scalars)] = value
    return out


# NOTE: the pure form functionalization gives `setitem_at` (as `view_scatter` is `setitem`'s).
setitem_at_scatter = register_op(
    Op(
        "setitem_at_scatter",
        OpKind.EXTERN,
        _setitem_at_scatter_meta,
        _setitem_at_scatter_impl,
        doc="a copy of x with x[index] = value, run-time ints in the index",
        run_time_error="IndexError",
        may_raise=index_may_leave_bounds,
    )
)


def python_scalar_type(value: Any) -> type | None:
    """The Python scalar type a graph value has at run time (bool, int, float), else None.

    >>> python_scalar_type(ScalarMeta(int)), python_scalar_type(np.float64(1.0))
    (<class 'int'>, None)
    """
    if isinstance(value, ScalarMeta):
        return value.type if value.type in _SAMPLES else None
    return type(value) if type(value) in _SAMPLES else None


def _carried_scalar_meta(x: Any) -> ArrayMeta:
    if not isinstance(x, ArrayMeta) or x.shape != ():
        raise ValueError(f"carried_scalar takes a 0-d value, got {x}")
    return ArrayMeta((), x.dtype, None, x.device)


def _carried_scalar_impl(x: Any) -> Any:
    return x[()] if isinstance(x, np.ndarray) else x


# NOTE: INDEXING, so NumPy scalars stay scalars (`s += v` makes a new one, not in place).
carried_scalar = register_op(
    Op(
        "carried_scalar",
        OpKind.INDEXING,
        _carried_scalar_meta,
        _carried_scalar_impl,
        doc="a loop's carried NumPy scalar (a Python scalar in the first iteration stays one)",
    )
)


def _numpy_scalar_meta(value: Any, *, dtype: np.dtype[Any]) -> ArrayMeta:
    if python_scalar_type(value) is None:
        raise ValueError(f"numpy_scalar takes a Python bool, int or float, got {value}")
    if dtype.kind not in "biufc":
        raise ValueError(f"numpy_scalar makes a numeric NumPy scalar, not {dtype}")
    return ArrayMeta((), dtype)


def _numpy_scalar_impl(value: Any, *, dtype: np.dtype[Any]) -> Any:
    return dtype.type(value)


# NOTE: `np.int8(300)` raises OverflowError, `np.int64(float("nan"))` ValueError: the
# constructor's own errors, which capture cannot rule out for a value known only at run time.
numpy_scalar = register_op(
    Op(
        "numpy_scalar",
        OpKind.EXTERN,
        _numpy_scalar_meta,
        _numpy_scalar_impl,
        doc="np.<scalar type>(v) of a run-time Python scalar (`np.int64(i)`): a NumPy scalar",
        run_time_error="OverflowError or ValueError",
    )
)


def _python_number_meta(value: Any, *, kind: type) -> ScalarMeta:
    if not isinstance(value, ArrayMeta) or value.shape != () or value.dtype.kind not in "biuf":
        raise ValueError(f"python_number takes a 0-d bool, int or float value, got {value}")
    if kind not in (int, float):
        raise ValueError(f"python_number makes a Python int or float, not {kind}")
    return ScalarMeta(kind)


def _python_number_impl(value: Any, *, kind: type) -> Any:
    return kind(value)


def _python_number_may_raise(inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    # int() of a float raises on NaN and infinities; every other conversion is exact
    # (an int64 as a float rounds, as Python's own float() of it does).
    (value,) = inputs
    meta = getattr(value, "meta", None)
    return kwargs["kind"] is int and isinstance(meta, ArrayMeta) and meta.dtype.kind == "f"


# NOTE: `int(x[i] * 8)` in a loop's body: the value is data, so capture keeps the call as
# this node rather than the graph break a Python int made of array values needs elsewhere.
python_number = register_op(
    Op(
        "python_number",
        OpKind.EXTERN,
        _python_number_meta,
        _python_number_impl,
        doc="int(v) or float(v) of a 0-d NumPy value (`int(x[i] * 8)`): a Python scalar",
        run_time_error="ValueError or OverflowError",
        may_raise=_python_number_may_raise,
    )
)
