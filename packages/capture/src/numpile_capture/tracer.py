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

Generators called inside the function are traced lazily, one `yield` at a time;
instances of user classes are modelled (see `user_classes`); `try` and `with`
bodies are traced assuming no exception. Anything else (print, unknown
libraries, raise, side effects on inputs, branching on array values) raises `Unsupported` with
the user's file and line. Exceptions of invalid programs (NumPy's own, from
meta rules, or Python's TypeError/IndexError/... at capture time) propagate
unchanged: the dispatcher then runs the function eagerly, so the user sees
NumPy's exception raised from their own line.
"""

from __future__ import annotations

import inspect
import logging
import types
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from numpile_guards import AttrSource, ItemSource, LocalSource, Source

from .attributes import inspectable, load_attribute, plain_class, user_method
from .bound_origins import OriginVar
from .builtin_calls import builtin_handler, container_method
from .capture_result import CaptureResult, Unsupported
from .compiling import COMPILE_PROBES
from .frame import BreakAt, Frame, ReturnWithEffects
from .frame_state import bind_arguments
from .graph import Graph, Node, array_devices
from .guarded_scalars import derived_call, python_scalar
from .operators import (
    Bindings,
    apply_binding,
    from_graph_value,
    operator_method,
    scalar_call,
    specialized,
    to_graph_value,
    ufunc_call_operands,
)
from .pytree import field_names
from .resume_code import STACK_PREFIX
from .side_effects import SideEffects
from .trace_rules import ForbiddenCallError, Rule, RuleKind, TransformCall, rule_for
from .user_classes import construct, constructible, is_library_class, is_library_code, object_method
from .variable_builder import VariableBuilder
from .variables import (
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    ConstantVar,
    DictVar,
    FunctionVar,
    GeneratorVar,
    ListVar,
    MethodVar,
    ModuleVar,
    NotConstantError,
    ObjectVar,
    OpaqueVar,
    RandomGeneratorVar,
    ScalarInputVar,
    ScalarNodeVar,
    TupleVar,
    Variable,
)

log = logging.getLogger("numpile.capture")

# NOTE: inlining deeper than this is treated as unbounded recursion.
MAX_INLINE_DEPTH = 64

_UNSUPPORTED_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_ASYNC_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def capture_function(
    fn: types.FunctionType,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    bindings: Bindings | None = None,
    keep_loops: bool = True,
) -> CaptureResult:
    """Capture `fn` called with `args` and `kwargs` into a graph, with its guards.

    `bindings` maps NumPy to graph nodes (default: `numpile_capture.numpy_bindings`).
    `keep_loops=False` unrolls loops over ranges instead of keeping them as loop nodes
    (the graphs `grad` differentiates when a loop has no VJP rule).
    Raises `Unsupported` for code that cannot be captured yet; exceptions of
    invalid programs propagate as they are.

        >>> def f(x, n):
        ...     return x.shape[0] + n
        >>> capture_function(f, (np.ones(2), 1), {}).graph.output  # doctest: +SKIP
        3
    """
    tracer = Tracer(fn, bindings if bindings is not None else _default_bindings())
    tracer.keep_loops = keep_loops
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
        # NOTE: where functions passed to transforms were read (by id), to guard their globals.
        self.transform_sources: dict[int, Source] = {}
        # NOTE: loops over ranges become loop nodes, except inside a function transform
        # (grad differentiates the graph; loop nodes have no VJP rule yet): unrolled there.
        self.keep_loops = True
        # NOTE: kept loops read their bounds as ints, guarded (a transform whose loop VJP
        # needs a trip count known at capture time sets it while it traces its function).
        self.pin_trip_counts = False
        self.transform_depth = 0
        # NOTE: the array work of the nodes added so far, in element-passes saved (`body_work`);
        # a loop compares it before and after tracing its body (a write-back lowers it).
        self.array_work = 0
        # NOTE: the nodes traced since the latest `FOR_ITER`: the only intermediates a body's
        # piece can keep out of memory; older values reach it materialized (`body_work`).
        self.iteration_nodes: set[Node] = set()

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CaptureResult:
        fn = self.fn
        code = fn.__code__
        if code.co_flags & _UNSUPPORTED_FLAGS:
            raise Unsupported(
                "not supported yet: generators and coroutines",
                code.co_filename,
                code.co_firstlineno,
            )
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
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
            # Break at the return instruction: the value is rebuilt and returned in Python. A
            # user object made here is no break: it is rebuilt as side effects are replayed.
            line = frame.current.lineno if frame.current is not None else code.co_firstlineno
            where = Unsupported(exc.reason, code.co_filename, line)
            if _rebuilt_in_python(result):
                raise ReturnWithEffects(where, frame.pc - 1) from None
            raise BreakAt(where, frame.pc - 1) from None
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
        source = LocalSource(name)
        target: Any = getattr(value, "__func__", None)
        if isinstance(value, types.MethodType) and isinstance(target, types.FunctionType):
            # A bound method a resume function received (a with block's __exit__): inlined.
            function = AttrSource(source, "__func__")
            this = AttrSource(source, "__self__")
            return lambda: self._bound_method(target, value.__self__, function, this)
        if name.startswith(STACK_PREFIX) and _passed_through(value):
            # Iterators and builtin methods on a resume function's stack: used only in Python.
            return lambda: OpaqueVar(value, source=source)
        return lambda: self.builder.build(value, source)

    def _bound_method(self, fn: Any, this: Any, function: Source, self_source: Source) -> Variable:
        found = self.builder.build(fn, function)
        if not isinstance(found, FunctionVar):
            raise Unsupported(f"not supported yet: the method {found.describe()}")
        return MethodVar(found, self.builder.build(this, self_source), fn.__name__)

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
            if rule is not None and rule.kind is RuleKind.TRANSFORM:
                return self._call_transform(rule, fn, args, kwargs)
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
        if isinstance(fn, MethodVar):
            return self.call(fn.fn, [fn.this, *args], kwargs)
        if isinstance(fn, ObjectVar):
            method = object_method(self, fn, "__call__")
            if method is not None:
                return self.call(method, [fn, *args], kwargs)
        if isinstance(fn, CallableVar):
            return self._call_callable(fn, args, kwargs)
        raise Unsupported(f"not supported yet: calling {fn.describe()}")

    def _call_with_rule(
        self, rule: Rule, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        if rule.breaks:
            raise Unsupported(rule.reason)
        if rule.kind is RuleKind.FORBIDDEN:
            raise ForbiddenCallError(rule.reason)
        if rule.kind is RuleKind.ALLOW:
            graph_args = [to_graph_value(arg) for arg in args]
            graph_kwargs = {key: to_graph_value(value) for key, value in kwargs.items()}
            devices = sorted(set(array_devices((graph_args, graph_kwargs))))
            if len(devices) > 1:
                # As CuPy: no implicit copies between host and device (eager raises its error).
                raise TypeError(f"{rule.op().name}: arrays on different devices {devices}")
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

    def _call_transform(
        self, rule: Rule, fn: Variable, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        # A function transform (e.g. grad): its expand rule adds nodes on graph values.
        wrapped = getattr(rule.target, "__wrapped__", None)
        for arg in [*args, *kwargs.values()]:
            if isinstance(arg, FunctionVar) and arg.fn is not None and arg.source is not None:
                self.transform_sources[id(arg.fn)] = arg.source

        def inline(
            inner: Any,
            values: tuple[Any, ...],
            keywords: dict[str, Any],
            *,
            keep_loops: bool = False,
            pin_trip_counts: bool = False,
        ) -> Any:
            if isinstance(inner, FunctionVar):
                callee = inner  # a function the captured code made
            elif isinstance(inner, types.FunctionType):
                # The wrapped function is read through the wrapper (or where it was passed to
                # the transform's constructor), so that its globals get guarded.
                source = self.transform_sources.get(id(inner))
                if inner is wrapped and fn.source is not None:
                    source = AttrSource(fn.source, "__wrapped__")
                callee = self.builder.function_var(inner, source)
            else:
                raise Unsupported(f"not supported yet: transforming {inner!r}")
            self.transform_depth += 1
            outer = self.keep_loops
            outer_pin = self.pin_trip_counts
            self.keep_loops = outer and keep_loops
            self.pin_trip_counts = outer_pin or pin_trip_counts
            try:
                result = self.inline(
                    callee,
                    [self._from_tree(value) for value in values],
                    {key: self._from_tree(value) for key, value in keywords.items()},
                )
            finally:
                self.keep_loops = outer
                self.pin_trip_counts = outer_pin
                self.transform_depth -= 1
            return self._graph_tree(result)

        assert rule.expand is not None
        call = TransformCall(
            self.graph,
            tuple(self._graph_tree(arg) for arg in args),
            {key: self._graph_tree(value) for key, value in kwargs.items()},
            inline,
        )
        return self._from_tree(rule.expand(call))

    def _graph_tree(self, value: Variable) -> Any:
        # A variable as a tree of graph values for a transform: functions stay functions,
        # a dataclass or attrs instance (an input, or made here) becomes one whose fields
        # are graph values.
        if isinstance(value, TupleVar):
            return tuple(self._graph_tree(item) for item in value.items)
        if isinstance(value, ListVar):
            return [self._graph_tree(item) for item in value.items]
        if isinstance(value, DictVar):
            return {key: self._graph_tree(item) for key, item in value.items.items()}
        if isinstance(value, FunctionVar):
            # A function made by the captured code stays a variable: transforms may inline it.
            return value if value.fn is None else value.fn
        if isinstance(value, ScalarInputVar | OriginVar):
            # Passed through unspecialized (a transform differentiating it reads it), or with
            # the inputs it came from (a trip count inside the function must not specialize).
            return value
        container = _field_container(value)
        if container is not None:
            cls, names = container
            made: Any = object.__new__(cls)
            for name in names:
                field = load_attribute(self, value, name)
                object.__setattr__(made, name, self._graph_tree(field))
            return made
        return _output_tree(value)

    def _from_tree(self, value: Any) -> Variable:
        if isinstance(value, Variable):
            return value
        if isinstance(value, Node):
            return ArrayVar(value)
        if type(value) is tuple:
            return TupleVar(tuple(self._from_tree(item) for item in value))
        if type(value) is list:
            return ListVar([self._from_tree(item) for item in value])
        if type(value) is dict:
            return DictVar({key: self._from_tree(item) for key, item in value.items()})
        names = field_names(type(value))
        if names is not None:
            # A field container a transform rebuilt around graph values (a dataclass of
            # gradients): an object made during capture, built in Python if it outlives it.
            fields = {name: self._from_tree(getattr(value, name)) for name in names}
            return ObjectVar(type(value), fields)
        return self.builder.build_unguarded(value)

    def _call_callable(
        self, fn: CallableVar, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        value = fn.value
        if isinstance(value, types.FunctionType) and value in COMPILE_PROBES:
            return ConstantVar(COMPILE_PROBES[value])
        derived = scalar_call(self, value, args, kwargs)
        if derived is not None:
            return derived
        binding = self.bindings.lookup_function(value)
        if binding is not None:
            operands = ufunc_call_operands(self, value, args)
            recorded = apply_binding(self, binding, *operands, **kwargs)
            return derived_call(value, args, kwargs, recorded)
        handler = builtin_handler(value)
        if handler is not None:
            return handler(self, args, kwargs)
        if constructible(value) and not is_library_class(value):
            return construct(self, fn, args, kwargs)
        if isinstance(value, type) and issubclass(value, BaseException):
            raise Unsupported(f"not supported yet: raising exceptions ({value.__name__})")
        method = inspect.getattr_static(type(value), "__call__", None)
        plain = plain_class(type(value)) and not isinstance(value, type)
        if fn.source is not None and plain and isinstance(method, types.FunctionType):
            # A callable user object read from an input or a global: its __call__ inlined.
            self.builder.guard_type(fn.source, type(value))
            call_source = AttrSource(AttrSource(fn.source, "__class__"), "__call__")
            this = OpaqueVar(value, source=fn.source)
            return self.call(self.builder.build(method, call_source), [this, *args], kwargs)
        raise Unsupported(f"not supported yet: calling {fn.describe()}")

    def _call_method(
        self, method: BoundMethodVar, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        receiver = method.receiver
        if isinstance(receiver, RandomGeneratorVar):
            # A draw: the generator is a graph input, the binding the table's row.
            lookup = getattr(self.bindings, "lookup_generator_method", None)
            generator = self.builder.generator_input(receiver)
            binding = None if lookup is None else lookup(generator, method.name)
            if binding is None:
                raise Unsupported(f"not supported yet: calling {method.describe()}")
            return apply_binding(self, binding, *args, **kwargs)
        as_operator = operator_method(self, receiver, method.name, args, kwargs)
        if as_operator is not None:
            return as_operator
        if isinstance(receiver, ArrayVar):
            scalar = None if args or kwargs else python_scalar(self, receiver, method.name)
            if scalar is not None:
                return scalar
            binding = self.bindings.lookup_method(method.name)
            if binding is None:
                raise Unsupported(f"not supported yet: the array method .{method.name}()")
            return apply_binding(self, binding, receiver, *args, **kwargs)
        handler = container_method(receiver, method.name)
        if handler is not None:
            return handler(self, receiver, args, kwargs)
        if isinstance(receiver, ScalarInputVar):
            receiver = ConstantVar(receiver.as_python_constant())
        if isinstance(receiver, ConstantVar) and inspectable(receiver.value):
            try:
                values = [arg.as_python_constant() for arg in args]
                keywords = {key: arg.as_python_constant() for key, arg in kwargs.items()}
            except NotConstantError:
                raise Unsupported(
                    f"not supported yet: {method.describe()} on captured values"
                ) from None
            if isinstance(receiver.value, str):
                # "{}".format(n), "x".join(...): text shows sizes as numbers, never symbols.
                values, keywords = specialized(values), specialized(keywords)
            bound = getattr(receiver.value, method.name)
            return self.builder.build_unguarded(bound(*values, **keywords))
        raise Unsupported(f"not supported yet: calling {method.describe()}")

    def inline(
        self, fn: FunctionVar, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        """Trace a call into a Python function as part of the same graph."""
        code = fn.code
        if code.co_flags & _ASYNC_FLAGS:
            raise Unsupported(f"not supported yet: calling a coroutine function {code.co_name}")
        if fn.fn is not None and is_library_code(code):
            raise Unsupported(f"not supported yet: calling {_qualified_name(fn.fn)}")
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("not supported yet: recursion deeper than the inlining limit")
        if fn.fn is not None and fn.source is not None:
            # The function object is guarded by identity; its code can be replaced in place
            # (IPython's autoreload does), so the code it ran is guarded too.
            self.builder.guard_identity(AttrSource(fn.source, "__code__"), code)
        bound = bind_arguments(fn, args, kwargs, self._default_of(fn), self._kwdefault_of(fn))
        frame = Frame(self, fn)
        frame.state.locals.update(bound)
        if code.co_flags & inspect.CO_GENERATOR:
            return GeneratorVar(
                [], advance=lambda: self._advance(frame), call=(fn, list(args), dict(kwargs))
            )
        self.depth += 1
        try:
            return frame.run()
        finally:
            self.depth -= 1

    def _advance(self, frame: Frame) -> Variable | None:
        # One step of a generator made during capture: its frame runs to the next yield.
        if self.depth >= MAX_INLINE_DEPTH:
            raise Unsupported("not supported yet: recursion deeper than the inlining limit")
        self.depth += 1
        try:
            return frame.next_yield()
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

    # -- attributes (see `attributes`) ------------------------------------------------------

    def user_method(self, obj: Variable, name: str) -> Variable | None:
        """The function of `obj.name(...)` for a method of a user object, else None."""
        return user_method(self, obj, name)

    def load_attr(self, obj: Variable, name: str) -> Variable:
        """`obj.name` as a variable (array metadata folds to constants)."""
        return load_attribute(self, obj, name)


def _passed_through(value: Any) -> bool:
    # Bound methods of objects (not functions of modules such as math.isclose) and iterators.
    if isinstance(value, types.MethodWrapperType | types.MethodType):
        return True
    if isinstance(value, types.BuiltinMethodType):
        owner = getattr(value, "__self__", None)
        return owner is not None and not isinstance(owner, types.ModuleType)
    return hasattr(value, "__next__") and not isinstance(value, np.ndarray)


def _call_target(fn: Variable) -> Any:
    # The Python object a call goes to, when there is one to look up in the trace rules.
    if isinstance(fn, FunctionVar):
        return fn.fn
    if isinstance(fn, CallableVar):
        return fn.value
    return None


def _qualified_name(fn: types.FunctionType) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _field_container(value: Variable) -> tuple[type, tuple[str, ...]] | None:
    # The class and field names of a dataclass or attrs instance a variable holds.
    if isinstance(value, ObjectVar):
        cls = value.cls
        names = field_names(cls)
    elif isinstance(value, OpaqueVar) and value.source is not None:
        cls = type(value.value)
        names = field_names(cls)
    else:
        return None
    return None if names is None else (cls, names)


def _rebuilt_in_python(result: Variable) -> bool:
    # Return values that hold user objects (made during capture or read from the inputs).
    if isinstance(result, ObjectVar):
        return True
    if isinstance(result, OpaqueVar):
        return result.source is not None
    if isinstance(result, ScalarInputVar):
        return True  # returned as read on this call, not baked into the graph's output
    if isinstance(result, TupleVar | ListVar):
        return any(_rebuilt_in_python(item) for item in result.items)
    if isinstance(result, DictVar):
        return any(_rebuilt_in_python(item) for item in result.items.values())
    return False


def _output_tree(result: Variable) -> Any:
    if isinstance(result, ArrayVar | ScalarNodeVar):
        return result.node
    if isinstance(result, TupleVar):
        return tuple(_output_tree(item) for item in result.items)
    if isinstance(result, ListVar):
        return [_output_tree(item) for item in result.items]
    if isinstance(result, DictVar):
        return {key: _output_tree(item) for key, item in result.items.items()}
    if isinstance(result, ConstantVar):
        return specialized(result.value)
    if isinstance(result, ScalarInputVar):
        raise Unsupported("returning an unspecialized scalar input")  # rebuilt in Python
    if isinstance(result, CallableVar | ModuleVar) or (
        isinstance(result, FunctionVar) and result.fn is not None
    ):
        return result.as_python_constant()
    raise Unsupported(f"not supported yet: returning {result.describe()}")
