"""Python operators on variables: folded at capture time or recorded through the bindings.

Operators on values known at capture time (shapes, loop counters, constants)
run now, in Python, and give constants. An operator with an array operand
becomes graph nodes through `lookup_operator` of the NumPy bindings. Truth
values of arrays are data: branching on them is not supported yet.

    >>> from numpile_capture.variables import ConstantVar
    >>> truth(None, ConstantVar(0))
    False
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import numpy as np

from numpile_guards import ExpressionSource
from numpile_guards.symbolic import SymInt, is_size_expr, wrap_size

from .bound_origins import nested_origins, note_loop_bounds, with_origins
from .capture_result import Unsupported
from .dynamic_shapes import active_shape_env
from .graph import Graph, Node, writeable
from .guarded_scalars import (
    argument,
    derived_binary,
    derived_unary,
    fits,
    guarded_truth,
    has_expression,
    operand,
    untracked_origin,
)
from .loop_bounds import size_node
from .loop_exit import LoopFallback
from .loop_index import combine, opaque_int
from .loop_sources import ZipVar, materialize
from .meta import ArrayMeta
from .op import get_op
from .ops._shapes import is_c_contiguous, is_f_contiguous
from .ops.extern import RunTimeSize
from .ops.loop_values import PY_OPERATORS, ScalarSlot, python_scalar_type
from .scalar_operators import SCALAR_OPERATORS
from .variables import (
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    IteratorVar,
    ListVar,
    ModuleVar,
    NotConstantError,
    ScalarInputVar,
    ScalarNodeVar,
    SliceVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .tracer import Tracer

# NOTE: a for loop (or any unpacking) over more items than this is not unrolled.
MAX_UNROLL = 1000


@attrs.frozen
class ArrayFlags:
    """`x.flags` of a traced array: contiguity from its metadata, folded at capture time.

    The array guard checks strides, so contiguity is guarded; whether an input
    is writeable is not, so `writeable` of an input (or a view of one) is
    unsupported.

    >>> flags = ArrayFlags.of(ArrayMeta((2, 3), "float32", (1, 2)), True)
    >>> flags.c_contiguous, flags.f_contiguous, flags["F"]
    (False, True, True)
    """

    c_contiguous: bool
    f_contiguous: bool
    known_writeable: bool | None

    @classmethod
    def of(cls, meta: ArrayMeta, writeable: bool | None) -> ArrayFlags:
        return cls(is_c_contiguous(meta), is_f_contiguous(meta), writeable)

    @property
    def writeable(self) -> bool:
        if self.known_writeable is None:
            raise Unsupported("not supported yet: flags.writeable of an input array (not guarded)")
        return self.known_writeable

    @property
    def forc(self) -> bool:
        return self.c_contiguous or self.f_contiguous

    @property
    def fnc(self) -> bool:
        return self.f_contiguous and not self.c_contiguous

    def __getitem__(self, key: str) -> bool:
        names = {"C": "c_contiguous", "CONTIGUOUS": "c_contiguous", "F": "f_contiguous"}
        names.update({"FORTRAN": "f_contiguous", "W": "writeable"})
        attribute = names.get(key, key.lower())
        if attribute not in ("c_contiguous", "f_contiguous", "writeable", "forc", "fnc"):
            raise KeyError(f"Unknown flag {key}")
        value: bool = getattr(self, attribute)
        return value


def size_value(dim: Any) -> Any:
    """A size as traced Python code sees it: an int, or a `SymInt` over the capture's symbols.

    >>> size_value(3)
    3
    """
    if isinstance(dim, int):
        return dim
    env = active_shape_env()
    known = {info.symbol for info in env.symbols()} if env is not None else set()
    if env is None or not dim.free_symbols <= known:
        # An unbacked size (a boolean mask's count): its value exists only at run time.
        raise Unsupported(f"not supported yet: using the data-dependent size {dim} in Python")
    return wrap_size(dim, env)


def specialized(value: Any) -> Any:
    """`value` with every `SymInt` inside pinned to its current int (guarded).

    Static parameters of graph nodes must be plain Python values: the graph is
    reused for every size its guards admit.

        >>> specialized((1, [2]))
        (1, [2])
    """
    if isinstance(value, SymInt):
        return int(value)
    if is_size_expr(value):
        return specialized(size_value(value))
    if type(value) is tuple:
        return tuple(specialized(item) for item in value)
    if type(value) is list:
        return [specialized(item) for item in value]
    if type(value) is dict:
        return {key: specialized(item) for key, item in value.items()}
    if isinstance(value, slice):
        return slice(specialized(value.start), specialized(value.stop), specialized(value.step))
    return value


# NOTE: array attributes computed from metadata at capture time (no graph node).
STATIC_ARRAY_ATTRIBUTES: dict[str, Callable[[ArrayVar], Any]] = {
    "flags": lambda var: ArrayFlags.of(var.meta, writeable(var.node)),
    "shape": lambda var: tuple(size_value(d) for d in var.meta.shape),
    "dtype": lambda var: var.meta.dtype,
    "ndim": lambda var: var.meta.ndim,
    "size": lambda var: size_value(var.meta.numel),
    "itemsize": lambda var: var.meta.dtype.itemsize,
    "nbytes": lambda var: size_value(var.meta.numel * var.meta.dtype.itemsize),
}

DATA_DEPENDENT = "not supported yet: branching on array values (data-dependent control flow)"


class Binding(Protocol):
    """How one NumPy callable, method, attribute or operator becomes graph nodes."""

    def apply(self, graph: Graph, *args: Any, **kwargs: Any) -> Any: ...


class Bindings(Protocol):
    """The NumPy-to-graph mapping the tracer consults (`numpy_bindings` or a test fake)."""

    @property
    def UnsupportedCall(self) -> type[Exception]: ...  # noqa: N802 - the module's class name

    def lookup_function(self, fn: Any) -> Binding | None: ...

    def lookup_method(self, name: str) -> Binding | None: ...

    def lookup_attribute(self, name: str) -> Binding | None: ...

    def lookup_operator(self, name: str) -> Binding: ...


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "and": operator.and_,
    "floordiv": operator.floordiv,
    "lshift": operator.lshift,
    "matmul": operator.matmul,
    "mul": operator.mul,
    "mod": operator.mod,
    "or": operator.or_,
    "pow": operator.pow,
    "rshift": operator.rshift,
    "sub": operator.sub,
    "truediv": operator.truediv,
    "xor": operator.xor,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "ge": operator.ge,
}

_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "pos": operator.pos,
    "invert": operator.invert,
    "abs": abs,
}

COMPARE_NAMES = {"<": "lt", "<=": "le", "==": "eq", "!=": "ne", ">": "gt", ">=": "ge"}


def to_graph_value(var: Variable) -> Any:
    """The argument a binding receives for `var`: a Node, or a Python value with Nodes inside."""
    if isinstance(var, ArrayVar):
        return var.node
    if isinstance(var, TupleVar):
        return tuple(to_graph_value(item) for item in var.items)
    if isinstance(var, ListVar):
        return [to_graph_value(item) for item in var.items]
    if isinstance(var, DictVar):
        return {key: to_graph_value(item) for key, item in var.items.items()}
    if isinstance(var, ConstantVar):
        return specialized(var.value)
    if isinstance(var, ScalarInputVar):
        return var.as_python_constant()
    if isinstance(var, ScalarNodeVar):
        return var.node
    if isinstance(var, CallableVar):
        return var.value
    raise Unsupported(f"not supported yet: passing a {var.describe()} to NumPy")


def from_graph_value(value: Any) -> Variable:
    """The variable for a binding's result: Nodes become arrays, containers stay containers."""
    if isinstance(value, Node):
        return ArrayVar(value)
    if type(value) is tuple:
        return TupleVar(tuple(from_graph_value(item) for item in value))
    if type(value) is list:
        return ListVar([from_graph_value(item) for item in value])
    if type(value) is dict:
        return DictVar({key: from_graph_value(item) for key, item in value.items()})
    if callable(value) and not isinstance(value, type):
        return CallableVar(value)
    return ConstantVar(value)


