"""Variables: the abstract values the tracer pushes, pops and stores.

Each Python value the traced code touches is modelled by one small class:
a `ConstantVar` for values known at capture time, an `ArrayVar` for an array
that lives in the graph (a `Node`), containers of variables, functions to
inline, modules, callables that map to graph ops, and bound methods. A
variable read from the function's inputs or globals remembers its `source`,
so guards can name it.

    >>> ConstantVar(3).as_python_constant()
    3
    >>> TupleVar((ConstantVar(1), ConstantVar(2))).as_python_constant()
    (1, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from types import CellType, CodeType, FunctionType, GeneratorType, ModuleType
from typing import Any

import attrs
import numpy as np

from numpile_guards import Source

from .graph import Node, gives_scalar
from .meta import ArrayMeta, ScalarMeta


class NotConstantError(Exception):
    """Raised by `as_python_constant` on a variable whose value is not known at capture time."""


@attrs.define(eq=False)
class Variable:
    """Base of all variables; `source` says where an input or global came from."""

    source: Source | None = attrs.field(default=None, kw_only=True)

    def as_python_constant(self) -> Any:
        """The Python value, when it is fully known at capture time."""
        raise NotConstantError(type(self).__name__)

    def is_python_constant(self) -> bool:
        try:
            self.as_python_constant()
        except NotConstantError:
            return False
        return True

    def python_type(self) -> type:
        return type(self.as_python_constant())

    def describe(self) -> str:
        """A short text for error messages."""
        return type(self).__name__


@attrs.frozen(eq=False)
class NullVar(Variable):
    """The NULL that CPython pushes next to a callable (no `self` for this call)."""

    def describe(self) -> str:
        return "NULL"


NULL = NullVar()


@attrs.frozen(eq=False)
class ConstantVar(Variable):
    """A value known at capture time: a number, string, None, dtype, slice, range, ...

    >>> ConstantVar(np.dtype("float32")).as_python_constant()
    dtype('float32')
    """

    value: Any

    def as_python_constant(self) -> Any:
        return self.value

    def describe(self) -> str:
        return repr(self.value)


@attrs.define(eq=False)
class ScalarInputVar(Variable):
    """A Python int or float input compiled unspecialized: a weak scalar graph input.

    As an operand of a NumPy ufunc or operator it is the placeholder `node()`
    makes (once); any other use reads its value through `as_python_constant`,
    which specializes it (`on_read` adds the EQUALS_MATCH guard, once).

        >>> var = ScalarInputVar(0.5, lambda: None, lambda: None)
        >>> var.python_type(), var.as_python_constant()
        (<class 'float'>, 0.5)
    """

    current: int | float
    make_node: Callable[[], Node] = attrs.field(repr=False)
    on_read: Callable[[], None] = attrs.field(repr=False)
    _node: Node | None = attrs.field(default=None, init=False, repr=False)
    _read: bool = attrs.field(default=False, init=False)

    def node(self) -> Node:
        """The graph input holding the value at call time (made on first use)."""
        if self._node is None:
            self._node = self.make_node()
        return self._node

    @property
    def read(self) -> bool:
        """Whether capture has read the value (it is then specialized, guarded equal)."""
        return self._read

    def as_python_constant(self) -> Any:
        if not self._read:
            self._read = True
            self.on_read()
        return self.current

    def is_python_constant(self) -> bool:
        return True

    def python_type(self) -> type:
        return type(self.current)

    def describe(self) -> str:
        return f"{type(self.current).__name__} input {self.current!r}"


def known_constant(var: Variable) -> Variable:
    """`var` as a ConstantVar when it is an unspecialized scalar (specializing it), else itself.

    For code that needs a value known at capture time (slice bounds, formatting).

        >>> known_constant(ScalarInputVar(3, lambda: None, lambda: None)).describe()
        '3'
    """
    if isinstance(var, ScalarInputVar):
        return ConstantVar(var.as_python_constant())
    return var


@attrs.frozen
class ScalarExpression:
    """What a NumPy scalar computed only from scalar inputs is: the Python expression
    `text` over sources (`L['a'] > 0`) that gives it, and `value`, what it gives on the
    inputs being captured (NumPy computed it on those very objects). A `compound` text
    (an operator's) is parenthesized where it is an operand (`operand_text`).

    Capture branches on such a scalar by guarding the expression's outcome (see
    `guarded_scalars`) instead of breaking the graph.

        >>> ScalarExpression("L['a'] > 0", np.True_, compound=True).operand_text
        "(L['a'] > 0)"
    """

    text: str
    value: Any
    compound: bool = attrs.field(default=False, kw_only=True)

    @property
    def operand_text(self) -> str:
        return f"({self.text})" if self.compound else self.text


@attrs.frozen(eq=False)
class ArrayVar(Variable):
    """An array computed by the graph: `node` is the node that produces it.

    `expression` is set on a NumPy scalar that only scalar inputs and constants made (a
    NumPy scalar argument, `a > 0` of it): capture knows its value and how to compute it
    again from the next call's inputs.

    >>> from numpile_capture import Graph
    >>> ArrayVar(Graph().placeholder("x", ArrayMeta((2,), "float64"))).meta.shape
    (2,)
    """

    node: Node
    expression: ScalarExpression | None = attrs.field(default=None, kw_only=True)

    @property
    def meta(self) -> ArrayMeta:
        meta = self.node.meta
        if not isinstance(meta, ArrayMeta):
            return ArrayMeta((), np.dtype(meta.type))
        return meta

    def python_type(self) -> type:
        # A 0-d value NumPy gives as a scalar (a NumPy scalar input, `x.sum()`) is one of its
        # dtype's scalar type, so `type(s)` and `isinstance(s, np.floating)` answer as eager.
        meta = self.meta
        if meta.shape == () and gives_scalar(self.node):
            return meta.dtype.type
        return np.ndarray

    def describe(self) -> str:
        return f"array {self.node.name}: {self.node.meta}"


@attrs.frozen(eq=False)
class ScalarNodeVar(Variable):
    """A Python bool, int or float the graph computes at run time (a loop's index, `i + 1`).

    Its value is not known at capture time: Python arithmetic on it adds `py_binary`
    nodes, NumPy treats it as a weak scalar operand, and it may index arrays.

        >>> from numpile_capture import Graph, ScalarMeta
        >>> ScalarNodeVar(Graph().placeholder("i", ScalarMeta(int))).python_type()
        <class 'int'>
    """

    node: Node
    # The int's value as a sympy expression over loop indices and sizes (`i0 + 1`), when
    # it has one (see loop_index): slices bounded by it get symbolic lengths.
    expr: Any = None

    def python_type(self) -> type:
        meta = self.node.meta
        assert isinstance(meta, ScalarMeta)
        return meta.type

    def describe(self) -> str:
        return f"run-time {self.python_type().__name__} {self.node.name}"


@attrs.frozen(eq=False)
class SliceVar(Variable):
    """A slice with a bound computed at run time (`x[i:]`, `A[i, :j]` in a loop body).

    >>> SliceVar(ConstantVar(None), ConstantVar(2), ConstantVar(None)).python_type()
    <class 'slice'>
    """

    start: Variable
    stop: Variable
    step: Variable

    def python_type(self) -> type:
        return slice

    def describe(self) -> str:
        parts = (self.start.describe(), self.stop.describe(), self.step.describe())
        return "slice(" + ", ".join(parts) + ")"


@attrs.frozen(eq=False)
class TupleVar(Variable):
    """A tuple of variables.

    >>> TupleVar((ConstantVar("a"),)).python_type()
    <class 'tuple'>
    """

    items: tuple[Variable, ...]

    def as_python_constant(self) -> Any:
        return tuple(item.as_python_constant() for item in self.items)

    def python_type(self) -> type:
        return tuple


@attrs.frozen(eq=False)
class ListVar(Variable):
    """A list of variables; `items` is mutated in place, as the list is.

    >>> ListVar([ConstantVar(1)]).as_python_constant()
    [1]
    """

    items: list[Variable]

    def as_python_constant(self) -> Any:
        return [item.as_python_constant() for item in self.items]

    def python_type(self) -> type:
        return list


@attrs.frozen(eq=False)
class DictVar(Variable):
    """A dict from constant keys to variables, in insertion order.

    >>> DictVar({"a": ConstantVar(1)}).as_python_constant()
    {'a': 1}
    """

    items: dict[Any, Variable]

    def as_python_constant(self) -> Any:
        return {key: value.as_python_constant() for key, value in self.items.items()}

    def python_type(self) -> type:
        return dict


@attrs.define(eq=False)
class IteratorVar(Variable):
    """An iterator over variables already known (loops over it are unrolled).

    >>> it = IteratorVar([ConstantVar(1)])
    >>> it.next_item().as_python_constant(), it.next_item()
    (1, None)
    """

    items: list[Variable]
    position: int = 0

    def next_item(self) -> Variable | None:
        if self.position >= len(self.items):
            return None
        self.position += 1
        return self.items[self.position - 1]

    def remaining(self) -> list[Variable]:
        rest = self.items[self.position :]
        self.position = len(self.items)
        return rest


@attrs.define(eq=False)
class GeneratorVar(IteratorVar):
    """A generator made by calling a user generator function inside the captured code.

    Its frame is traced lazily: `next_item()` runs it to its next `yield`
    (`advance`, set by the tracer), so the consumer and the generator
    interleave as in Python. `call` keeps the function and arguments of the
    call, to make the generator again in Python when it is live, not started,
    at a graph break.

        >>> gen = GeneratorVar([], advance=lambda: None)
        >>> gen.next_item() is None, gen.started
        (True, True)
    """

    advance: Callable[[], Variable | None] | None = attrs.field(default=None, kw_only=True)
    call: tuple[Variable, list[Variable], dict[str, Variable]] | None = attrs.field(
        default=None, kw_only=True
    )
    started: bool = attrs.field(default=False, kw_only=True)

    def next_item(self) -> Variable | None:
        self.started = True
        assert self.advance is not None
        return self.advance()

    def remaining(self) -> list[Variable]:
        rest: list[Variable] = []
        item = self.next_item()
        while item is not None:
            rest.append(item)
            item = self.next_item()
        return rest

    def python_type(self) -> type:
        return GeneratorType

    def describe(self) -> str:
        return "generator"


@attrs.define(eq=False)
class CellVar(Variable):
    """A closure cell: `contents` once known; `real` is the CPython cell it models, if any.

    >>> CellVar(ConstantVar(2)).contents.as_python_constant()
    2
    """

    contents: Variable | None = None
    real: CellType | None = None


@attrs.frozen(eq=False)
class FunctionVar(Variable):
    """A Python function to inline: its code, globals, defaults and closure.

    `fn` is the real function when there is one (read from an input or a
    global); functions made by the traced code (nested defs, lambdas,
    comprehensions) have `fn = None` and variables for defaults and cells.
    `globals_source(name)` gives the source of a global this function reads.
    """

    code: CodeType
    globals: dict[str, Any]
    globals_base: Source | None
    defaults: tuple[Variable, ...] | None
    kwdefaults: dict[str, Variable]
    closure: tuple[CellVar, ...]
    # NOTE: a FunctionType or None; typed Any because mypy binds FunctionType attributes.
    fn: Any
    # NOTE: trusted functions (polyfills) read their globals unguarded: they are library code.
    trusted: bool = attrs.field(default=False, kw_only=True)

    def as_python_constant(self) -> Any:
        if self.fn is None:
            raise NotConstantError("function made during capture")
        return self.fn

    def python_type(self) -> type:
        return FunctionType

    def describe(self) -> str:
        return f"function {self.code.co_qualname}"


@attrs.frozen(eq=False)
class ModuleVar(Variable):
    """A module such as `numpy` or `math`; attributes read from it are guarded by identity."""

    module: ModuleType

    def as_python_constant(self) -> Any:
        return self.module

    def describe(self) -> str:
        return f"module {self.module.__name__}"


@attrs.frozen(eq=False)
class CallableVar(Variable):
    """A builtin, a NumPy callable (function, ufunc, scalar type) or another class.

    >>> CallableVar(len).describe()
    'len'
    """

    value: Any

    def as_python_constant(self) -> Any:
        return self.value

    def describe(self) -> str:
        module = getattr(self.value, "__module__", None)
        name = getattr(self.value, "__qualname__", None) or getattr(self.value, "__name__", "?")
        return f"{module}.{name}" if module not in (None, "builtins") else str(name)


@attrs.frozen(eq=False)
class BoundMethodVar(Variable):
    """`receiver.name` looked up for a call: a method of an array, list, dict or constant."""

    receiver: Variable
    name: str

    def describe(self) -> str:
        return f"method {self.name} of {self.receiver.describe()}"


@attrs.frozen(eq=False)
class OpaqueVar(Variable):
    """Any other object: it may be passed around, but using it is not supported yet."""

    value: Any

    def describe(self) -> str:
        return f"object of type {type(self.value).__qualname__}"


@attrs.frozen(eq=False)
class RandomGeneratorVar(OpaqueVar):
    """A `np.random.Generator` read from an input or a global: a graph input (guarded by
    type, so one compiled graph serves every generator), whose draws are extern nodes that
    advance it in program order. `placeholder` holds its graph input once made."""

    placeholder: list[Node] = attrs.field(factory=list, repr=False)

    def describe(self) -> str:
        return "a np.random.Generator"


@attrs.define(eq=False)
class ObjectVar(Variable):
    """An instance of a user class made during capture: its attributes are variables.

    `cls_source` says where the class was read (its attributes are guarded
    through it). Attribute writes update `attributes` at once; the object is
    made in Python (`cls.__new__`, then its attributes) only when it outlives
    the graph: at a graph break, or returned.

        >>> class P: ...
        >>> ObjectVar(P, {"x": ConstantVar(1)}).python_type().__name__
        'P'
    """

    cls: type
    attributes: dict[str, Variable]
    cls_source: Source | None = attrs.field(default=None, kw_only=True)

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"instance of {self.cls.__qualname__}"


@attrs.frozen(eq=False)
class MethodVar(Variable):
    """`this.name` where the class defines a Python function: calls inline `fn(this, ...)`.

    `this` is the instance, or the class for a classmethod.
    """

    fn: FunctionVar
    this: Variable
    name: str

    def describe(self) -> str:
        return f"method {self.name} of {self.this.describe()}"
