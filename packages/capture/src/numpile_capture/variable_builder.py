"""Turning values read from inputs and globals into variables, with their guards.

The first time the tracer reads a value through a `Source` (an argument, an
item of a container argument, a global, a closure cell, an attribute of a
module) the builder wraps it in a variable and records what the capture now
assumes about it: arrays become graph placeholders guarded by ARRAY_MATCH;
Python scalars, strings, None and dtypes are specialized (EQUALS_MATCH),
except ints and floats the dynamic policy makes graph inputs (TYPE_MATCH,
then EQUALS_MATCH only if capture reads the value, see `ScalarInputVar`) and
NumPy integer and floating scalars it makes 0-d graph inputs (TYPE_MATCH);
tuples, lists and dicts are guarded by type and length (or keys); modules,
functions and classes by identity. Reading the same source again returns the
same variable, so each input has one placeholder and one set of guards.

    >>> from numpile_capture import Graph
    >>> from numpile_guards import LocalSource
    >>> builder = VariableBuilder(Graph(), {})
    >>> builder.build(3, LocalSource("n")).as_python_constant()
    3
    >>> [str(g) for g in builder.guards]
    ["EQUALS_MATCH(L['n'], 3)"]
"""

from __future__ import annotations

import re
import types
from typing import Any

import attrs
import numpy as np

from numpile_guards import (
    ArraySpec,
    AttrSource,
    ClosureSource,
    ExpressionSource,
    GlobalSource,
    Guard,
    GuardKind,
    ItemSource,
    LocalSource,
    Source,
    StateSource,
)
from numpile_guards.shape_env import ShapeEnv
from numpile_guards.symbolic import (
    RelationSource,
    ShapeGuard,
    SymInt,
    shape_guard_as_guard,
    wrap_size,
)
from numpile_runtime import is_device_array

from .bound_origins import scalar_input_var
from .compiling import COMPILE_PROBES
from .dynamic_shapes import DimChoice, current_policy, set_active_shape_env
from .graph import Graph, Node
from .meta import ArrayMeta, ScalarMeta, contiguous_strides, laid_out_strides, meta_of
from .op import get_op
from .performance_hints import perf_log
from .variables import (
    ArrayVar,
    CallableVar,
    CellVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    ListVar,
    ModuleVar,
    OpaqueVar,
    RandomGeneratorVar,
    ScalarExpression,
    ScalarInputVar,
    TupleVar,
    Variable,
)

# NOTE: values of these types are specialized: the graph bakes them in and EQUALS_MATCH guards them.
_CONSTANT_TYPES: tuple[type, ...] = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    type(None),
    type(Ellipsis),
    slice,
    range,
    np.generic,
    np.dtype,
    SymInt,
)


# NOTE: lists, dicts and user objects per capture whose identities are compared (pairwise
# `is not` guards among one type); past this many, a further one is not checked.
_ALIAS_CHECKED = 8


def is_constant_value(value: Any) -> bool:
    """Whether `value` is an immutable Python constant the tracer specializes on.

    >>> is_constant_value(2.5), is_constant_value([1])
    (True, False)
    """
    return isinstance(value, _CONSTANT_TYPES)