def apply_binding(
    tracer: Tracer, binding: Binding, *args: Variable, **kwargs: Variable
) -> Variable:
    """Record `binding` applied to variables; UnsupportedCall becomes Unsupported.

    A binding with `scalar_operands` (ufuncs, operators) takes int and float
    inputs next to arrays as weak scalar graph inputs instead of constants.
    """
    takes_scalars = getattr(binding, "scalar_operands", False)
    power = getattr(binding, "name", "") in _POWER_OPERATORS
    plain = _sizes_kept(tracer) if getattr(binding, "run_time_sizes", False) else to_graph_value
    graph_args = [
        _scalar_operand(tracer, arg, args, power and index == 1) if takes_scalars else plain(arg)
        for index, arg in enumerate(args)
    ]
    graph_kwargs = {key: plain(value) for key, value in kwargs.items()}
    try:
        result = binding.apply(tracer.graph, *graph_args, **graph_kwargs)
    except tracer.bindings.UnsupportedCall as exc:
        reason = str(exc)
        if not reason.startswith("not supported yet"):
            reason = f"not supported yet: {reason}"
        raise Unsupported(reason) from None
    if plain is not to_graph_value and isinstance(result, Node):
        # A shape from baked-in ints (`np.arange(n)`): its sizes remember them.
        tracer.builder.note_created(result, nested_origins((*args, *kwargs.values())))
    return from_graph_value(result)


def ufunc_call_operands(tracer: Tracer, fn: Any, args: list[Variable]) -> list[Variable]:
    """The operands to record for the call `fn(*args)`: a ufunc that NumPy scalars also
    apply as an operator (`np.multiply`, see `scalar_operators`), called on 0-d values
    only, gets its first 0-d operand as a 0-d array (a `copy`), as NumPy's ufunc machinery
    converts it: every run of the graph then applies the ufunc, not the scalars' operator,
    and warns as eager does for that spelling (`np.multiply` wraps integers silently; a
    float overflow names "multiply", not "scalar multiply").

    >>> ufunc_call_operands(tracer, np.multiply, [a, b])  # doctest: +SKIP
    [ArrayVar(v1 = copy(a)), ArrayVar(b)]
    """
    if not isinstance(fn, np.ufunc) or fn.__name__ not in SCALAR_OPERATORS:
        return args
    scalars: list[tuple[int, Any]] = []
    for index, arg in enumerate(args):
        if isinstance(arg, ArrayVar) and isinstance(arg.node.meta, ArrayMeta):
            if arg.node.meta.shape != () or arg.node.meta.device != "cpu":
                return args  # an array operand (CuPy's 0-d values are arrays): the ufunc
            scalars.append((index, arg.node))
        elif isinstance(arg, ConstantVar) and isinstance(arg.value, np.generic):
            scalars.append((index, arg.value))
    if not scalars:
        return args
    first, value = scalars[0]
    as_array = ArrayVar(tracer.graph.call(get_op("copy"), value))
    return [as_array if index == first else arg for index, arg in enumerate(args)]


