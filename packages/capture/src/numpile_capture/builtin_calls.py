"""Builtins and container methods, evaluated at capture time: a table keyed by callable.

`len`, `range`, `isinstance`, `min`, `max`, `zip`, `enumerate`, ... act on
variables whose values are known now (shapes, constants, containers of
arrays) and return variables; none of them adds a graph node except `abs`
and `sum` on arrays, which go through the operator bindings.

    >>> builtin_handler(len) is not None, builtin_handler(print)
    (True, None)
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .bound_origins import size_vars, with_origins
from .capture_result import Unsupported
from .graph import Node
from .guarded_scalars import has_expression, operand
from .loop_ranges import make_range
from .loop_sources import ZipVar, keepable
from .op import get_op
from .operators import (
    apply_binding,
    binary,
    check_mutable,
    iterate,
    scalar_sum,
    size_value,
    specialized,
    truth,
    unary,
)
from .ops._shapes import broadcast_shapes
from .ops.loop_values import python_scalar_type
from .ops.math_calls import MATH_FUNCTIONS
from .user_classes import store_object_attribute
from .variables import (
    ArrayVar,
    ConstantVar,
    DictVar,
    IteratorVar,
    ListVar,
    NotConstantError,
    ObjectVar,
    ScalarInputVar,
    ScalarNodeVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .tracer import Tracer

Handler = Callable[["Tracer", list[Variable], dict[str, Variable]], Variable]


def _constants(args: list[Variable], kwargs: dict[str, Variable], what: str) -> tuple[Any, Any]:
    try:
        values = [arg.as_python_constant() for arg in args]
        keywords = {key: value.as_python_constant() for key, value in kwargs.items()}
    except NotConstantError:
        raise Unsupported(
            f"not supported yet: {what}() on values not known at capture time"
        ) from None
    return values, keywords


def _fold(fn: Callable[..., Any]) -> Handler:
    # Builtins that are pure on constants: run them now.
    name = getattr(fn, "__name__", "builtin")

    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        if any(isinstance(arg, ArrayVar) for arg in [*args, *kwargs.values()]):
            raise Unsupported(
                f"not supported yet: {name}() of an array (it needs the array's values)"
            )
        values, keywords = _constants(args, kwargs, name)
        return tracer.builder.build_unguarded(fn(*values, **keywords))

    return handler


def _text(fn: Callable[..., Any]) -> Handler:
    # str(), repr(), format() of sizes show numbers, never symbols: sizes are specialized.
    name = getattr(fn, "__name__", "builtin")

    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        if any(isinstance(arg, ArrayVar) for arg in [*args, *kwargs.values()]):
            raise Unsupported(
                f"not supported yet: {name}() of an array (it needs the array's values)"
            )
        values, keywords = _constants(args, kwargs, name)
        return tracer.builder.build_unguarded(fn(*specialized(values), **specialized(keywords)))

    return handler


def _len(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    (value,) = args
    if isinstance(value, ArrayVar):
        if not value.meta.shape:
            raise TypeError("len() of unsized object")
        size = size_value(value.meta.shape[0])
        builder, node = tracer.builder, value.node
        return size_vars(
            (size,),
            lambda: builder.array_inputs_of(node),
            lambda: builder.created_origins_of(node),
        )[0]
    if isinstance(value, TupleVar | ListVar):
        return ConstantVar(len(value.items))
    if isinstance(value, DictVar):
        return ConstantVar(len(value.items))
    return _fold(len)(tracer, args, kwargs)


def _range(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    # A range over symbolic or run-time bounds stays open (a loop over it is kept); a
    # NumPy integer scalar bound (`range(c, w - 1, -1)`, `w = weights[i]`) is its int.
    args = [_as_python_number(tracer, arg, int) if _integral(arg) else arg for arg in args]
    kept = None if kwargs else make_range(args)
    return kept if kept is not None else with_origins(_fold(range)(tracer, args, kwargs), *args)


def _isinstance(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    value, classes = args
    try:
        expected = classes.as_python_constant()
        kind = value.python_type()
    except NotConstantError:
        raise Unsupported(f"not supported yet: isinstance() of {value.describe()}") from None
    return ConstantVar(issubclass(kind, expected))


def _min_max(fn: Callable[..., Any]) -> Handler:
    # NOTE: Python keeps the first item and takes each later one that compares below it
    # (min) or above it (max); on NumPy scalars made from scalar inputs the same
    # comparisons are traced, so each is a guard (see guarded_scalars).
    compared = "lt" if fn is min else "gt"
    ufunc = np.maximum if fn is max else np.minimum

    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        items = iterate(tracer, args[0]) if len(args) == 1 else args
        kind = None if kwargs else _same_numpy_scalars(items)
        if kind is not None and kind in "biu":
            # `max(d[i - 1, j] + 1, d[i, j - 1] + 1)` in a DP loop: on NumPy integer (or
            # bool) scalars of one dtype, Python's pick is NumPy's element-wise one (equal
            # values are one value), so the loop around it stays kept (and no guard).
            binding = tracer.bindings.lookup_function(ufunc)
            assert binding is not None
            result = items[0]
            for item in items[1:]:
                result = apply_binding(tracer, binding, result, item)
            return result
        if kind == "f":
            return _float_pick(tracer, compared, items)
        guarded = any(has_expression(item) for item in items)
        if guarded and not kwargs and all(operand(item) is not None for item in items):
            best = items[0]
            for item in items[1:]:
                if truth(tracer, binary(tracer, compared, item, best)):
                    best = item
            return best
        if any(isinstance(item, ArrayVar) for item in items):
            raise Unsupported(_min_max_refusal(fn.__name__, items))
        values, keywords = _constants(items, kwargs, fn.__name__)
        return tracer.builder.build_unguarded(fn(values, **keywords))

    return handler


def _same_numpy_scalars(items: list[Variable]) -> str | None:
    # The dtype kind of two or more NumPy scalars (0-d values NumPy gives as scalars) of one
    # real dtype, else None: `max` and `min` of them return one of them, of that type,
    # whichever it is.
    if len(items) < 2 or not all(isinstance(item, ArrayVar) for item in items):
        return None
    metas = {item.meta for item in items if isinstance(item, ArrayVar)}
    if len(metas) != 1:
        return None
    (meta,) = metas
    kinds = {item.python_type() for item in items}
    if meta.shape != () or meta.dtype.kind not in "biuf" or kinds != {meta.dtype.type}:
        return None
    return str(meta.dtype.kind)


def _min_max_refusal(name: str, items: list[Variable]) -> str:
    # Why min()/max() of traced values runs in Python, and what to write instead.
    if all(not isinstance(item, ArrayVar) or item.meta.shape == () for item in items):
        return (
            f"not supported yet: {name}() of NumPy scalars of other types or with Python "
            "numbers (which item it returns, and so its type, depends on the values); give "
            "the items one NumPy dtype (`np.float64(0.0)` for `0.0`) to keep the loop"
        )
    return f"not supported yet: {name}() of arrays (it compares array values)"


def _float_pick(tracer: Tracer, compared: str, items: list[Variable]) -> Variable:
    # `max(best, cur + v)` of NumPy floats of one dtype: Python's own pick, each later item
    # taken where it compares above (max) or below (min) the one kept, as `where` of that
    # comparison; NaNs and signed zeros then fall as in eager, unlike np.maximum (a NaN
    # wins) or np.fmax (a NaN loses). `positive` makes the 0-d `where` the NumPy scalar
    # eager returns (ufuncs give scalars; it changes no bit).
    where = tracer.bindings.lookup_function(np.where)
    positive = tracer.bindings.lookup_function(np.positive)
    assert where is not None and positive is not None
    best = items[0]
    for item in items[1:]:
        taken = binary(tracer, compared, item, best)
        best = apply_binding(tracer, where, taken, item, best)
    return apply_binding(tracer, positive, best)


def _abs(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    (value,) = args
    return unary(tracer, "abs", value)


def _bool(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    return ConstantVar(truth(tracer, args[0]) if args else False)


def _zip(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    strict = kwargs.get("strict", ConstantVar(False)).as_python_constant()
    if args and tracer.keep_loops and all(keepable(arg) for arg in args):
        return ZipVar(tuple(args), strict=bool(strict))  # a loop over it stays a loop
    columns = [iterate(tracer, arg) for arg in args]
    if strict and len({len(column) for column in columns}) > 1:
        raise ValueError("zip() arguments have different lengths")
    rows = [TupleVar(tuple(row)) for row in zip(*columns, strict=False)]
    return IteratorVar(list(rows))


def _enumerate(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    start_var = args[1] if len(args) > 1 else kwargs.get("start", ConstantVar(0))
    start = start_var.as_python_constant()
    if type(start) is int and tracer.keep_loops and keepable(args[0]):
        return ZipVar((args[0],), start=start)  # a loop over it stays a loop
    items = iterate(tracer, args[0])
    rows = [TupleVar((ConstantVar(start + i), item)) for i, item in enumerate(items)]
    return IteratorVar(list(rows))


def _tuple(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    return TupleVar(tuple(iterate(tracer, args[0])) if args else ())


def _list(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    return ListVar(iterate(tracer, args[0]) if args else [])


def _reversed(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    return IteratorVar(list(reversed(iterate(tracer, args[0]))))


def _iter(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    if len(args) == 1 and isinstance(args[0], IteratorVar):
        return args[0]  # iter() of an iterator is itself: generators stay lazy
    if len(args) != 1:
        raise Unsupported("not supported yet: iter() with a sentinel")
    return IteratorVar(iterate(tracer, args[0]))


def _next(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    iterator = args[0]
    if not isinstance(iterator, IteratorVar):
        raise Unsupported(f"not supported yet: next() of {iterator.describe()}")
    item = iterator.next_item()
    if item is not None:
        return item
    if len(args) > 1:
        return args[1]
    raise StopIteration


def _any_all(expected: bool) -> Handler:
    # any(): the first true item wins; all(): the first false one. Array items need values.
    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        (iterable,) = args
        if isinstance(iterable, IteratorVar):
            item = iterable.next_item()
            while item is not None:
                if truth(tracer, item) == expected:
                    return ConstantVar(expected)
                item = iterable.next_item()
            return ConstantVar(not expected)
        for item in iterate(tracer, iterable):
            if truth(tracer, item) == expected:
                return ConstantVar(expected)
        return ConstantVar(not expected)

    return handler


def _dict(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    entries: dict[Any, Variable] = {}
    if args:
        source = args[0]
        if isinstance(source, DictVar):
            entries.update(source.items)
        else:
            for pair in iterate(tracer, source):
                key, value = iterate(tracer, pair)
                entries[key.as_python_constant()] = value
    entries.update(kwargs)
    return DictVar(entries)


def _sum(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    total = args[1] if len(args) > 1 else kwargs.get("start", ConstantVar(0))
    items = iterate(tracer, args[0])
    derived = scalar_sum(tracer, items, total)
    if derived is not None:
        return derived
    if all(isinstance(item, ConstantVar | ScalarInputVar) for item in [total, *items]):
        # Python's own sum: 3.12+ adds floats with compensated summation.
        values = [item.as_python_constant() for item in items]
        return tracer.builder.build_unguarded(sum(values, total.as_python_constant()))
    for item in items:
        total = binary(tracer, "add", total, item)
    return total


def _type(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    (value,) = args
    try:
        kind = value.python_type()
    except NotConstantError:
        raise Unsupported(f"not supported yet: type() of {value.describe()}") from None
    return tracer.builder.build_unguarded(kind)


def _getattr(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    name = args[1].as_python_constant()
    try:
        return tracer.load_attr(args[0], name)
    except AttributeError:
        if len(args) > 2:
            return args[2]
        raise


def _to_number(kind: type) -> Handler:
    folded = _fold(kind)

    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        if len(args) == 1 and not kwargs and _numeric_0d(args[0]) and kind in (int, float):
            # `int(x[i] * 8)`: a Python scalar the graph makes at run time, as the loop
            # index is (a loop around it stays kept).
            return _as_python_number(tracer, args[0], kind)
        if args and isinstance(args[0], ArrayVar):
            raise Unsupported(
                f"not supported yet: {kind.__name__}() of an array (it needs the array's "
                "values; data-dependent)"
            )
        return folded(tracer, args, kwargs)

    return handler


def _numeric_0d(var: Variable) -> bool:
    # A 0-d bool, int or float value the graph computes (a NumPy scalar or a 0-d array).
    return isinstance(var, ArrayVar) and var.meta.shape == () and var.meta.dtype.kind in "biuf"


def _integral(var: Variable) -> bool:
    # A 0-d NumPy integer value: range() takes it through `__index__`, as an int.
    return _numeric_0d(var) and isinstance(var, ArrayVar) and var.meta.dtype.kind in "iu"


def _as_python_number(tracer: Tracer, var: Variable, kind: type) -> Variable:
    assert isinstance(var, ArrayVar)
    return ScalarNodeVar(tracer.graph.call(get_op("python_number"), var.node, kind=kind))


def _numpy_scalar(kind: type[np.generic]) -> Handler:
    # `np.int64(i)` of a run-time Python scalar (a loop's index, an unspecialized input) is
    # a `numpy_scalar` node, so the loop stays kept and the input unspecialized; of values
    # known now, NumPy runs now.
    folded = _fold(kind)
    dtype = _numeric_dtype(kind)

    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        value = _run_time_scalar(args[0]) if dtype is not None and len(args) == 1 else None
        if value is None or kwargs:
            return folded(tracer, args, kwargs)
        return ArrayVar(tracer.graph.call(get_op("numpy_scalar"), value, dtype=dtype))

    return handler


def _numeric_dtype(kind: type[np.generic]) -> np.dtype[Any] | None:
    # The dtype of a concrete numeric scalar type (np.int32, np.float64, np.bool_), else None
    # (abstract np.integer, np.str_, np.datetime64).
    try:
        dtype = np.dtype(kind)
    except TypeError:
        return None
    return dtype if dtype.type is kind and dtype.kind in "biufc" else None


def _run_time_scalar(var: Variable) -> Node | None:
    # The graph value of a Python scalar known only at run time, without specializing it.
    if isinstance(var, ScalarNodeVar) and python_scalar_type(var.node.meta) is not None:
        return var.node
    if isinstance(var, ScalarInputVar) and not var.read and type(var.current) in (int, float):
        return var.node()
    return None


def _math_function(fn: Callable[..., Any]) -> Handler:
    # `math.sqrt(abs(x[i]))` of values the graph computes at run time (a NumPy scalar, a
    # loop's Python scalar): a `math_call` node giving math's own Python scalar, so a loop
    # around it stays kept; of values known now, math runs now.
    folded = _fold(fn)
    name = fn.__name__

    def handler(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        operands = [_math_operand(arg) for arg in args]
        run_time = [operand for operand in operands if isinstance(operand, Node)]
        if kwargs or not run_time or any(operand is None for operand in operands):
            return folded(tracer, args, kwargs)
        if len(args) != MATH_FUNCTIONS[name].arity:
            return folded(tracer, args, kwargs)  # math raises its own TypeError
        node = tracer.graph.call(get_op("math_call"), *operands, function=name)
        return ScalarNodeVar(node)

    return handler


def _math_operand(var: Variable) -> Any:
    # A real 0-d run-time value (its node), a Python bool, int or float known now, or None.
    if _numeric_0d(var):
        assert isinstance(var, ArrayVar)
        return var.node
    if isinstance(var, ConstantVar) and type(var.value) in (bool, int, float):
        return var.value
    return _run_time_scalar(var)


def _object_setattr(tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    # object.__setattr__(obj, name, value), as frozen dataclasses' __init__ writes fields.
    obj, name, value = args
    if not isinstance(obj, ObjectVar):
        raise Unsupported(f"not supported yet: object.__setattr__ on {obj.describe()}")
    store_object_attribute(tracer, obj, name.as_python_constant(), value, raw=True)
    return ConstantVar(None)


def _broadcast_shapes(
    tracer: Tracer, args: list[Variable], kwargs: dict[str, Variable]
) -> Variable:
    # np.broadcast_shapes on shapes known now, symbolic sizes included.
    values, keywords = _constants(args, kwargs, "broadcast_shapes")
    if keywords:
        raise TypeError("broadcast_shapes() got an unexpected keyword argument")
    shapes = [tuple(value) if isinstance(value, tuple | list) else (value,) for value in values]
    try:
        result = broadcast_shapes(*shapes)
    except NotImplementedError as exc:
        raise Unsupported(f"not supported yet: {exc}") from None
    return tracer.builder.build_unguarded(tuple(result))


_BUILTINS: dict[Any, Handler] = {
    builtins.len: _len,
    builtins.range: _range,
    builtins.isinstance: _isinstance,
    builtins.issubclass: _fold(issubclass),
    builtins.min: _min_max(min),
    builtins.max: _min_max(max),
    builtins.abs: _abs,
    builtins.int: _to_number(int),
    builtins.float: _to_number(float),
    builtins.complex: _to_number(complex),
    builtins.bool: _bool,
    builtins.str: _text(str),
    builtins.repr: _text(repr),
    builtins.format: _text(format),
    builtins.ascii: _text(ascii),
    builtins.round: _fold(round),
    builtins.divmod: _fold(divmod),
    builtins.pow: _fold(pow),
    builtins.all: _any_all(False),
    builtins.any: _any_all(True),
    builtins.next: _next,
    builtins.sorted: _fold(sorted),
    builtins.slice: _fold(slice),
    builtins.zip: _zip,
    builtins.enumerate: _enumerate,
    builtins.tuple: _tuple,
    builtins.list: _list,
    builtins.dict: _dict,
    builtins.reversed: _reversed,
    builtins.iter: _iter,
    builtins.sum: _sum,
    builtins.type: _type,
    builtins.getattr: _getattr,
    builtins.hasattr: _fold(hasattr),
    np.broadcast_shapes: _broadcast_shapes,
    object.__setattr__: _object_setattr,
    **{getattr(math, name): _math_function(getattr(math, name)) for name in MATH_FUNCTIONS},
}

# NOTE: NumPy callables that are pure on constants (dtype queries) fold when no binding claims them.
_NUMPY_FOLDABLE: tuple[Any, ...] = (
    np.dtype,
    np.finfo,
    np.iinfo,
    np.result_type,
    np.promote_types,
    np.can_cast,
    np.issubdtype,
    np.isdtype,
    np.min_scalar_type,
)


def builtin_handler(fn: Any) -> Handler | None:
    """The capture-time implementation of builtin `fn`, or None.

    >>> builtin_handler(len) is _len
    True
    """
    try:
        found = _BUILTINS.get(fn)
    except TypeError:  # unhashable callables
        return None
    if found is not None:
        return found
    if getattr(fn, "__module__", None) == "math" or fn in _NUMPY_FOLDABLE:
        return _fold(fn)
    if isinstance(fn, type) and issubclass(fn, np.generic):
        return _numpy_scalar(fn)
    return None


# Methods of containers, evaluated on variables: (type, name) -> handler(receiver, args, kwargs).
MethodHandler = Callable[["Tracer", Variable, list[Variable], dict[str, Variable]], Variable]


def _list_append(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, ListVar)
    check_mutable(tracer, this)
    this.items.append(args[0])
    return ConstantVar(None)


def _list_extend(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, ListVar)
    check_mutable(tracer, this)
    this.items.extend(iterate(tracer, args[0]))
    return ConstantVar(None)


def _list_insert(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, ListVar)
    check_mutable(tracer, this)
    this.items.insert(args[0].as_python_constant(), args[1])
    return ConstantVar(None)


def _list_pop(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, ListVar)
    check_mutable(tracer, this)
    return this.items.pop(*(arg.as_python_constant() for arg in args))


def _list_reverse(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, ListVar)
    check_mutable(tracer, this)
    this.items.reverse()
    return ConstantVar(None)


def _copy(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    if isinstance(this, ListVar):
        return ListVar(list(this.items))
    assert isinstance(this, DictVar)
    return DictVar(dict(this.items))


def _dict_keys(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, DictVar)
    return ListVar([ConstantVar(key) for key in this.items])


def _dict_values(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, DictVar)
    return ListVar(list(this.items.values()))


def _dict_items(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, DictVar)
    return ListVar([TupleVar((ConstantVar(k), v)) for k, v in this.items.items()])


def _dict_get(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, DictVar)
    key = args[0].as_python_constant()
    default = args[1] if len(args) > 1 else ConstantVar(None)
    return this.items.get(key, default)


def _dict_update(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, DictVar)
    check_mutable(tracer, this)
    other = _dict(tracer, args, kw)
    assert isinstance(other, DictVar)
    this.items.update(other.items)
    return ConstantVar(None)


def _dict_pop(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, DictVar)
    check_mutable(tracer, this)
    key = args[0].as_python_constant()
    if len(args) > 1:
        return this.items.pop(key, args[1])
    return this.items.pop(key)


def _sequence_index(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, TupleVar | ListVar)
    for position, item in enumerate(this.items):
        if truth(tracer, binary(tracer, "eq", item, args[0])):
            return ConstantVar(position)
    raise ValueError(f"{args[0].describe()} is not in {this.python_type().__name__}")


def _sequence_count(tracer: Tracer, this: Variable, args: list[Variable], kw: Any) -> Variable:
    assert isinstance(this, TupleVar | ListVar)
    found = [truth(tracer, binary(tracer, "eq", item, args[0])) for item in this.items]
    return ConstantVar(sum(found))


_METHODS: dict[tuple[type, str], MethodHandler] = {
    (ListVar, "append"): _list_append,
    (ListVar, "extend"): _list_extend,
    (ListVar, "insert"): _list_insert,
    (ListVar, "pop"): _list_pop,
    (ListVar, "reverse"): _list_reverse,
    (ListVar, "copy"): _copy,
    (ListVar, "index"): _sequence_index,
    (ListVar, "count"): _sequence_count,
    (TupleVar, "index"): _sequence_index,
    (TupleVar, "count"): _sequence_count,
    (DictVar, "keys"): _dict_keys,
    (DictVar, "values"): _dict_values,
    (DictVar, "items"): _dict_items,
    (DictVar, "get"): _dict_get,
    (DictVar, "update"): _dict_update,
    (DictVar, "pop"): _dict_pop,
    (DictVar, "copy"): _copy,
}


def container_method(receiver: Variable, name: str) -> MethodHandler | None:
    """The capture-time implementation of `receiver.name(...)` for a tuple, list or dict."""
    return _METHODS.get((type(receiver), name))
