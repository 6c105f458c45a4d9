"""User classes during capture: instances made inside the function, methods and descriptors.

Calling a plain user class (default `__new__` and metaclass call, no
`__getattr__`) makes an `ObjectVar` and inlines its `__init__`; attribute
reads and writes on it are modelled on the variable, methods inline with the
instance as `self`, properties inline their getter and setter, and
`staticmethod` / `classmethod` resolve as Python does. Dataclasses (frozen
ones too) and attrs classes are plain classes with generated `__init__`s.
Class attributes read through a class that came from a global are guarded by
value (`AttrSource`); functions by identity.

    >>> class P:
    ...     def __init__(self, x):
    ...         self.x = x
    >>> constructible(P), constructible(dict)
    (True, False)
"""

from __future__ import annotations

import inspect
import sys
import sysconfig
import types
from typing import TYPE_CHECKING, Any

from numpile_guards import AttrSource, Source

from .capture_result import Unsupported
from .variable_builder import is_constant_value
from .variables import CallableVar, ConstantVar, FunctionVar, MethodVar, ObjectVar, Variable

if TYPE_CHECKING:
    from .tracer import Tracer

_MISSING = object()


def constructible(cls: Any) -> bool:
    """Whether calling `cls` can be traced: a plain Python class with default creation."""
    if not isinstance(cls, type) or issubclass(cls, BaseException):
        return False
    if type(cls).__call__ is not type.__call__ or cls.__new__ is not object.__new__:
        return False
    if any(base is not object and base.__module__ == "builtins" for base in cls.__mro__):
        return False
    lookup: Any = cls.__getattribute__
    return lookup is object.__getattribute__ and not hasattr(cls, "__getattr__")


def construct(
    tracer: Tracer, cls_var: Variable, args: list[Variable], kwargs: dict[str, Variable]
) -> ObjectVar:
    """`cls(*args, **kwargs)`: a new instance, its `__init__` inlined."""
    cls = cls_var.as_python_constant()
    obj = ObjectVar(cls, {}, cls_source=cls_var.source)
    init = inspect.getattr_static(cls, "__init__")
    if init is object.__init__:
        if args or kwargs:
            raise TypeError(f"{cls.__name__}() takes no arguments")
        return obj
    if not isinstance(init, types.FunctionType):
        raise Unsupported(f"not supported yet: the __init__ of {cls.__qualname__}")
    fn = _function(tracer, init, _attr(cls_var.source, "__init__"))
    result = tracer.call(fn, [obj, *args], kwargs)
    if not (isinstance(result, ConstantVar) and result.value is None):
        raise TypeError(f"__init__() should return None, not '{result.python_type().__name__}'")
    return obj


def object_attribute(tracer: Tracer, obj: ObjectVar, name: str) -> Variable:
    """`obj.name` on an instance made during capture, as Python's lookup order gives it."""
    cls = obj.cls
    static = inspect.getattr_static(cls, name, _MISSING)
    if isinstance(static, property):
        if static.fget is None:
            raise AttributeError(f"property {name!r} of {cls.__name__!r} object has no getter")
        getter = _function(tracer, static.fget, _attr(_attr(obj.cls_source, name), "fget"))
        return tracer.call(getter, [obj], {})
    if name in obj.attributes:
        return obj.attributes[name]
    if name == "__class__":
        return CallableVar(cls, source=obj.cls_source)
    if static is _MISSING or isinstance(static, types.MemberDescriptorType):
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    return class_member(tracer, cls, obj.cls_source, name, static, this=obj)


def object_method(tracer: Tracer, obj: ObjectVar, name: str) -> FunctionVar | None:
    """The function of `obj.name(...)` when the class defines it as a plain method."""
    if name in obj.attributes:
        return None
    static = inspect.getattr_static(obj.cls, name, None)
    if not isinstance(static, types.FunctionType):
        return None
    return _function(tracer, static, _attr(obj.cls_source, name))