def _sizes_kept(tracer: Tracer) -> Callable[[Variable], Any]:
    # to_graph_value, but a symbolic size stays a `RunTimeSize` (the binding pins or keeps it).
    def kept(value: Any) -> Any:
        if isinstance(value, SymInt):
            return RunTimeSize(value, lambda: _size_value_node(tracer, value))
        if is_size_expr(value):
            return kept(size_value(value))
        if type(value) in (tuple, list):
            return type(value)(kept(item) for item in value)
        return value

    def convert(var: Variable) -> Any:
        if isinstance(var, ConstantVar):
            return kept(var.value)
        if isinstance(var, ScalarInputVar):
            size = tracer.builder.int_size(var)  # an int input as a size symbol, where it can
            if size is not None:
                return RunTimeSize(size, var.node)
        if isinstance(var, TupleVar):
            return tuple(convert(item) for item in var.items)
        if isinstance(var, ListVar):
            return [convert(item) for item in var.items]
        return to_graph_value(var)

    return convert


def _size_value_node(tracer: Tracer, value: SymInt) -> Any:
    # The graph value computing `value` at run time; None when no input's shape gives it.
    try:
        return size_node(tracer, value.expr)
    except LoopFallback:
        return None


# NOTE: the C wrappers of compiled graphs read an int graph input as a signed 64-bit value.
_INT64 = np.iinfo(np.int64)


# NOTE: `array ** k` computes a Python int k of -1 or 2 or a Python float k of 0.5 with
# another ufunc in NumPy (reciprocal, square, sqrt: their result dtype, their warnings); such
# a k is specialized, and a graph taking k as an input is guarded to other values.
_POWER_OPERATORS = ("operator.pow", "operator.ipow")
_FAST_POWERS: dict[type, tuple[int | float, ...]] = {int: (-1, 2), float: (0.5,)}


def _scalar_operand(
    tracer: Tracer, var: Variable, args: tuple[Variable, ...], exponent: bool
) -> Any:
    # An unspecialized int or float operand of a ufunc or operator: its graph input, guarded
    # for ints to the range NumPy converts without OverflowError; otherwise what
    # to_graph_value gives. With no array beside it (`np.sqrt(1 - 0.999 ** t)`) the graph
    # computes NumPy's 0-d result, a NumPy scalar, instead of baking in this call's value.
    size = isinstance(var, ConstantVar) and isinstance(var.value, SymInt)
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        # A symbolic size in arithmetic with arrays (`x * x.shape[0]`) stays symbolic: the
        # graph takes it as an int input, so one entry serves every size.
        var = tracer.builder.size_input(var.value)
    if not isinstance(var, ScalarInputVar):
        return to_graph_value(var)
    arrays = [arg.meta.dtype for arg in args if isinstance(arg, ArrayVar)]
    if isinstance(var.current, bool):
        return var.as_python_constant()
    assert var.source is not None
    if exponent:
        fast = _FAST_POWERS[type(var.current)]
        if var.current in fast:
            return var.as_python_constant()
        tracer.builder.guard_relation(
            f"{var.source.name} not in {fast}", "NumPy's fast scalar powers"
        )
    if isinstance(var.current, int):
        lo, hi = int(_INT64.min), int(_INT64.max)
        target = np.result_type(*arrays, 0)
        if target.kind in "iu":
            info = np.iinfo(target)
            lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        if not lo <= var.current <= hi:
            return var.as_python_constant()  # NumPy raises (or compares) on this value
        if size and lo <= 0 and hi == int(_INT64.max):
            return var.node()  # a size is in [0, 2**63): nothing to guard
        text = f"{lo} <= {var.source.name} <= {hi}"
        tracer.builder.guard_relation(text, f"converted to {target.name}")
    return var.node()


def _constant(var: Variable) -> tuple[bool, Any]:
    if isinstance(var, ArrayVar):
        return False, None
    try:
        return True, var.as_python_constant()
    except NotConstantError:
        return False, None


# The op of each Python operator NumPy scalars apply (the first name of `SCALAR_OPERATORS`).
_OPS_OF_OPERATORS: dict[Callable[..., Any], str] = {}
for _op_name, _fn in SCALAR_OPERATORS.items():
    _OPS_OF_OPERATORS.setdefault(_fn, _op_name)