class VariableBuilder:
    """Wraps input and global values into variables, adding placeholders and guards.

    `root_globals` is the globals dict of the captured function: globals of
    functions sharing it are named `G[...]`, others through their function.
    """

    def __init__(self, graph: Graph, root_globals: dict[str, Any]) -> None:
        self.graph = graph
        self.root_globals = root_globals
        self._guards: list[Guard] = []
        self.input_sources: list[Source] = []
        # NOTE: operations that read an input in (a NumPy scalar's `carried_scalar`): they stay
        # when a loop's trace is undone, as the placeholders do.
        self.input_nodes: set[Node] = set()
        # NOTE: the reads of NumPy scalar inputs that carry an expression (see
        # guarded_scalars); other 0-d inputs are data to a branch.
        self.expression_inputs: set[Node] = set()
        self._built: dict[str, Variable] = {}
        self._objects: dict[int, tuple[Any, Source, Variable]] = {}
        # NOTE: array placeholder -> the name of its source, and node -> the names of the
        # array inputs it is computed from (a memo: each node is walked once).
        self._array_inputs: dict[Node, frozenset[str]] = {}
        # NOTE: node -> the origins of the shapes it was created from (see note_created),
        # then of the arrays it is computed from (a memo, as `_array_inputs`).
        self._created: dict[Node, frozenset[Any]] = {}
        # NOTE: size symbol -> the unspecialized int input that is its value (`int_size`).
        self._int_sizes: dict[Any, ScalarInputVar] = {}
        self.policy = current_policy()
        # NOTE: one shape environment per capture; meta rules find it through the thread.
        self.shape_env = ShapeEnv(duck=self.policy.duck)
        set_active_shape_env(self.shape_env)

    @property
    def guards(self) -> list[Guard]:
        """Every guard so far: the inputs' own, then the symbolic shape relations."""
        shape_guards = [shape_guard_as_guard(g) for g in self.shape_env.produce_guards()]
        return [*self._guards, *shape_guards]

    def build(self, value: Any, source: Source) -> Variable:
        """The variable for `value` read from `source` (the same one on every read).

        A list, dict or user object already read through another source is the same
        variable (a write through one is seen through the other), guarded `is`; ones of
        one type read through different sources are guarded `is not`.
        """
        key = source.name
        found = self._built.get(key)
        if found is None:
            found = self._same_object(value, source)
            if found is None:
                found = self._wrap(value, source)
                self._track_object(value, source, found)
            self._built[key] = found
        return found

    def _same_object(self, value: Any, source: Source) -> Variable | None:
        seen = self._objects.get(id(value))
        if seen is None or seen[0] is not value:
            return None
        _, first, var = seen
        self.guard_relation(f"{source.name} is {first.name}", "one object, two sources")
        return var

    def _track_object(self, value: Any, source: Source, var: Variable) -> None:
        mutable = isinstance(var, ListVar | DictVar | OpaqueVar)
        if not mutable or len(self._objects) >= _ALIAS_CHECKED:
            return
        for other, other_source, _ in self._objects.values():
            if type(other) is type(value):
                text = f"{source.name} is not {other_source.name}"
                self.guard_relation(text, "two objects, two sources")
        # NOTE: the value is kept, so its id is not reused while this capture runs.
        self._objects[id(value)] = (value, source, var)

    def build_unguarded(self, value: Any) -> Variable:
        """A variable for a value with no source (a builtin, an attribute of a constant)."""
        if isinstance(value, np.ndarray) or is_device_array(value):
            raise TypeError("arrays need a source to become graph inputs")
        if type(value) in (tuple, list):
            items = [self.build_unguarded(item) for item in value]
            return TupleVar(tuple(items)) if type(value) is tuple else ListVar(items)
        if is_constant_value(value):
            return ConstantVar(value)
        if isinstance(value, types.ModuleType):
            return ModuleVar(value)
        if isinstance(value, types.FunctionType) and value not in COMPILE_PROBES:
            return self.function_var(value, None)
        if callable(value):
            return CallableVar(value)
        return OpaqueVar(value)

    def global_source(self, name: str, globals_base: Source | None) -> Source:
        """Where global `name` of a function is read, given its globals' source (None: G)."""
        if globals_base is None:
            return GlobalSource(name)
        return ItemSource(globals_base, name)

    def function_var(self, fn: types.FunctionType, source: Source | None) -> FunctionVar:
        """A function to inline; its closure cells and defaults are read lazily through `fn`."""
        globals_base: Source | None = None
        if fn.__globals__ is not self.root_globals:
            globals_base = None if source is None else AttrSource(source, "__globals__")
        cells = []
        for index, cell in enumerate(fn.__closure__ or ()):
            cell_source: Source | None = None
            if source is not None:
                closure_item = ItemSource(AttrSource(source, "__closure__"), index)
                cell_source = AttrSource(closure_item, "cell_contents")
            cells.append(CellVar(None, cell, source=cell_source))
        return FunctionVar(
            fn.__code__, fn.__globals__, globals_base, None, {}, tuple(cells), fn, source=source
        )

    def root_cells(self, fn: types.FunctionType) -> tuple[CellVar, ...]:
        """The closure cells of the captured function itself, read as `F.__closure__[i]`."""
        return tuple(
            CellVar(None, cell, source=ClosureSource(fn.__code__.co_freevars[index], index))
            for index, cell in enumerate(fn.__closure__ or ())
        )

    def guard_type(self, source: Source, cls: type) -> None:
        """Guard that the value at `source` keeps exactly type `cls` (once per source)."""
        guard = Guard(GuardKind.TYPE_MATCH, source, cls)
        if guard not in self._guards:
            self._guards.append(guard)

    def guard_identity(self, source: Source, value: Any) -> None:
        """Guard that `source` keeps reading this very object (once per source)."""
        guard = Guard(GuardKind.ID_MATCH, source, value)
        if guard not in self._guards:
            self._guards.append(guard)

    def guard_value(self, source: Source, value: Any) -> None:
        """Guard that `source` keeps reading `value` (once per source): an expression's
        outcome (`bool(L['a'] > 0)`), not an input itself."""
        guard = Guard(GuardKind.EQUALS_MATCH, source, value)
        if guard not in self._guards:
            self._guards.append(guard)

    def guard_state(self, source: StateSource, value: Any) -> None:
        """Guard that the process state `source` reads keeps reading `value` (once)."""
        guard = Guard(GuardKind.EQUALS_MATCH, source, value)
        if guard not in self._guards:
            self._guards.append(guard)

    def _guard(self, kind: GuardKind, source: Source, expected: Any) -> None:
        self._guards.append(Guard(kind, source, expected))

    def _wrap(self, value: Any, source: Source) -> Variable:
        if foreign_array_reason(value) is not None:
            return self._wrap_foreign(value, source)
        if isinstance(value, np.ndarray) or is_device_array(value):
            return self._wrap_array(value, source)
        if isinstance(value, types.FunctionType) and value in COMPILE_PROBES:
            self._guard(GuardKind.ID_MATCH, source, value)
            return CallableVar(value, source=source)
        original = getattr(value, "_numpile_original", None)
        if isinstance(original, types.FunctionType):
            self._guard(GuardKind.ID_MATCH, source, value)
            return self.function_var(original, AttrSource(source, "_numpile_original"))
        if isinstance(value, types.FunctionType):
            self._guard(GuardKind.ID_MATCH, source, value)
            return self.function_var(value, source)
        if isinstance(value, types.ModuleType):
            self._guard(GuardKind.ID_MATCH, source, value)
            return ModuleVar(value, source=source)
        if type(value) in (tuple, list):
            self._guard(GuardKind.TYPE_MATCH, source, type(value))
            self._guard(GuardKind.LENGTH_MATCH, source, len(value))
            items = [self.build(item, ItemSource(source, i)) for i, item in enumerate(value)]
            if type(value) is tuple:
                return TupleVar(tuple(items), source=source)
            return ListVar(items, source=source)
        if type(value) is dict:
            self._guard(GuardKind.TYPE_MATCH, source, dict)
            self._guard(GuardKind.DICT_KEYS, source, list(value))
            entries = {
                key: self.build(item, ItemSource(source, key)) for key, item in value.items()
            }
            return DictVar(entries, source=source)
        if self.policy.scalar_is_input(value, source.name):
            return self._scalar_input(value, source)
        if self.policy.numpy_scalar_is_input(value, source.name):
            return self._numpy_scalar_input(value, source)
        if is_constant_value(value):
            self._guard(GuardKind.EQUALS_MATCH, source, value)
            return scalar_input_var(value, source, self.policy)
        if callable(value):
            self._guard(GuardKind.ID_MATCH, source, value)
            return CallableVar(value, source=source)
        if isinstance(value, np.random.Generator):
            return RandomGeneratorVar(value, source=source)
        return OpaqueVar(value, source=source)

    def _numpy_scalar_input(self, value: np.generic, source: Source) -> ArrayVar:
        # A NumPy scalar the policy leaves unspecialized (a changing `np.float64(dt)`, a
        # resumed loop's carried `s = s + x[i]`): a 0-d graph input fed the scalar itself and
        # read only through `carried_scalar`, so it stays a NumPy scalar in the trace (NEP 50:
        # a strong operand of its dtype) and a backend may take it by value; guarded by its
        # type, which holds its dtype. An argument's value is known: it carries its
        # expression (a branch on it is a guard, see guarded_scalars); a loop's carried
        # value, made from arrays, does not.
        self._guard(GuardKind.TYPE_MATCH, source, type(value))
        meta = ArrayMeta((), value.dtype, ())
        node = self.graph.placeholder(placeholder_name(source), meta)
        self.input_sources.append(source)
        scalar = self.graph.call(get_op("carried_scalar"), node)
        self.input_nodes.add(scalar)
        if self.policy.is_loop_local(source.name):
            return ArrayVar(scalar)
        self.expression_inputs.add(scalar)
        return ArrayVar(scalar, expression=ScalarExpression(source.name, value))

    def generator_input(self, var: RandomGeneratorVar) -> Node:
        """The graph input of a generator (made once, guarded by type): its draws' input 0."""
        if not var.placeholder:
            assert var.source is not None
            self.guard_type(var.source, type(var.value))
            node = self.graph.placeholder(placeholder_name(var.source), ScalarMeta(type(var.value)))
            self.input_sources.append(var.source)
            var.placeholder.append(node)
        return var.placeholder[0]

    def _scalar_input(self, value: int | float, source: Source) -> ScalarInputVar:
        self._guard(GuardKind.TYPE_MATCH, source, type(value))
        return self.scalar_input(value, source)

    def scalar_input(
        self, value: int | float, source: Source, *, name: str | None = None
    ) -> ScalarInputVar:
        """An unspecialized scalar read from `source` (whose type is already guarded).

        Arithmetic on scalar inputs gives more of them, read from an `ExpressionSource`.
        `name` names its placeholder (default: after the source).
        """

        def make_node() -> Node:
            label = name or placeholder_name(source)
            node = self.graph.placeholder(label, ScalarMeta(type(value)))
            self.input_sources.append(source)
            return node

        def on_read() -> None:
            self._guard(GuardKind.EQUALS_MATCH, source, value)

        return ScalarInputVar(value, make_node, on_read, source=source)

    def size_input(self, size: SymInt) -> ScalarInputVar:
        """A symbolic size as an unspecialized int graph input (one per expression).

        Its source is the size expression over the inputs' sizes, e.g.
        `(L['x'].shape[0] - 1)`, evaluated on each call: the graph computes with the
        call's size instead of baking in the one seen at capture, as torch's SymInts do.
        """
        source = ExpressionSource(size.env.render(size.expr))
        found = self._built.get(source.name)
        if not isinstance(found, ScalarInputVar):
            label = "size_" + re.sub(r"\W+", "_", str(size.expr)).strip("_")
            found = self.scalar_input(size.hint, source, name=label)
            self._built[source.name] = found
        return found

    def int_size(self, var: ScalarInputVar) -> SymInt | None:
        """The unspecialized int input `var` as a size symbol, for a created array's size
        (`np.arange(n)`, `np.zeros(n)`): one graph serves every `n` of 2 and more (guarded
        so, duck-sized with equal input sizes); None where it stays a plain int (a float, a
        value read already, below 2: an empty or one-element array is specialized).
        """
        value = var.current
        if type(value) is not int or var.read or value < 2 or var.source is None:
            return None
        symbol = self.shape_env.create_symbol(value, var.source.name)
        if isinstance(symbol, int):
            return None
        self._int_sizes.setdefault(symbol, var)
        wrapped = wrap_size(symbol, self.shape_env)
        return wrapped if isinstance(wrapped, SymInt) else None

    def int_size_node(self, symbol: Any) -> Node | None:
        """The graph input of the int input that `int_size` made `symbol` from, if any."""
        var = self._int_sizes.get(symbol)
        return None if var is None else var.node()

    def guard_relation(self, text: str, reason: str) -> None:
        """Guard that the Python expression `text` over sources stays true (once)."""
        relation = ShapeGuard(None, text, reason)
        guard = Guard(GuardKind.SHAPE_RELATION, RelationSource(text), relation)
        if guard not in self._guards:
            self._guards.append(guard)

    def _wrap_foreign(self, value: Any, source: Source) -> OpaqueVar:
        # NOTE: guarded on the exact type, so plain ndarrays still compile; every use of
        # the object is a graph break, so NumPy's own dispatch (the subclass's methods,
        # `__array_ufunc__`, `__array_function__`, `__array_wrap__`) runs it as eager would.
        self._guard(GuardKind.TYPE_MATCH, source, type(value))
        if isinstance(value, np.ndarray):
            self._guard(GuardKind.EQUALS_MATCH, AttrSource(source, "dtype"), value.dtype)
        perf_log.info(
            "%s is %s: it runs eagerly (numpile models plain ndarrays only)",
            source.name,
            foreign_array_reason(value),
        )
        return OpaqueVar(value, source=source)

    def _wrap_array(self, value: np.ndarray[Any, Any], source: Source) -> ArrayVar:
        choices = self.policy.choose(value, source.name)
        meta: Any = None
        if any(choice.dynamic for choice in choices):
            meta = self._symbolic_meta(value, source, choices)
        if meta is None:
            spec = ArraySpec(type(value), value.dtype, tuple(value.shape), tuple(value.strides))
            meta = meta_of(value)
        else:
            spec = self._symbolic_spec(value, source, meta)
        if is_device_array(value):
            # NOTE: kernels launch on the inputs' GPU; an array on another GPU recompiles.
            device: Any = value.device  # CuPy's Device, not NumPy's "cpu"
            spec = attrs.evolve(spec, device_id=int(device.id))
            meta = attrs.evolve(meta, device="cuda")
        self._guard(GuardKind.ARRAY_MATCH, source, spec)
        node = self.graph.placeholder(placeholder_name(source), meta)
        self.input_sources.append(source)
        self._array_inputs[node] = frozenset({source.name})
        return ArrayVar(node, source=source)

    def array_inputs_of(self, node: Node) -> frozenset[str]:
        """The source names of the array inputs `node` is computed from (a view `A[1:-1]`
        of the input `A`: `{"L['A']"}`); empty for a node of another graph (a loop body's).
        """
        return _union_over_inputs(node, self._array_inputs)

    def note_created(self, node: Node, origins: frozenset[Any]) -> None:
        """Record that the array `node` was created with a shape computed from baked-in
        inputs (`np.arange(n)`: `n`'s origin; see bound_origins)."""
        if origins:
            self._created[node] = origins

    def created_origins_of(self, node: Node) -> frozenset[Any]:
        """The origins of the shapes of the arrays `node` is computed from (`note_created`)."""
        return _union_over_inputs(node, self._created)

    def _symbolic_meta(
        self, value: np.ndarray[Any, Any], source: Source, choices: tuple[DimChoice, ...]
    ) -> ArrayMeta | None:
        # Strides follow from the sizes where the layout is dense (see laid_out_strides).
        itemsize = value.itemsize or 1
        if any(stride % itemsize for stride in value.strides):
            return None
        shape: list[Any] = []
        for axis, (size, choice) in enumerate(zip(value.shape, choices, strict=True)):
            if not choice.dynamic:
                shape.append(int(size))
                continue
            name = f"{source.name}.shape[{axis}]"
            shape.append(self.shape_env.create_symbol(size, name, lo=choice.lo, hi=choice.hi))
        sym_shape = tuple(shape)
        strides = tuple(stride // itemsize for stride in value.strides)
        if tuple(itemsize * s for s in contiguous_strides(tuple(value.shape))) == value.strides:
            return ArrayMeta(sym_shape, value.dtype, contiguous_strides(sym_shape))
        laid_out = laid_out_strides(strides, tuple(value.shape), sym_shape)
        return ArrayMeta(sym_shape, value.dtype, laid_out)

    def _symbolic_spec(
        self, value: np.ndarray[Any, Any], source: Source, meta: ArrayMeta
    ) -> ArraySpec:
        # Static sizes and strides are matched exactly; symbolic strides become relations.
        itemsize = value.itemsize or 1
        shape = tuple(d if isinstance(d, int) else None for d in meta.shape)
        strides: list[int | None] = []
        assert meta.strides is not None
        for axis, stride in enumerate(meta.strides):
            if isinstance(stride, int):
                strides.append(stride * itemsize)
                continue
            strides.append(None)
            expected = self.shape_env.render(stride * itemsize)
            relation = f"{source.name}.strides[{axis}] == {expected}"
            self.shape_env.add_relation(relation, "contiguous strides")
        return ArraySpec(type(value), value.dtype, shape, tuple(strides))


def _union_over_inputs(node: Node, memo: dict[Node, frozenset[Any]]) -> frozenset[Any]:
    # The union of `memo`'s sets over `node` and the nodes it is computed from; each node
    # is walked once (the memo keeps its union), iteratively so long chains do not recurse.
    found = memo.get(node)
    if found is not None:
        return found
    pending = [node]
    while pending:
        current = pending[-1]
        missing = [n for n in current.input_nodes() if n not in memo]
        if missing:
            pending.extend(missing)
            continue
        pending.pop()
        merged: frozenset[Any] = frozenset()
        for operand in current.input_nodes():
            merged |= memo[operand]
        memo[current] = merged
    return memo[node]


def foreign_array_reason(value: Any) -> str | None:
    """Why `value` is an array numpile does not model (None for plain ndarrays and other
    values): an ndarray subclass (masked array, matrix, any user subclass), or an object
    that overrides NumPy's functions through `__array_ufunc__` / `__array_function__`.

    >>> foreign_array_reason(np.zeros(2)) is None, foreign_array_reason(np.matrix([[1]]))
    (True, 'an ndarray subclass (numpy.matrix)')
    """
    kind = type(value)
    if kind is np.ndarray or is_device_array(value) or isinstance(value, type):
        return None
    name = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(value, np.ndarray):
        return f"an ndarray subclass ({name})"
    if hasattr(kind, "__array_ufunc__") or hasattr(kind, "__array_function__"):
        return f"an object that overrides NumPy functions ({name})"
    return None


def placeholder_name(source: Source) -> str:
    """A readable identifier for the placeholder fed from `source`.

    >>> placeholder_name(ItemSource(LocalSource("xs"), 0))
    'xs_0'
    """
    if isinstance(source, LocalSource):
        text = source.local
    elif isinstance(source, GlobalSource):
        text = source.global_name
    elif isinstance(source, ClosureSource):
        text = source.var
    elif isinstance(source, AttrSource):
        text = f"{placeholder_name(source.base)}_{source.attr}"
    elif isinstance(source, ItemSource):
        text = f"{placeholder_name(source.base)}_{source.key}"
    else:
        text = "input"
    text = re.sub(r"\W+", "_", text).strip("_") or "input"
    return text if not text[0].isdigit() else f"_{text}"
