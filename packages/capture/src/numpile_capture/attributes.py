"""Attribute lookup during capture: arrays, modules, containers, constants, user objects.

`load_attribute(tracer, obj, name)` is `obj.name` on a variable: array metadata folds
to constants, NumPy attributes and methods go through the bindings, attributes of user
objects read from inputs or globals are guarded by type and read through their source,
and instances made during capture use `user_classes`.

    >>> inspectable(3), inspectable(object())
    (True, False)
"""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from numpile_guards import AttrSource, ItemSource

from .bound_origins import size_vars
from .builtin_calls import container_method
from .capture_result import Unsupported
from .operators import STATIC_ARRAY_ATTRIBUTES, ArrayFlags, apply_binding
from .user_classes import (
    class_attribute,
    constructible,
    input_descriptor,
    is_library_class,
    object_attribute,
    object_method,
)
from .variable_builder import is_constant_value
from .variables import (
    ArrayVar,
    BoundMethodVar,
    CallableVar,
    ConstantVar,
    DictVar,
    ListVar,
    ModuleVar,
    ObjectVar,
    OpaqueVar,
    RandomGeneratorVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .tracer import Tracer

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


def _input_attribute(tracer: Tracer, obj: OpaqueVar, name: str) -> Variable:
    # An attribute of a user object read from an input or a global: guarded by type.
    written = tracer.side_effects.attribute(obj, name)
    if written is not None:
        return written
    value = obj.value
    cls = type(value)
    assert obj.source is not None
    fields = getattr(cls, "_fields", None)
    if isinstance(value, tuple) and isinstance(fields, tuple) and name in fields:
        # A NamedTuple field: the item at its position (pytrees of parameters).
        tracer.builder.guard_type(obj.source, cls)
        position = fields.index(name)
        return tracer.builder.build(value[position], ItemSource(obj.source, position))
    if not plain_class(cls) or isinstance(value, type):
        raise Unsupported(f"not supported yet: the attribute .{name} of {obj.describe()}")
    static = inspect.getattr_static(value, name)  # AttributeError as Python raises it
    tracer.builder.guard_type(obj.source, cls)
    instance = getattr(value, "__dict__", None)
    if instance is not None and name in instance and not hasattr(type(static), "__set__"):
        return tracer.builder.build(instance[name], AttrSource(obj.source, name))
    if _is_constant_attribute(static):
        return tracer.builder.build(static, AttrSource(obj.source, name))
    if isinstance(static, types.MemberDescriptorType):
        return tracer.builder.build(getattr(value, name), AttrSource(obj.source, name))
    found = input_descriptor(tracer, obj, name, static)
    if found is not None:
        return found
    raise Unsupported(f"not supported yet: the attribute .{name} of {obj.describe()}")


def _generator_method(tracer: Tracer, obj: OpaqueVar, name: str) -> Variable:
    # A draw of a np.random.Generator (an extern row), called by the tracer's _call_method.
    method = getattr(obj.value, name)  # AttributeError as Python raises it
    if tracer.bindings.lookup_function(method) is None:
        raise Unsupported(f"not supported yet: the method Generator.{name} in a compiled region")
    return BoundMethodVar(obj, name)


def user_method(tracer: Tracer, obj: Variable, name: str) -> Variable | None:
    """The function of `obj.name(...)` for a method of a user object, else None."""
    if isinstance(obj, ObjectVar):
        return object_method(tracer, obj, name)
    if not isinstance(obj, OpaqueVar) or obj.source is None:
        return None
    value = obj.value
    cls = type(value)
    if not plain_class(cls) or isinstance(value, type):
        return None
    if name in getattr(value, "__dict__", {}):
        return None
    static = inspect.getattr_static(cls, name, None)
    if not isinstance(static, types.FunctionType):
        return None
    tracer.builder.guard_type(obj.source, cls)
    return tracer.builder.build(static, AttrSource(AttrSource(obj.source, "__class__"), name))


def load_attribute(tracer: Tracer, obj: Variable, name: str) -> Variable:
    """`obj.name` as a variable (array metadata folds to constants)."""
    if isinstance(obj, ArrayVar):
        static = STATIC_ARRAY_ATTRIBUTES.get(name)
        if static is not None:
            value = static(obj)
            if isinstance(value, ArrayFlags):
                return ConstantVar(value)
            if name == "shape":  # sizes remember they are sizes (see bound_origins)
                builder, node = tracer.builder, obj.node
                sized = size_vars(
                    value,
                    lambda: builder.array_inputs_of(node),
                    lambda: builder.created_origins_of(node),
                )
                return TupleVar(sized)
            return tracer.builder.build_unguarded(value)
        binding = tracer.bindings.lookup_attribute(name)
        if binding is not None:
            return apply_binding(tracer, binding, obj)
        if tracer.bindings.lookup_method(name) is not None:
            return BoundMethodVar(obj, name)
        raise Unsupported(f"not supported yet: the array attribute .{name}")
    if isinstance(obj, ModuleVar):
        value = getattr(obj.module, name)
        if obj.source is None:
            return tracer.builder.build_unguarded(value)
        return tracer.builder.build(value, AttrSource(obj.source, name))
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
        return tracer.builder.build_unguarded(value)
    if isinstance(obj, OpaqueVar) and obj.source is not None:
        if isinstance(obj, RandomGeneratorVar):
            return _generator_method(tracer, obj, name)
        return _input_attribute(tracer, obj, name)
    if isinstance(obj, ObjectVar):
        return object_attribute(tracer, obj, name)
    if isinstance(obj, CallableVar):
        if obj.value is object and name == "__setattr__":
            return CallableVar(object.__setattr__)  # frozen dataclasses' __init__
        if constructible(obj.value) and not is_library_class(obj.value):
            return class_attribute(tracer, obj, name)
    if isinstance(obj, ConstantVar | CallableVar) and inspectable(obj.as_python_constant()):
        value = getattr(obj.as_python_constant(), name)
        if isinstance(value, types.BuiltinMethodType | types.MethodWrapperType):
            return BoundMethodVar(obj, name)
        return tracer.builder.build_unguarded(value)
    raise Unsupported(f"not supported yet: the attribute .{name} of {obj.describe()}")


def plain_class(cls: type) -> bool:
    """Whether instances of `cls` look attributes up the default way (no __getattr__ ...)."""
    # Attribute lookup of instances is the default one: no __getattr__/__getattribute__.
    lookup: Any = cls.__getattribute__
    return lookup is object.__getattribute__ and not hasattr(cls, "__getattr__")


def _is_constant_attribute(value: Any) -> bool:
    return is_constant_value(value) and not isinstance(value, np.ndarray)


def inspectable(value: Any) -> bool:
    """Whether attributes of this constant may be read at capture time."""
    if isinstance(value, _INSPECTABLE_CONSTANTS):
        return True
    return isinstance(value, type) and issubclass(value, np.generic)