def _warning_node(tracer: Tracer, fn: Callable[..., Any], *values: Any) -> Variable | None:
    # NumPy scalar math that warns or raises on these constants (`np.int64(2**62) * 4`
    # overflows): a graph node rather than the value folded here, so each call warns from
    # the user's line under its own error state, as eager does. None: fold it.
    op_name = _OPS_OF_OPERATORS.get(fn)
    if op_name is None or not any(isinstance(value, np.generic) for value in values):
        return None
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            fn(*values)
        except (FloatingPointError, RuntimeWarning):
            return ArrayVar(tracer.graph.call(get_op(op_name), *values))
        except Exception:  # folding raises it, as eager does
            return None
    return None


def binary(tracer: Tracer, name: str, left: Variable, right: Variable) -> Variable:
    """`left <name> right` for a BINARY_OP or COMPARE_OP name ("add", "iadd", "lt", ...)."""
    inplace = name.startswith("i") and name[1:] in _BINARY
    base = name[1:] if inplace else name
    if isinstance(left, ArrayVar) or isinstance(right, ArrayVar):
        op_name = name if inplace and isinstance(left, ArrayVar) else base
        binding = tracer.bindings.lookup_operator(op_name)
        return derived_binary(base, left, right, apply_binding(tracer, binding, left, right))
    sequence = _sequence_binary(tracer, base, inplace, left, right)
    if sequence is not None:
        return sequence
    if isinstance(left, ScalarNodeVar) or isinstance(right, ScalarNodeVar):
        if base in _ORDERINGS:
            # `it < maxit` tests a loop's run-time counter: the int input (or size) it is
            # compared with bounds the loop, so a new value of it must not compile again.
            note_loop_bounds((left, right))
        return run_time_arithmetic(tracer, base, left, right)
    left, right = _sizes_as_inputs(tracer, base, left, right)
    derived = _scalar_arithmetic(tracer, base, left, right)
    if derived is not None:
        return derived
    left_known, left_value = _constant(left)
    right_known, right_value = _constant(right)
    if left_known and right_known and base in _BINARY:
        warning = _warning_node(tracer, _BINARY[base], left_value, right_value)
        if warning is not None:
            return warning
        folded = tracer.builder.build_unguarded(_BINARY[base](left_value, right_value))
        return with_origins(folded, left, right)
    raise Unsupported(
        f"not supported yet: operator {base} on {left.describe()} and {right.describe()}"
    )


# Python arithmetic that keeps int and float inputs unspecialized (see _scalar_arithmetic).
_SCALAR_SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
}
_DIVISIONS = ("truediv", "floordiv", "mod")
_COMPARISON_SYMBOLS = {name: symbol for symbol, name in COMPARE_NAMES.items()}


# Comparisons whose constant side bounds a run-time counter (`while it < maxit`).
_ORDERINGS = frozenset({"lt", "le", "gt", "ge"})

# Python arithmetic a SymInt can only do on its int (it would specialize the size).
_SIZE_SPECIALIZING = ("truediv", "pow")


def _is_size(var: Variable) -> bool:
    # A symbolic size (`n = x.shape[0]`, `n - 1`).
    return isinstance(var, ConstantVar) and isinstance(var.value, SymInt)


def _sizes_as_inputs(
    tracer: Tracer, name: str, left: Variable, right: Variable
) -> tuple[Variable, Variable]:
    # `n / 2`, `n ** 2`, `lr * n` on a symbolic size n: the size becomes an int graph input
    # (see VariableBuilder.size_input) and the result an unspecialized scalar, not a guard.
    if not (_is_size(left) or _is_size(right)):
        return left, right
    scalar = isinstance(left, ScalarInputVar) or isinstance(right, ScalarInputVar)
    if not scalar and name not in _SIZE_SPECIALIZING:
        return left, right
    sides = []
    for var in (left, right):
        if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
            var = tracer.builder.size_input(var.value)
        sides.append(var)
    return sides[0], sides[1]


def _scalar_arithmetic(
    tracer: Tracer, name: str, left: Variable, right: Variable
) -> ScalarInputVar | None:
    # `lr * 0.5`, `1 - beta ** step` on unspecialized inputs: another unspecialized value,
    # read on each call by evaluating the same Python expression over the inputs. Guards keep
    # Python's own behaviour: divisors stay nonzero, a power keeps its result type. A
    # comparison (`step % 10 == 0`) gives an unspecialized bool: a branch on it guards the
    # comparison's outcome, not the inputs' values.
    symbol = _SCALAR_SYMBOLS.get(name) or _COMPARISON_SYMBOLS.get(name)
    if symbol is None:
        return None
    if not (isinstance(left, ScalarInputVar) or isinstance(right, ScalarInputVar)):
        return None
    left_side, right_side = operand(left), operand(right)
    if left_side is None or right_side is None:
        return None
    (left_text, left_value), (right_text, right_value) = left_side, right_side
    if not fits(left_text + right_text):
        return None  # specialized (guarded) instead
    try:
        value = _BINARY[name](left_value, right_value)
    except ArithmeticError:
        return None  # specialized, Python raises it from the user's line
    if type(value) not in (int, float, bool):
        return None
    builder = tracer.builder
    if name in _DIVISIONS and isinstance(right, ScalarInputVar):
        builder.guard_relation(f"{right_text} != 0", "a divisor")
    source = ExpressionSource(f"{left_text} {symbol} {right_text}")
    if name == "pow":
        builder.guard_type(source, type(value))
    return builder.scalar_input(value, source)


