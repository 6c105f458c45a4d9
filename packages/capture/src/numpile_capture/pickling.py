"""Pickling compiled functions: by reference when importable, by value otherwise.

A `CompiledFunction` never pickles what it compiled (guard caches, generated
graph modules, loaded kernels): it pickles how to make it again. The
receiving process compiles on its first call, and finds the kernels the
sender built in the shared on-disk cache when both use one cache folder.

- By reference: when `module.qualname` of the original function names this
  compiled function (a decorated module-level function or method) or the
  original function itself (`g = compile(f)`), the pickle holds those two
  strings and the compile settings. The receiver imports the module.
- By value: anything else (functions defined in `__main__`, in a notebook,
  nested functions, lambdas) is pickled with cloudpickle, code and all,
  the way Dask and `multiprocessing` users expect.

    >>> import pickle
    >>> from numpile_capture import compile_function
    >>> double = compile_function(lambda x: x * 2, backend="eager")
    >>> pickle.loads(pickle.dumps(double))(21)  # doctest: +SKIP
    42

(Skipped as a doctest, which imports this module a second time; the round trips
are tested in `packages/capture/tests/test_capture_pickling.py`.)
"""

from __future__ import annotations

import hashlib
import importlib
import pickle
import types
from collections.abc import Callable
from typing import Any

from numpile_runtime import new_lock

__all__ = ["compiled_from_reference", "compiled_from_value", "reduce_compiled"]

# Settings a compiled function is rebuilt with: the keyword arguments of `compile`.
Settings = dict[str, Any]

# NOTE: process-wide memo of functions unpickled by value, keyed by the payload's sha256: a
# task scheduler that sends the same function with every task gets one compiled function
# (one in-memory guard cache) per process, not one per task.
_BY_VALUE: dict[str, Callable[..., Any]] = {}
_BY_VALUE_LOCK = new_lock()


def reduce_compiled(compiled: Any, fn: types.FunctionType, settings: Settings) -> tuple[Any, ...]:
    """`__reduce__` of a compiled function wrapping `fn`, compiled with `settings`.

    >>> reduce_compiled(object(), lambda x: x, {})[0].__name__  # a lambda: by value
    'compiled_from_value'
    """
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", "")
    if module and _importable(module) and "<locals>" not in qualname:
        found = _lookup(module, qualname)
        if found is compiled or found is fn:
            return (compiled_from_reference, (module, qualname, settings))
    return (compiled_from_value, (_dumps_by_value(fn, settings),))


def _importable(module: str) -> bool:
    # Another process can import it by name: not a script's __main__, nor a module that
    # runpy or exec made (no import spec, or a name like "<run_path>").
    if module == "__main__" or not all(part.isidentifier() for part in module.split(".")):
        return False
    import sys

    loaded = sys.modules.get(module)
    return loaded is not None and getattr(loaded, "__spec__", None) is not None


def compiled_from_reference(module: str, qualname: str, settings: Settings) -> Callable[..., Any]:
    """The compiled function at `module.qualname` (compiled here if the name is a plain function).

    >>> compiled_from_reference("json", "dumps", {"backend": "eager"})([1])
    '[1]'
    """
    found = _lookup(module, qualname, load=True)
    if found is None:
        raise pickle.UnpicklingError(
            f"cannot unpickle the compiled function {module}.{qualname}: the name no longer "
            "exists in that module (is the same version of the code installed here?)"
        )
    if getattr(found, "_numpile_original", None) is not None:
        return found  # type: ignore[no-any-return]
    return _compile(found, settings)


def compiled_from_value(payload: bytes) -> Callable[..., Any]:
    """A compiled function rebuilt from a cloudpickle `payload` of (function, settings, file).

    >>> import cloudpickle
    >>> compiled_from_value(cloudpickle.dumps((abs, {"backend": "eager"}, "")))(-3)
    3
    """
    key = hashlib.sha256(payload).hexdigest()
    with _BY_VALUE_LOCK:
        found = _BY_VALUE.get(key)
    if found is not None:
        return found
    fn, settings, filename = pickle.loads(payload)
    if isinstance(fn, types.FunctionType) and fn.__code__.co_filename != filename:
        # cloudpickle drops the file name; warnings and errors should still name the user's file.
        fn.__code__ = _with_filename(fn.__code__, filename)
    compiled = _compile(fn, settings)
    with _BY_VALUE_LOCK:
        return _BY_VALUE.setdefault(key, compiled)


def _compile(fn: Any, settings: Settings) -> Callable[..., Any]:
    if not isinstance(fn, types.FunctionType):
        return fn  # type: ignore[no-any-return]  # a builtin: nothing to compile
    from .entry_point import compile_function  # late: entry_point imports the dispatcher

    return compile_function(fn, **settings)


def _lookup(module: str, qualname: str, *, load: bool = False) -> Any:
    try:
        found: Any = importlib.import_module(module) if load else _loaded(module)
    except ImportError:
        return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


def _loaded(module: str) -> Any:
    import sys

    found = sys.modules.get(module)
    if found is None:
        raise ImportError(module)
    return found


def _dumps_by_value(fn: types.FunctionType, settings: Settings) -> bytes:
    try:
        import cloudpickle  # late: only functions pickled by value need it
    except ImportError as error:
        raise pickle.PicklingError(
            f"{fn.__qualname__} cannot be imported by name in another process "
            f"(defined in {fn.__module__!r}), so numpile pickles it by value, which needs "
            "cloudpickle: pip install cloudpickle"
        ) from error
    return bytes(cloudpickle.dumps((fn, settings, fn.__code__.co_filename)))


def _with_filename(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(
        _with_filename(const, filename) if isinstance(const, types.CodeType) else const
        for const in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)
