"""`compile_function`: the `numpile.compile` entry point (decorator or call).

It validates `mode`/`options` and the backend at the user's call, then wraps
the function in a `CompiledFunction` (see `dispatch`), which does the rest on
each call.

    >>> @compile_function(backend="eager")
    ... def f(x):
    ...     return x * 2
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, overload

from .backends import BackendFn, default_backend, lookup_backend
from .compile_options import backend_kwargs, validate_mode
from .compiled_callees import compiles_callees, compiling_callees
from .dispatch import CompiledFunction
from .numpy_wrapper import WRAPPED_ATTRIBUTE, with_device_results


def _backend_for_device(device: str | None, backend: str | BackendFn | None) -> Any:
    # device="cuda" is the inductor's Triton backend (registered by numpile_inductor).
    if device is None:
        return backend
    if device != "cuda":
        raise ValueError(f"unknown device {device!r}; valid devices: None, 'cuda'")
    chosen = default_backend() if backend is None else backend
    if chosen not in ("inductor", "triton"):
        raise ValueError(
            f"device='cuda' runs Triton kernels; it needs backend 'inductor' or 'triton', "
            f"not {chosen!r}"
        )
    return "triton"


def _unwrap(model: Callable[..., Any]) -> Callable[..., Any]:
    original: Callable[..., Any] | None = getattr(model, "_numpile_original", None)
    if original is not None:
        return original
    plain = isinstance(model, types.FunctionType | type) or not callable(model)
    if not plain and not hasattr(model, "__code__"):
        return _builtin_caller(model)  # a builtin, a ufunc, a callable object
    return model


def _builtin_caller(builtin: Callable[..., Any]) -> Callable[..., Any]:
    # A builtin has no bytecode: compile a Python frame that calls it, as torch does. Capture
    # then meets the call: a NumPy binding or a `substitute_in_graph` polyfill is traced;
    # anything else is Unsupported (a graph break, or the error with fullgraph=True).
    def call_builtin(*args: Any, **kwargs: Any) -> Any:
        return builtin(*args, **kwargs)

    call_builtin.__name__ = getattr(builtin, "__name__", call_builtin.__name__)
    call_builtin.__qualname__ = getattr(builtin, "__qualname__", call_builtin.__qualname__)
    call_builtin.__doc__ = builtin.__doc__
    call_builtin.__wrapped__ = builtin  # type: ignore[attr-defined]
    return call_builtin


@overload
def compile_function(
    model: None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | BackendFn | None = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    device: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...


@overload
def compile_function(
    model: Callable[..., Any],
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | BackendFn | None = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    device: str | None = None,
) -> Callable[..., Any]: ...


def compile_function(
    model: Callable[..., Any] | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | BackendFn | None = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    device: str | None = None,
) -> Any:
    """Compile a NumPy function: `@compile`, `@compile(...)` or `compile(fn)`.

    fullgraph: raise `Unsupported` instead of running eagerly what cannot be
        captured.
    dynamic: None (default) compiles static sizes first and makes a size
        symbolic once a recompile sees it change; True makes every size
        symbolic from the first compile; False always specializes (see
        `mark_dynamic` / `mark_static` for single dims). Python int and float
        inputs follow it too: a dynamic one is a graph input, not a constant
        (`config.specialize_int` / `specialize_float` opt out).
    backend: a registered backend name or a callable `(graph, example_inputs)`;
        None means `config.default_backend`, and when that is None the best backend
        installed (`preferred_backend()`: the inductor when numpile_inductor is).
    mode: "default", "reduce-overhead", "max-autotune" or
        "max-autotune-no-cudagraphs", passed to backends that accept `mode`.
    options: a dict of backend options, passed to backends that accept
        `options`; exclusive with `mode`.
    disable: return `model` unchanged.
    device: None (default) runs where the inputs are (NumPy arrays on the CPU,
        CuPy arrays on their GPU); "cuda" runs NumPy inputs as Triton kernels
        on the GPU, copying them in and the results out once per call.

        >>> @compile_function(backend="eager")
        ... def f(x):
        ...     return x * 2
    """
    validate_mode(mode, options)
    backend = _backend_for_device(device, backend)
    chosen = default_backend() if backend is None else backend
    # Checked here, at the user's call: unknown names, and mode/options the backend refuses.
    backend_kwargs(lookup_backend(chosen), chosen, mode, options)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if disable:
            return fn
        if isinstance(fn, types.MethodType):
            compiled = compile_function(
                fn.__func__,
                fullgraph=fullgraph,
                dynamic=dynamic,
                backend=backend,
                mode=mode,
                options=options,
            )
            return types.MethodType(compiled, fn.__self__)
        compiled = CompiledFunction(
            _unwrap(fn),
            fullgraph=fullgraph,
            dynamic=dynamic,
            backend=backend,
            mode=mode,
            options=options,
        )
        if compiles_callees(fn):
            # disable(f, recursive=False) compiled: f runs in Python, its callees compile.
            return functools.wraps(fn)(compiling_callees(fn, compiled._wrap))
        if getattr(fn, WRAPPED_ATTRIBUTE, False):
            # wrap_numpy(f) compiled: f compiled; NumPy results of CuPy calls go to the GPU.
            return functools.wraps(fn)(with_device_results(compiled))
        return compiled

    if model is None:
        return decorate
    return decorate(model)