# Builtins and math functions that keep scalar inputs unspecialized, by how they are spelled.
_SCALAR_FUNCTIONS: dict[Any, str] = {
    abs: "abs",
    float: "float",
    int: "int",
    round: "round",
    min: "min",
    max: "max",
    pow: "pow",
    **{
        getattr(math, name): f"math.{name}"
        for name in (
            "sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
            "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "floor", "ceil", "trunc",
            "fabs", "hypot", "copysign", "erf", "erfc", "pow", "isfinite", "isnan", "isinf",
        )
    },
}  # fmt: skip


def scalar_call(
    tracer: Tracer, fn: Any, args: list[Variable], kwargs: dict[str, Variable]
) -> Variable | None:
    """`math.sqrt(1 - 0.999 ** t)`, `max(lr, 1e-4)` on scalar inputs: kept unspecialized.

    The result is read on each call through the same call (an `ExpressionSource`), guarded
    by its type, which also fails (and so recompiles) where the call would raise. None when
    `fn` is not such a function or an argument is no scalar.
    """
    try:
        spelled = _SCALAR_FUNCTIONS.get(fn)
    except TypeError:  # an unhashable callable
        return None
    scalars = [isinstance(a, ScalarInputVar) or has_expression(a) for a in args]
    if spelled is None or kwargs or not any(scalars):
        return None
    sides = [argument(arg) for arg in args]
    if any(side is None for side in sides):
        return None
    texts = [side[0] for side in sides if side is not None]
    values = [side[1] for side in sides if side is not None]
    try:
        value = fn(*values)
    except Exception:
        return None  # specialized: Python raises it from the user's line
    if type(value) not in (int, float, bool):
        return None
    source = ExpressionSource(f"{spelled}({', '.join(str(text) for text in texts)})")
    tracer.builder.guard_type(source, type(value))
    return tracer.builder.scalar_input(value, source)


def scalar_sum(tracer: Tracer, items: list[Variable], start: Variable) -> Variable | None:
    """`sum(items, start)` kept unspecialized when some item is a scalar input (else None).

    Read through `sum(...)` itself: Python 3.12+ adds floats with compensated summation.
    """
    if not any(isinstance(var, ScalarInputVar) for var in [*items, start]):
        return None
    sides = [argument(var) for var in [*items, start]]
    if any(side is None for side in sides):
        return None
    texts = [side[0] for side in sides if side is not None]
    values = [side[1] for side in sides if side is not None]
    value = sum(values[:-1], values[-1])
    if type(value) not in (int, float):
        return None
    *parts, start_text = texts
    source = ExpressionSource(f"sum(({', '.join(str(t) for t in parts)},), {start_text})")
    return tracer.builder.scalar_input(value, source)


def _sequence_binary(
    tracer: Tracer, name: str, inplace: bool, left: Variable, right: Variable
) -> Variable | None:
    # Tuples and lists holding arrays: concatenation and repetition keep the items.
    if isinstance(left, TupleVar | ListVar) and name == "add" and type(left) is type(right):
        assert isinstance(right, TupleVar | ListVar)
        if isinstance(left, ListVar):
            if inplace:
                check_mutable(tracer, left)
                left.items.extend(right.items)
                return left
            return ListVar([*left.items, *right.items])
        return TupleVar((*left.items, *right.items))
    if isinstance(left, ListVar) and name == "add" and inplace:
        check_mutable(tracer, left)
        left.items.extend(iterate(tracer, right))
        return left
    if isinstance(left, TupleVar | ListVar) and name == "mul":
        known, count = _constant(right)
        if known and isinstance(count, int):
            if isinstance(left, TupleVar):
                return TupleVar(left.items * count)
            if inplace:
                check_mutable(tracer, left)
                left.items[:] = left.items * count
                return left
            return ListVar(left.items * count)
    return None


def _run_time_operand(tracer: Tracer, var: Variable) -> Any:
    if isinstance(var, ScalarNodeVar):
        return var.node
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return size_node(tracer, var.value.expr)  # a symbolic size, read at run time
    if isinstance(var, ScalarInputVar) and type(var.current) in (bool, int, float):
        return var.node()
    if isinstance(var, ConstantVar) and type(var.value) in (bool, int, float, complex):
        return var.value
    raise Unsupported(f"not supported yet: Python arithmetic on {var.describe()} in a loop")


def run_time_arithmetic(tracer: Tracer, name: str, left: Variable, right: Variable) -> Variable:
    """`left <name> right` on Python scalars one of which the graph computes at run time
    (a loop's index): a `py_binary` node, with Python's semantics."""
    if name not in PY_OPERATORS:
        raise Unsupported(f"not supported yet: operator {name} on a loop's run-time values")
    operands = (_run_time_operand(tracer, left), _run_time_operand(tracer, right))
    exponent = operands[1]
    integral = python_scalar_type(_operand_meta(exponent)) in (int, bool)
    if name == "pow" and integral and not (isinstance(exponent, int) and exponent >= 0):
        # int ** int is an int or a float depending on the sign of the exponent.
        raise Unsupported("not supported yet: int ** a run-time int inside a loop")
    node = tracer.graph.call(get_op("py_binary"), *operands, operator=name)
    expr = None
    if python_scalar_type(node.meta) is int:
        expr = combine(name, _int_expr(left), _int_expr(right))
    return ScalarNodeVar(node, expr)