def class_member(
    tracer: Tracer,
    cls: type,
    cls_source: Source | None,
    name: str,
    static: Any,
    *,
    this: Variable | None,
) -> Variable:
    """`cls.name` (or `this.name` found on the class): functions, static and class methods,
    constant class attributes."""
    if isinstance(static, staticmethod):
        return _function(tracer, static.__func__, _attr(cls_source, name))
    if isinstance(static, classmethod):
        fn = _function(tracer, static.__func__, _attr(_attr(cls_source, name), "__func__"))
        return MethodVar(fn, CallableVar(cls, source=cls_source), name)
    if isinstance(static, types.FunctionType):
        fn = _function(tracer, static, _attr(cls_source, name))
        return fn if this is None else MethodVar(fn, this, name)
    if is_constant_value(static) and not hasattr(static, "__array__"):
        if cls_source is None:
            return tracer.builder.build_unguarded(static)
        return tracer.builder.build(static, AttrSource(cls_source, name))
    raise Unsupported(f"not supported yet: the attribute .{name} of class {cls.__qualname__}")


def class_attribute(tracer: Tracer, cls_var: Variable, name: str) -> Variable:
    """`Cls.name` for a constructible user class read from a global or an input."""
    cls = cls_var.as_python_constant()
    static = inspect.getattr_static(cls, name, _MISSING)
    if static is _MISSING:
        raise AttributeError(f"type object '{cls.__name__}' has no attribute '{name}'")
    if isinstance(static, property | types.MemberDescriptorType):
        raise Unsupported(f"not supported yet: the descriptor {cls.__qualname__}.{name}")
    return class_member(tracer, cls, cls_var.source, name, static, this=None)


def store_object_attribute(
    tracer: Tracer, obj: ObjectVar, name: str, value: Variable, *, raw: bool = False
) -> None:
    """`obj.name = value` (`raw`: `object.__setattr__(obj, name, value)`)."""
    cls = obj.cls
    static = inspect.getattr_static(cls, name, _MISSING)
    if isinstance(static, property):
        if static.fset is None:
            raise AttributeError(f"property {name!r} of {cls.__name__!r} object has no setter")
        setter = _function(tracer, static.fset, _attr(_attr(obj.cls_source, name), "fset"))
        tracer.call(setter, [obj, value], {})
        return
    setter_method: Any = cls.__setattr__
    if not raw and setter_method is not object.__setattr__:
        raise Unsupported(f"not supported yet: setting .{name} of {obj.describe()} (__setattr__)")
    if not _has_dict(cls) and name not in _slot_names(cls):
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")
    obj.attributes[name] = value


def input_descriptor(tracer: Tracer, obj: Variable, name: str, static: Any) -> Variable | None:
    """`obj.name` through a property, staticmethod or classmethod of an input object's class.

    `obj` is guarded by type; its class is read as `obj.__class__`.
    """
    assert obj.source is not None
    cls_source = AttrSource(obj.source, "__class__")
    cls = type(getattr(obj, "value", None))
    if isinstance(static, property) and static.fget is not None:
        getter = _function(tracer, static.fget, AttrSource(AttrSource(cls_source, name), "fget"))
        return tracer.call(getter, [obj], {})
    if isinstance(static, staticmethod | classmethod | types.FunctionType):
        return class_member(tracer, cls, cls_source, name, static, this=obj)
    return None


def _attr(source: Source | None, name: str) -> Source | None:
    return None if source is None else AttrSource(source, name)


def _function(tracer: Tracer, fn: Any, source: Source | None) -> FunctionVar:
    if source is None:
        return tracer.builder.function_var(fn, None)
    found = tracer.builder.build(fn, source)
    if not isinstance(found, FunctionVar):
        raise Unsupported(f"not supported yet: calling {found.describe()}")
    return found


def _slot_names(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        slots = base.__dict__.get("__slots__", ())
        names.update((slots,) if isinstance(slots, str) else slots)
    return names


def _has_dict(cls: type) -> bool:
    return any(
        "__slots__" not in base.__dict__ for base in cls.__mro__ if base is not object
    ) or "__dict__" in _slot_names(cls)


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(sorted(found))


# NOTE: functions defined under these folders (the standard library, site-packages) are not
# inlined: calling them is unsupported until graph breaks run them eagerly.
_LIBRARY_PREFIXES = _library_prefixes()


def is_library_code(code: types.CodeType) -> bool:
    """Whether `code` is library code: never inlined (it runs in Python)."""
    filename = code.co_filename
    return filename.startswith(_LIBRARY_PREFIXES) or filename.startswith("<frozen")


def is_library_class(cls: type) -> bool:
    """Whether `cls` comes from library code (the standard library, site-packages)."""
    init = inspect.getattr_static(cls, "__init__", None)
    if isinstance(init, types.FunctionType) and is_library_code(init.__code__):
        return True
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None) or ""
    return filename.startswith(_LIBRARY_PREFIXES)
