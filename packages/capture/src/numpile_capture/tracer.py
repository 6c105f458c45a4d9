"""The tracer: interprets a function's bytecode on variables and builds a graph.

`capture_function(fn, args, kwargs)` runs `fn`'s bytecode symbolically for
one set of example arguments. NumPy calls, operators, methods and attributes
on arrays become graph nodes (through the NumPy bindings); Python around them
(arithmetic on shapes, containers, loops with known trip counts, calls into
user functions, which are inlined) runs at capture time and is guarded.

    >>> import numpy as np
    >>> def f(x):
    ...     return np.sin(x) * 2
    >>> result = capture_function(f, (np.ones(3),), {})  # doctest: +SKIP
    >>> print(result.graph)  # doctest: +SKIP
    graph(x: float64[3]):
      v0 = sin(x)  # float64[3]
      v1 = multiply(v0, 2)  # float64[3]
      return v1

Anything else (print, unknown libraries, try/except, with, raise, generators,
side effects on inputs, branching on array values) raises `Unsupported` with
the user's file and line. Exceptions of invalid programs (NumPy's own, from
meta rules, or Python's TypeError/IndexError/... at capture time) propagate
unchanged: the dispatcher then runs the function eagerly, so the user sees
NumPy's exception raised from their own line.
"""

from __future__ import annotations

import inspect
import logging
import sysconfig
import types
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_guards import AttrSource, ItemSource, LocalSource

from .builtin_calls import builtin_handler, container_method
from .capture_result import CaptureResult, Unsupported
from .compiling import is_compiling
from .frame import BreakAt, Frame, ReturnWithEffects
from .frame_state import bind_arguments
from .graph import Graph
from .operators import (
    STATIC_ARRAY_ATTRIBUTES,
    ArrayFlags,
    Bindings,
    apply_binding,
    from_graph_value,
    to_graph_value,
)
from .side_effects import SideEffects
from .trace_rules import Rule, RuleKind, rule_for
from .variable_builder import VariableBuilder, is_constant_value
from .variables import (
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    ListVar,
    ModuleVar,
    NotConstantError,
    OpaqueVar,
    TupleVar,
    Variable,
)

log = logging.getLogger("numpile.capture")

# NOTE: inlining deeper than this is treated as unbounded recursion.
MAX_INLINE_DEPTH = 64

_UNSUPPORTED_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

# Immutable constants whose attributes and methods may be used at capture time.
_INSPECTABLE_CONSTANTS = (
    int,
    float,
    complex,
    bool,
    str,
    bytes,
    np.dtype,
    np.generic,
    slice,
    range,
    ArrayFlags,
)


def capture_function(
    fn: types.FunctionType,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    bindings: Bindings | None = None,
) -> CaptureResult:
    """Capture `fn` called with `args` and `kwargs` into a graph, with its guards.

    `bindings` maps NumPy to graph nodes (default: `numpile_capture.numpy_bindings`).
    Raises `Unsupported` for code that cannot be captured yet; exceptions of
    invalid programs propagate as they are.

        >>> def f(x, n):
        ...     return x.shape[0] + n
        >>> capture_function(f, (np.ones(2), 1), {}).graph.output  # doctest: +SKIP
        3
    """
    tracer = Tracer(fn, bindings if bindings is not None else _default_bindings())
    return tracer.run(args, kwargs)


def _default_bindings() -> Bindings:
    # Late import: the bindings module is large and imports every op family.
    from . import numpy_bindings  # type: ignore[attr-defined,unused-ignore]

    result: Bindings = numpy_bindings
    return result