def _int_expr(var: Variable) -> Any:
    # The sympy expression of an int operand of loop arithmetic, or None.
    if isinstance(var, ScalarNodeVar):
        return var.expr
    if isinstance(var, ConstantVar) and isinstance(var.value, SymInt):
        return var.value.expr
    if isinstance(var, ConstantVar) and type(var.value) in (int, bool):
        return int(var.value)
    return None


def _operand_meta(value: Any) -> Any:
    # The metadata of a graph operand: a Node's meta, or the constant itself.
    return value.meta if isinstance(value, Node) else value


def compare(tracer: Tracer, symbol: str, left: Variable, right: Variable) -> Variable:
    """A COMPARE_OP ("<", "==", ...)."""
    return binary(tracer, COMPARE_NAMES[symbol], left, right)


def operator_method(
    tracer: Tracer, receiver: Variable, name: str, args: list[Variable], kwargs: dict[str, Any]
) -> Variable | None:
    """`a.__mul__(b)`, `a.__rsub__(b)`, `a.__neg__()` on a NumPy scalar `a` (a 0-d value or
    a constant) as the operator they implement, with the operator's scalar math and
    warnings ("overflow encountered in scalar multiply"), or None for any other method.

    >>> operator_method(tracer, a, "__mul__", [b], {})  # doctest: +SKIP
    """
    if isinstance(receiver, ArrayVar):
        meta = receiver.node.meta
        if not isinstance(meta, ArrayMeta) or meta.shape != ():
            return None  # a Python scalar's method, or an array's
    elif not (isinstance(receiver, ConstantVar) and isinstance(receiver.value, np.generic)):
        return None
    if kwargs or not (name.startswith("__") and name.endswith("__")):
        return None
    base = name[2:-2]
    if len(args) == 1 and base in _BINARY:
        return binary(tracer, base, receiver, args[0])
    if len(args) == 1 and base.startswith("r") and base[1:] in _BINARY:
        return binary(tracer, base[1:], args[0], receiver)
    if not args and base in _UNARY:
        return unary(tracer, base, receiver)
    return None


def unary(tracer: Tracer, name: str, value: Variable) -> Variable:
    """`-x`, `+x`, `~x`, `abs(x)` ("neg", "pos", "invert", "abs")."""
    if isinstance(value, ArrayVar):
        result = apply_binding(tracer, tracer.bindings.lookup_operator(name), value)
        return derived_unary(name, value, result)
    if isinstance(value, ScalarNodeVar):
        if name == "pos":
            return value
        node = tracer.graph.call(get_op("py_unary"), value.node, operator=name)
        negated = value.expr if name == "neg" and python_scalar_type(node.meta) is int else None
        return ScalarNodeVar(node, None if negated is None else -negated)
    if isinstance(value, ScalarInputVar) and name in ("neg", "pos"):
        assert value.source is not None
        symbol = "-" if name == "neg" else "+"
        source = ExpressionSource(f"{symbol}{value.source.name}")
        return tracer.builder.scalar_input(_UNARY[name](value.current), source)
    known, constant = _constant(value)
    if known:
        return _warning_node(tracer, _UNARY[name], constant) or tracer.builder.build_unguarded(
            _UNARY[name](constant)
        )
    raise Unsupported(f"not supported yet: operator {name} on {value.describe()}")


def is_same(left: Variable, right: Variable) -> bool:
    """`left is right`, decided at capture time."""
    if left is right:
        return True
    if isinstance(left, ArrayVar) and isinstance(right, ArrayVar):
        if left.node is right.node:
            return True
        raise Unsupported("not supported yet: `is` between two different arrays")
    mutable = (ArrayVar, TupleVar, ListVar, DictVar, IteratorVar)
    if isinstance(left, mutable) or isinstance(right, mutable):
        return False
    scalar = left if isinstance(left, ScalarInputVar) else right
    if isinstance(scalar, ScalarInputVar) and type(scalar.current) is not bool:
        # `lr is None`: an int or float (its type is guarded) is never a singleton.
        other = right if scalar is left else left
        singletons = (None, True, False, Ellipsis)
        if isinstance(other, ConstantVar) and any(other.value is item for item in singletons):
            return False
    left_known, left_value = _constant(left)
    right_known, right_value = _constant(right)
    if left_known and right_known:
        return left_value is right_value
    return False


def contains(tracer: Tracer, item: Variable, container: Variable) -> bool:
    """`item in container`, decided at capture time."""
    if isinstance(container, DictVar):
        known, key = _constant(item)
        if not known:
            raise Unsupported(f"not supported yet: looking up {item.describe()} in a dict")
        return key in container.items
    if isinstance(container, TupleVar | ListVar):
        return any(
            truth(tracer, binary(tracer, "eq", candidate, item)) for candidate in container.items
        )
    known_item, item_value = _constant(item)
    known, value = _constant(container)
    if known and known_item:
        return bool(item_value in value)
    raise Unsupported(f"not supported yet: `in` on {container.describe()}")


