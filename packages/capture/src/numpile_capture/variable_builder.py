"""Turning values read from inputs and globals into variables, with their guards.

The first time the tracer reads a value through a `Source` (an argument, an
item of a container argument, a global, a closure cell, an attribute of a
module) the builder wraps it in a variable and records what the capture now
assumes about it: arrays become graph placeholders guarded by ARRAY_MATCH;
Python scalars, strings, None and dtypes are specialized (EQUALS_MATCH);
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

import numpy as np

from numpile_guards import (
    ArraySpec,
    AttrSource,
    ClosureSource,
    GlobalSource,
    Guard,
    GuardKind,
    ItemSource,
    LocalSource,
    Source,
)

from .compiling import is_compiling
from .graph import Graph
from .meta import meta_of
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
)


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
        self.guards: list[Guard] = []
        self.input_sources: list[Source] = []
        self._built: dict[str, Variable] = {}

    def build(self, value: Any, source: Source) -> Variable:
        """The variable for `value` read from `source` (the same one on every read)."""
        key = source.name
        found = self._built.get(key)
        if found is None:
            found = self._wrap(value, source)
            self._built[key] = found
        return found

    def build_unguarded(self, value: Any) -> Variable:
        """A variable for a value with no source (a builtin, an attribute of a constant)."""
        if isinstance(value, np.ndarray):
            raise TypeError("arrays need a source to become graph inputs")
        if type(value) in (tuple, list):
            items = [self.build_unguarded(item) for item in value]
            return TupleVar(tuple(items)) if type(value) is tuple else ListVar(items)
        if is_constant_value(value):
            return ConstantVar(value)
        if isinstance(value, types.ModuleType):
            return ModuleVar(value)
        if isinstance(value, types.FunctionType) and value is not is_compiling:
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
        if guard not in self.guards:
            self.guards.append(guard)

    def _guard(self, kind: GuardKind, source: Source, expected: Any) -> None:
        self.guards.append(Guard(kind, source, expected))

    def _wrap(self, value: Any, source: Source) -> Variable:
        if isinstance(value, np.ndarray):
            return self._wrap_array(value, source)
        if value is is_compiling:
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
        if is_constant_value(value):
            self._guard(GuardKind.EQUALS_MATCH, source, value)
            return ConstantVar(value, source=source)
        if callable(value):
            self._guard(GuardKind.ID_MATCH, source, value)
            return CallableVar(value, source=source)
        return OpaqueVar(value, source=source)

    def _wrap_array(self, value: np.ndarray[Any, Any], source: Source) -> ArrayVar:
        spec = ArraySpec(type(value), value.dtype, tuple(value.shape), tuple(value.strides))
        self._guard(GuardKind.ARRAY_MATCH, source, spec)
        node = self.graph.placeholder(placeholder_name(source), meta_of(value))
        self.input_sources.append(source)
        return ArrayVar(node, source=source)


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