class Tracer:
    """One capture: the graph being built, the variable builder (guards, inputs) and limits."""

    def __init__(
        self, fn: types.FunctionType, bindings: Bindings, *, stop_at: int | None = None
    ) -> None:
        self.fn = fn
        # NOTE: the root frame stops before this normalized instruction (a graph break).
        self.stop_at = stop_at
        self.bindings = bindings
        self.graph = Graph()
        self.builder = VariableBuilder(self.graph, fn.__globals__)
        self.depth = 0
        self.backward_jumps = 0
        self.side_effects = SideEffects()

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        fn = self.fn
        code = fn.__code__
        if code.co_flags & _UNSUPPORTED_FLAGS:
            raise Unsupported(
                "not supported yet: generators and coroutines",
                code.co_filename,
                code.co_firstlineno,
            )
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        root = self.builder.function_var(fn, None)
        root = FunctionVar(root.code, root.globals, None, None, {}, self.builder.root_cells(fn), fn)
        frame = Frame(self, root, is_root=True)
        for name, value in bound.arguments.items():
            frame.state.lazy[name] = self._lazy_argument(name, value)
        result = frame.run()
        try:
            self.graph.output = _output_tree(result)
        except Unsupported as exc:
            # Break at the return instruction: the value is rebuilt and returned in Python.
            line = frame.current.lineno if frame.current is not None else code.co_firstlineno
            raise BreakAt(Unsupported(exc.reason, code.co_filename, line), frame.pc - 1) from None
        if self.side_effects.pending:
            # Mutations of inputs, attributes or globals: replayed in Python before returning.
            line = frame.current.lineno if frame.current is not None else code.co_firstlineno
            reason = Unsupported("side effects replayed after the graph", code.co_filename, line)
            raise ReturnWithEffects(reason, frame.pc - 1)
        log.debug("captured %s:\n%s", code.co_qualname, self.graph)
        return CaptureResult(
            self.graph, tuple(self.builder.input_sources), tuple(self.builder.guards)
        )

    def _lazy_argument(self, name: str, value: Any) -> Callable[[], Variable]:
        return lambda: self.builder.build(value, LocalSource(name))

    # -- calls ---------------------------------------------------------------------------

    def call(self, fn: Variable, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        """Call `fn` on variables: inline Python functions, map NumPy, fold builtins.

        Functions users marked (`trace_rules`) come first: a disabled or
        disallowed function, or `graph_break()`, is a graph break; an allowed
        one becomes one opaque node; a substituted one inlines its polyfill.
        """
        target = _call_target(fn)
        if target is not None:
            rule = rule_for(target)
            if rule is not None:
                return self._call_with_rule(rule, args, kwargs)
        if isinstance(fn, FunctionVar):
            binding = None if fn.fn is None else self.bindings.lookup_function(fn.fn)
            if binding is not None:
                return apply_binding(self, binding, *args, **kwargs)
            handler = None if fn.fn is None else builtin_handler(fn.fn)
            if handler is not None:
                return handler(self, args, kwargs)
            return self.inline(fn, args, kwargs)
        if isinstance(fn, BoundMethodVar):
            return self._call_method(fn, args, kwargs)
        if isinstance(fn, CallableVar):
            return self._call_callable(fn, args, kwargs)
        raise Unsupported(f"not supported yet: calling {fn.describe()}")

    def _call_with_rule(
        self, rule: Rule, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        if rule.breaks:
            raise Unsupported(rule.reason)
        if rule.kind is RuleKind.ALLOW:
            graph_args = [to_graph_value(arg) for arg in args]
            graph_kwargs = {key: to_graph_value(value) for key, value in kwargs.items()}
            return from_graph_value(self.graph.call(rule.op(), *graph_args, **graph_kwargs))
        if rule.kind is RuleKind.SUBSTITUTE:
            if rule.can_constant_fold_through:
                try:
                    values = [arg.as_python_constant() for arg in args]
                    keywords = {key: arg.as_python_constant() for key, arg in kwargs.items()}
                except NotConstantError:
                    pass
                else:
                    return self.builder.build_unguarded(rule.target(*values, **keywords))
            assert isinstance(rule.polyfill, types.FunctionType)
            polyfill = attrs.evolve(self.builder.function_var(rule.polyfill, None), trusted=True)
            return self.inline(polyfill, args, kwargs)
        raise Unsupported(f"not supported yet: {rule.reason}")

    def _call_callable(
        self, fn: CallableVar, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        value = fn.value
        if value is is_compiling:
            return ConstantVar(True)
        binding = self.bindings.lookup_function(value)
        if binding is not None:
            return apply_binding(self, binding, *args, **kwargs)
        handler = builtin_handler(value)
        if handler is not None:
            return handler(self, args, kwargs)
        if isinstance(value, type) and issubclass(value, BaseException):
            raise Unsupported(f"not supported yet: raising exceptions ({value.__name__})")
        raise Unsupported(f"not supported yet: calling {fn.describe()}")

    def _call_method(
        self, method: BoundMethodVar, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        receiver = method.receiver
        if isinstance(receiver, ArrayVar):
            binding = self.bindings.lookup_method(method.name)
            if binding is None:
                raise Unsupported(f"not supported yet: the array method .{method.name}()")
            return apply_binding(self, binding, receiver, *args, **kwargs)
        handler = container_method(receiver, method.name)
        if handler is not None:
            return handler(self, receiver, args, kwargs)
        if isinstance(receiver, ConstantVar) and _inspectable(receiver.value):
            try:
                values = [arg.as_python_constant() for arg in args]
                keywords = {key: arg.as_python_constant() for key, arg in kwargs.items()}
            except NotConstantError:
                raise Unsupported(
                    f"not supported yet: {method.describe()} on captured values"
                ) from None
            bound = getattr(receiver.value, method.name)
            return self.builder.build_unguarded(bound(*values, **keywords))
        raise Unsupported(f"not supported yet: calling {method.describe()}")

    def inline(
        self, fn: FunctionVar, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        """Trace a call into a Python function as part of the same graph."""
        code = fn.code
        if code.co_flags & _UNSUPPORTED_FLAGS:
            raise Unsupported(f"not supported yet: calling a generator function {code.co_name}")
        if fn.fn is not None and _is_library_code(code):
            raise Unsupported(f"not supported yet: calling {_qualified_name(fn.fn)}")
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("not supported yet: recursion deeper than the inlining limit")
        bound = bind_arguments(fn, args, kwargs, self._default_of(fn), self._kwdefault_of(fn))
        frame = Frame(self, fn)
        frame.state.locals.update(bound)
        self.depth += 1
        try:
            return frame.run()
        finally:
            self.depth -= 1

    def _default_of(self, fn: FunctionVar) -> Callable[[int], Variable]:
        def default(index: int) -> Variable:
            if fn.fn is None:
                assert fn.defaults is not None
                return fn.defaults[index]
            assert fn.fn.__defaults__ is not None
            value = fn.fn.__defaults__[index]
            if fn.source is None:
                return self.builder.build_unguarded(value)
            source = ItemSource(AttrSource(fn.source, "__defaults__"), index)
            return self.builder.build(value, source)

        return default

    def _kwdefault_of(self, fn: FunctionVar) -> Callable[[str], Variable | None]:
        def kwdefault(name: str) -> Variable | None:
            if fn.fn is None:
                return fn.kwdefaults.get(name)
            defaults = fn.fn.__kwdefaults__ or {}
            if name not in defaults:
                return None
            if fn.source is None:
                return self.builder.build_unguarded(defaults[name])
            source = ItemSource(AttrSource(fn.source, "__kwdefaults__"), name)
            return self.builder.build(defaults[name], source)

        return kwdefault

    # -- attributes ----------------------------------------------------------------------

    def _user_attribute(self, obj: OpaqueVar, name: str) -> Variable:
        # An attribute of a user object read from an input or a global: guarded by type.
        written = self.side_effects.attribute(obj, name)
        if written is not None:
            return written
        value = obj.value
        cls = type(value)
        assert obj.source is not None
        if not _plain_class(cls) or isinstance(value, type):
            raise Unsupported(f"not supported yet: the attribute .{name} of {obj.describe()}")
        static = inspect.getattr_static(value, name)  # AttributeError as Python raises it
        self.builder.guard_type(obj.source, cls)
        instance = getattr(value, "__dict__", None)
        if instance is not None and name in instance and not hasattr(type(static), "__set__"):
            return self.builder.build(instance[name], AttrSource(obj.source, name))
        if _is_constant_attribute(static):
            return self.builder.build(static, AttrSource(obj.source, name))
        raise Unsupported(f"not supported yet: the attribute .{name} of {obj.describe()}")

    def user_method(self, obj: Variable, name: str) -> Variable | None:
        """The function of `obj.name(...)` for a method of a user object, else None."""
        if not isinstance(obj, OpaqueVar) or obj.source is None:
            return None
        value = obj.value
        cls = type(value)
        if not _plain_class(cls) or isinstance(value, type):
            return None
        if name in getattr(value, "__dict__", {}):
            return None
        static = inspect.getattr_static(cls, name, None)
        if not isinstance(static, types.FunctionType):
            return None
        self.builder.guard_type(obj.source, cls)
        return self.builder.build(static, AttrSource(AttrSource(obj.source, "__class__"), name))

    def load_attr(self, obj: Variable, name: str) -> Variable:
        """`obj.name` as a variable (array metadata folds to constants)."""
        if isinstance(obj, ArrayVar):
            static = STATIC_ARRAY_ATTRIBUTES.get(name)
            if static is not None:
                value = static(obj)
                if isinstance(value, ArrayFlags):
                    return ConstantVar(value)
                return self.builder.build_unguarded(value)
            binding = self.bindings.lookup_attribute(name)
            if binding is not None:
                return apply_binding(self, binding, obj)
            if self.bindings.lookup_method(name) is not None:
                return BoundMethodVar(obj, name)
            raise Unsupported(f"not supported yet: the array attribute .{name}")
        if isinstance(obj, ModuleVar):
            value = getattr(obj.module, name)
            if obj.source is None:
                return self.builder.build_unguarded(value)
            return self.builder.build(value, AttrSource(obj.source, name))
        if isinstance(obj, TupleVar | ListVar | DictVar):
            if container_method(obj, name) is None:
                getattr(obj.python_type(), name)  # AttributeError as Python raises it
                raise Unsupported(f"not supported yet: the method .{name} of {obj.describe()}")
            return BoundMethodVar(obj, name)
        if isinstance(obj, CallableVar) and isinstance(obj.value, np.ufunc):
            # `np.multiply.outer`: a method of a ufunc, found by the bindings when called.
            value = getattr(obj.value, name)
            if isinstance(value, types.BuiltinMethodType):
                return CallableVar(value)
            return self.builder.build_unguarded(value)
        if isinstance(obj, OpaqueVar) and obj.source is not None:
            return self._user_attribute(obj, name)
        if isinstance(obj, ConstantVar | CallableVar) and _inspectable(obj.as_python_constant()):
            value = getattr(obj.as_python_constant(), name)
            if isinstance(value, types.BuiltinMethodType | types.MethodWrapperType):
                return BoundMethodVar(obj, name)
            return self.builder.build_unguarded(value)
        raise Unsupported(f"not supported yet: the attribute .{name} of {obj.describe()}")


def _plain_class(cls: type) -> bool:
    # Attribute lookup of instances is the default one: no __getattr__/__getattribute__.
    lookup: Any = cls.__getattribute__
    return lookup is object.__getattribute__ and not hasattr(cls, "__getattr__")


def _call_target(fn: Variable) -> Any:
    # The Python object a call goes to, when there is one to look up in the trace rules.
    if isinstance(fn, FunctionVar):
        return fn.fn
    if isinstance(fn, CallableVar):
        return fn.value
    return None


def _is_constant_attribute(value: Any) -> bool:
    return is_constant_value(value) and not isinstance(value, np.ndarray)


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(sorted(found))


# NOTE: functions defined under these folders (the standard library, site-packages) are not
# inlined: calling them is unsupported until graph breaks run them eagerly.
_LIBRARY_PREFIXES = _library_prefixes()


def _is_library_code(code: types.CodeType) -> bool:
    filename = code.co_filename
    return filename.startswith(_LIBRARY_PREFIXES) or filename.startswith("<frozen")


def _qualified_name(fn: types.FunctionType) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _inspectable(value: Any) -> bool:
    if isinstance(value, _INSPECTABLE_CONSTANTS):
        return True
    return isinstance(value, type) and issubclass(value, np.generic)


def _output_tree(result: Variable) -> Any:
    if isinstance(result, ArrayVar):
        return result.node
    if isinstance(result, TupleVar):
        return tuple(_output_tree(item) for item in result.items)
    if isinstance(result, ListVar):
        return [_output_tree(item) for item in result.items]
    if isinstance(result, DictVar):
        return {key: _output_tree(item) for key, item in result.items.items()}
    if isinstance(result, ConstantVar):
        return result.value
    if isinstance(result, CallableVar | ModuleVar) or (
        isinstance(result, FunctionVar) and result.fn is not None
    ):
        return result.as_python_constant()
    raise Unsupported(f"not supported yet: returning {result.describe()}")