def truth(tracer: Tracer | None, value: Variable) -> bool:
    """`bool(value)` at capture time; arrays are data, so their truth is unsupported.

    A NumPy scalar computed from scalar inputs alone has a known value: its truth is
    guarded (see `guarded_scalars`).
    """
    if isinstance(value, ArrayVar) and value.expression is not None and tracer is not None:
        return guarded_truth(tracer, value)
    if isinstance(value, ArrayVar) and tracer is not None:
        ops = untracked_origin(tracer, value)
        if ops is not None:
            raise Unsupported(
                f"not supported yet: branching on a NumPy scalar that {ops} computed from "
                "scalar inputs (a branch is a guard only on Python operators, abs(), min() "
                "and max() of NumPy scalar inputs that NumPy computes without a warning; "
                "here it is data-dependent control flow)"
            )
    if isinstance(value, ArrayVar | ScalarNodeVar):
        raise Unsupported(DATA_DEPENDENT)
    if isinstance(value, TupleVar | ListVar):
        return len(value.items) > 0
    if isinstance(value, DictVar):
        return len(value.items) > 0
    if isinstance(value, FunctionVar | ModuleVar | CallableVar | BoundMethodVar):
        return True
    if isinstance(value, ScalarInputVar) and type(value.current) is not bool and tracer:
        # `if lr:` holds for every nonzero value: guard that, not the value.
        assert value.source is not None
        result = bool(value.current)
        relation = "!=" if result else "=="
        tracer.builder.guard_relation(f"{value.source.name} {relation} 0", "truth value")
        return result
    known, constant = _constant(value)
    if known:
        return bool(constant)
    raise Unsupported(f"not supported yet: truth value of {value.describe()}")


def getitem(tracer: Tracer, container: Variable, index: Variable) -> Variable:
    """`container[index]`: arrays through the bindings, containers and constants now."""
    if isinstance(container, ArrayVar):
        at = run_time_index(tracer, index)
        if at is not None:
            template, scalars = at
            meta = container.meta
            ints = [item for item in template if not isinstance(item, slice) and item is not None]
            whole = len(ints) == len(template) == meta.ndim and Ellipsis not in template
            name = "element_at" if whole else "getitem_at"
            node = tracer.graph.call(get_op(name), container.node, *scalars, index=template)
            return ArrayVar(node)
        binding = tracer.bindings.lookup_operator("getitem")
        return apply_binding(tracer, binding, container, index)
    known, key = _constant(index)
    if not known:
        raise Unsupported(f"not supported yet: indexing with {index.describe()}")
    if isinstance(container, TupleVar):
        if isinstance(key, slice):
            return TupleVar(container.items[key])
        item: Variable = container.items[key]
        return item
    if isinstance(container, ListVar):
        if isinstance(key, slice):
            return ListVar(container.items[key])
        found: Variable = container.items[key]
        return found
    if isinstance(container, DictVar):
        return container.items[key]
    known_container, value = _constant(container)
    if known_container:
        return tracer.builder.build_unguarded(value[key])
    raise Unsupported(f"not supported yet: indexing {container.describe()}")


def run_time_index(tracer: Tracer, index: Variable) -> tuple[tuple[Any, ...], list[Node]] | None:
    """A basic index holding run-time ints (a loop's index, also as a slice bound) or
    symbolic sizes as a template of `ScalarSlot`s and its scalars; None when the index has
    none."""
    items = list(index.items) if isinstance(index, TupleVar) else [index]
    items = [_integer_scalar_index(tracer, run_time_int(item)) for item in items]
    if not any(isinstance(item, ScalarNodeVar | SliceVar) or _is_size(item) for item in items):
        return None
    template: list[Any] = []
    scalars: list[Node] = []
    for item in items:
        if isinstance(item, ScalarNodeVar):
            if item.python_type() is float:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                    "and integer or boolean arrays are valid indices"
                )
            template.append(_slot(tracer, item, scalars))
            continue
        if isinstance(item, SliceVar):
            parts = (item.start, item.stop, item.step)
            template.append(slice(*(_slice_part(tracer, part, scalars) for part in parts)))
            continue
        if _is_size(item):
            # A symbolic size (`path[n - 1]`, `score[n - 1, k]`) is read at run time too:
            # pinning it would compile the graph again for every size.
            assert isinstance(item, ConstantVar)
            try:
                template.append(_size_slot(tracer, item.value, scalars))
            except LoopFallback:  # a size the graph cannot compute (`max(n - 3, 0)`): pinned
                template.append(int(item.value))
            continue
        known, value = _constant(item)
        if not known or isinstance(value, list | tuple | np.ndarray):
            raise Unsupported(f"not supported yet: indexing with {item.describe()} in a loop")
        value = specialized(value)
        if isinstance(value, slice) or value is None or value is Ellipsis:
            template.append(value)
        else:
            template.append(operator.index(value))
    return tuple(template), scalars


def run_time_int(item: Variable) -> Variable:
    """`item` as a run-time int when it is an unspecialized int input not read yet (automatic
    dynamic: a resumed loop's index, `i + 1` of it), else itself: an index or a slice bound
    then reads its value at run time, as a kept loop's index does, instead of specializing
    it (guarded equal) per value. An integer NumPy scalar made from a run-time int
    (`np.int64(i)`) indexes as that int: it holds the same value, or raised making it.

        >>> run_time_int(ConstantVar(3)).describe()
        '3'
    """
    if isinstance(item, ScalarInputVar) and type(item.current) is int and not item.read:
        return ScalarNodeVar(item.node())
    if isinstance(item, ArrayVar) and item.node.op is get_op("numpy_scalar"):
        (source,) = item.node.inputs
        if item.meta.dtype.kind in "iu" and python_scalar_type(source.meta) is int:
            return ScalarNodeVar(source)
    return item


def _integer_scalar_index(tracer: Tracer, item: Variable) -> Variable:
    # A NumPy integer scalar computed by the graph (`A[idx[0]]`, `best[c - w]`) indexes as
    # its int, through `__index__`: basic indexing (a row is a view of `A`), not the
    # integer-array indexing of a 0-d array (a copy).
    if not isinstance(item, ArrayVar) or item.meta.shape != () or item.meta.dtype.kind not in "iu":
        return item
    if item.python_type() is np.ndarray:
        return item
    return ScalarNodeVar(tracer.graph.call(get_op("python_number"), item.node, kind=int))


def _slot(tracer: Tracer, item: ScalarNodeVar, scalars: list[Node]) -> ScalarSlot:
    # The slot of a run-time int, with its expression (an opaque symbol when it has none).
    expr = item.expr
    if expr is None:
        expr = opaque_int(active_shape_env())
    slot = ScalarSlot(len(scalars), expr)
    scalars.append(item.node)
    return slot


def _size_slot(tracer: Tracer, size: SymInt, scalars: list[Node]) -> ScalarSlot | int:
    # A symbolic size in an index with run-time ints: a slot computing it from the inputs'
    # shapes (the int itself where it is a constant).
    node = size_node(tracer, size.expr)
    if not isinstance(node, Node):
        return int(node)
    return _slot(tracer, ScalarNodeVar(node, size.expr), scalars)


def _slice_part(tracer: Tracer, part: Variable, scalars: list[Node]) -> Any:
    # A bound of a slice with run-time bounds: a slot for a run-time int or a symbolic
    # size (read at run time), else the constant.
    if isinstance(part, ScalarNodeVar):
        if part.python_type() not in (int, bool):
            raise TypeError("slice indices must be integers or None or have an __index__ method")
        return _slot(tracer, part, scalars)
    if isinstance(part, ConstantVar) and isinstance(part.value, SymInt):
        return _size_slot(tracer, part.value, scalars)
    known, value = _constant(part)
    if not known or not (value is None or isinstance(value, int)):
        raise Unsupported(f"not supported yet: a slice bound {part.describe()} in a loop")
    return value


def check_mutable(tracer: Tracer, container: Variable) -> None:
    """Note a mutation of `container`: one the caller passed in is a side effect to replay."""
    if container.source is not None:
        tracer.side_effects.mutate(container)


def setitem(tracer: Tracer, container: Variable, index: Variable, value: Variable) -> None:
    """`container[index] = value`: arrays through the in-place binding, new containers now."""
    if isinstance(container, ArrayVar):
        at = run_time_index(tracer, index)
        if at is not None:
            template, scalars = at
            assigned = to_graph_value(value)
            tracer.graph.call(
                get_op("setitem_at"), container.node, assigned, *scalars, index=template
            )
            return
        binding = tracer.bindings.lookup_operator("setitem")
        apply_binding(tracer, binding, container, index, value)
        return
    known, key = _constant(index)
    if not known:
        raise Unsupported(f"not supported yet: indexing with {index.describe()}")
    if isinstance(container, ListVar):
        check_mutable(tracer, container)
        if isinstance(key, slice):
            container.items[key] = iterate(tracer, value)
        else:
            container.items[key] = value
        return
    if isinstance(container, DictVar):
        check_mutable(tracer, container)
        container.items[key] = value
        return
    raise Unsupported(f"not supported yet: item assignment on {container.describe()}")


def iterate(tracer: Tracer, iterable: Variable) -> list[Variable]:
    """The items `iter(iterable)` would produce, all known now (loops over them are unrolled)."""
    if isinstance(iterable, TupleVar | ListVar):
        return list(iterable.items)
    if isinstance(iterable, DictVar):
        return [ConstantVar(key) for key in iterable.items]
    if isinstance(iterable, IteratorVar):
        return iterable.remaining()
    if isinstance(iterable, ZipVar):
        return materialize(tracer, iterable)
    if isinstance(iterable, ArrayVar):
        shape = iterable.meta.shape
        if not shape:
            raise TypeError("iteration over a 0-d array")
        count = specialized(size_value(shape[0]))
        _check_unroll(count)
        return [getitem(tracer, iterable, ConstantVar(i)) for i in range(count)]
    known, value = _constant(iterable)
    if known and isinstance(value, range | tuple | str | bytes | list | dict):
        _check_unroll(len(value))
        return [tracer.builder.build_unguarded(item) for item in value]
    if known:
        iter(value)  # raises TypeError as Python would for a non-iterable
    raise Unsupported(f"not supported yet: iterating over {iterable.describe()}")


def _check_unroll(count: Any) -> None:
    if not isinstance(count, int) or count > MAX_UNROLL:
        raise Unsupported(
            f"not supported yet: a loop of {count} iterations (loops are unrolled up to "
            f"{MAX_UNROLL})"
        )
