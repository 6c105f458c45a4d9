"""The call dispatcher: what happens each time a compiled function is called.

`compile_function(fn)` (the `numpile.compile` entry point) returns a
`CompiledFunction`. Calling it:

1. reads the stance ("force_eager" runs `fn` as is);
2. binds the arguments into `L` (defaults applied), with `G = fn.__globals__`
   and `F = fn`;
3. checks the cached entries of `fn.__code__` (closures of one code share a
   cache; guards on `F` tell them apart): a hit fetches the inputs and runs
   the compiled callable, nothing else;
4. a miss logs why each entry was rejected (logger
   "numpile.capture.recompiles"), then captures the function, hands the
   graph to the backend, compiles the guards, checks that they accept the
   very inputs they were built from, caches the entry and runs it.

Code that cannot be captured runs eagerly (one warning per function), or
raises `Unsupported` with `fullgraph=True`. A capture that fails for any other
reason (an invalid NumPy program) runs the function eagerly, so the user sees
NumPy's own exception from their own line.

    >>> @compile_function
    ... def f(x):
    ...     return np.sin(x) + 1
    >>> f(np.zeros(3))  # doctest: +SKIP
    array([1., 1., 1.])
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import attrs

from numpile_guards import (
    CacheEntry,
    CodeCache,
    Guard,
    cache_for,
    clear_caches,
    compile_fetch,
    compile_guards,
)

from .backends import (
    BackendCompileError,
    BackendFn,
    accepted_options,
    backend_name,
    lookup_backend,
)
from .capture_result import CaptureResult, Unsupported
from .config import config
from .graph import Graph
from .stance import Stance, compiled_region, current_stance
from .trace_rules import in_disabled_region

if TYPE_CHECKING:
    from .graph_break import GraphBreak

log = logging.getLogger("numpile.capture")
recompiles_log = logging.getLogger("numpile.capture.recompiles")

CaptureFn: TypeAlias = Callable[
    [types.FunctionType, tuple[Any, ...], dict[str, Any]], "CaptureResult | GraphBreak"
]
CacheProvider: TypeAlias = Callable[[types.CodeType], CodeCache]

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

# NOTE: one lock for every compile: captures and cache mutations are serialized, guard
# checks on the hit path are not (they only read an entry list that is swapped whole).
_COMPILE_LOCK = threading.RLock()

_capture_state = threading.local()


class CaptureFallbackWarning(UserWarning):
    """A compiled function runs eagerly: it could not be captured, or hit the cache limit.

    Silence it with `warnings.filterwarnings("ignore", category=CaptureFallbackWarning)`.
    """


class InternalCompilerError(RuntimeError):
    """numpile itself failed (e.g. guards rejected the inputs they were built from).

    Set `config.suppress_errors = True` to run such functions eagerly instead.
    """


def _capture_with_breaks(
    fn: types.FunctionType, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> CaptureResult | GraphBreak:
    # Late import, as above.
    from .graph_break import capture_with_breaks

    return capture_with_breaks(fn, args, kwargs)


def _capture_full_graph(
    fn: types.FunctionType, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> CaptureResult | GraphBreak:
    # fullgraph=True: any break raises; side effects are still replayed after the graph.
    from .graph_break import capture_with_breaks

    return capture_with_breaks(fn, args, kwargs, fullgraph=True)


@attrs.frozen
class CaptureEvent:
    """One capture seen by `recording_captures`: its graph (None if none), guards, break.

    `break_reason` is set when the capture ended at a graph break (`eager` False)
    or could not be captured at all (`eager` True: the function ran eagerly).
    """

    name: str
    graph: Graph | None
    guards: tuple[Guard, ...]
    break_reason: str | None = None
    filename: str | None = None
    lineno: int | None = None
    eager: bool = False
    # NOTE: True for resume functions and callees compiled at a graph break.
    internal: bool = False


@contextlib.contextmanager
def recording_captures() -> Iterator[list[CaptureEvent]]:
    """Collect a `CaptureEvent` for every capture on this thread inside the block.

    >>> with recording_captures() as events:
    ...     pass
    >>> events
    []
    """
    events: list[CaptureEvent] = []
    previous = getattr(_capture_state, "events", None)
    _capture_state.events = events
    try:
        yield events
    finally:
        _capture_state.events = previous


def _record(event: CaptureEvent) -> None:
    events = getattr(_capture_state, "events", None)
    if events is not None:
        events.append(event)


def _is_capturing() -> bool:
    return bool(getattr(_capture_state, "depth", 0))


def _binder_source(code: types.CodeType, has_defaults: int, kwdefaults: dict[str, Any]) -> str:
    # A function with fn's exact parameters that returns them as a dict: CPython binds.
    positional = code.co_argcount
    posonly = code.co_posonlyargcount
    kwonly = code.co_kwonlyargcount
    names = code.co_varnames
    params: list[str] = []
    first_default = positional - has_defaults
    for index in range(positional):
        default = f"=_d[{index - first_default}]" if index >= first_default else ""
        params.append(f"{names[index]}{default}")
        if posonly and index == posonly - 1:
            params.append("/")
    cursor = positional + kwonly
    if code.co_flags & inspect.CO_VARARGS:
        params.append(f"*{names[cursor]}")
        cursor += 1
    elif kwonly:
        params.append("*")
    for index in range(positional, positional + kwonly):
        name = names[index]
        params.append(f"{name}=_kd[{name!r}]" if name in kwdefaults else name)
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append(f"**{names[cursor]}")
    bound = [name for name in params if name not in ("/", "*")]
    keys = [name.split("=")[0].lstrip("*") for name in bound]
    body = ", ".join(f"{key!r}: {key}" for key in keys)
    return f"def bind({', '.join(params)}):\n    return {{{body}}}\n"


def _make_binder(fn: types.FunctionType) -> Callable[..., dict[str, Any]]:
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    source = _binder_source(fn.__code__, len(defaults), kwdefaults)
    namespace: dict[str, Any] = {"_d": defaults, "_kd": kwdefaults}
    exec(compile(source, f"<numpile binder {fn.__qualname__}>", "exec"), namespace)
    binder: Callable[..., dict[str, Any]] = namespace["bind"]
    return binder


def _options_key(options: dict[str, Any] | None) -> Any:
    if options is None:
        return None
    return tuple(sorted((str(key), repr(value)) for key, value in options.items()))


def _where(fn: types.FunctionType) -> str:
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"


class CompiledFunction:
    """A Python function wrapped by `numpile.compile`; calling it dispatches (see module doc).

    `_numpile_original` is the wrapped function (the tracer inlines it when a
    compiled function is called from compiled code); `__wrapped__` too.

        >>> compiled = CompiledFunction(lambda x: x + 1)
        >>> compiled._numpile_original(1)
        2
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        fullgraph: bool = False,
        dynamic: bool | None = None,
        backend: str | BackendFn | None = None,
        mode: str | None = None,
        options: dict[str, Any] | None = None,
        capture_fn: CaptureFn | None = None,
        cache_provider: CacheProvider | None = None,
    ) -> None:
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"numpile.compile expects a Python function, got {fn!r}")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._numpile_original = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.mode = mode
        self.options = options
        self.backend = config.default_backend if backend is None else backend
        self._backend_fn = lookup_backend(self.backend)
        self._backend_kwargs = _backend_kwargs(
            self._backend_fn, self.backend, mode, options, warn=False
        )
        self._tag = self._make_tag(self._backend_fn)
        default_capture = _capture_full_graph if fullgraph else _capture_with_breaks
        self._capture_fn: CaptureFn = capture_fn or default_capture
        self._cache_provider: CacheProvider = cache_provider or cache_for
        # NOTE: resume functions and callees compiled at graph breaks log their eager
        # fallbacks instead of warning: the user did not decorate them.
        self._quiet = False
        # NOTE: compiled resume functions and callees made at graph breaks, by code and closure.
        self._wrapped: dict[Any, tuple[types.FunctionType, CompiledFunction]] = {}
        self._forced: dict[int, tuple[Any, BackendFn, dict[str, Any]]] = {}
        self._code = fn.__code__
        self._defaults = fn.__defaults__
        self._kwdefaults = fn.__kwdefaults__
        self._bind = _make_binder(fn)
        self._cache = self._cache_provider(fn.__code__)

    def __repr__(self) -> str:
        return f"<numpile compiled {self._fn.__qualname__} at {_where(self._fn)}>"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        # Compiled methods: bind like a function would.
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def _make_tag(self, backend_fn: BackendFn) -> Any:
        # Entries are reused only for the same backend and compile options.
        options = _options_key(self.options)
        return (backend_fn, self.mode, options, self.fullgraph, self.dynamic)

    def _backend_for(self, stance: Stance) -> tuple[Any, BackendFn, dict[str, Any]]:
        forced = stance.force_backend
        if forced is None:
            return self._tag, self._backend_fn, self._backend_kwargs
        found = self._forced.get(id(forced))
        if found is None:
            backend_fn = lookup_backend(forced)
            kwargs = _backend_kwargs(backend_fn, forced, self.mode, self.options, warn=False)
            found = (self._make_tag(backend_fn), backend_fn, kwargs)
            self._forced[id(forced)] = found
        return found

    def _bound_locals(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        fn = self._fn
        stale = fn.__code__ is not self._code or fn.__defaults__ is not self._defaults
        if stale or fn.__kwdefaults__ is not self._kwdefaults:
            self._code = fn.__code__
            self._defaults = fn.__defaults__
            self._kwdefaults = fn.__kwdefaults__
            self._bind = _make_binder(fn)
            self._cache = self._cache_provider(fn.__code__)
        return self._bind(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        stance = current_stance()
        fn = self._fn
        if stance.name == "force_eager" or _is_capturing() or in_disabled_region():
            return fn(*args, **kwargs)
        try:
            L = self._bound_locals(args, kwargs)
        except TypeError:
            # Wrong arguments: let Python raise its own error from the function itself.
            return fn(*args, **kwargs)
        G = fn.__globals__
        cache = self._cache
        tag, backend_fn, backend_kwargs = self._backend_for(stance)
        entry = cache.lookup(L, G, fn, tag, skip_guards_unsafe=stance.skip_guard_eval_unsafe)
        if entry is not None:
            return entry.compiled(*entry.fetch(L, G, fn))
        with _COMPILE_LOCK:
            return self._miss(cache, stance, L, args, kwargs, tag, backend_fn, backend_kwargs)

    def _run_eagerly(self, stance: Stance, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if stance.name == "eager_on_recompile":
            return self._fn(*args, **kwargs)
        with compiled_region():
            return self._fn(*args, **kwargs)

    def _miss(
        self,
        cache: CodeCache,
        stance: Stance,
        L: dict[str, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tag: Any,
        backend_fn: BackendFn,
        backend_kwargs: dict[str, Any],
    ) -> Any:
        fn = self._fn
        G = fn.__globals__
        if cache.eager_reason is not None or stance.name == "eager_on_recompile":
            return self._run_eagerly(stance, args, kwargs)
        has_entries = bool(cache.entries_for(tag))
        if stance.name == "fail_on_recompile":
            raise RuntimeError(self._fail_on_recompile_message(cache, L, tag))
        if has_entries:
            reason = cache.record_recompile(L, G, fn, tag)
            recompiles_log.info("%s", reason)
            if cache.is_full(tag, config.cache_size_limit):
                if not cache.limit_warned:
                    cache.limit_warned = True
                    self._warn(self._limit_message(reason.failures), fn.__code__.co_firstlineno)
                return self._run_eagerly(stance, args, kwargs)
        return self._compile_and_run(
            cache, stance, L, args, kwargs, tag, backend_fn, backend_kwargs
        )

    def _compile_and_run(
        self,
        cache: CodeCache,
        stance: Stance,
        L: dict[str, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tag: Any,
        backend_fn: BackendFn,
        backend_kwargs: dict[str, Any],
    ) -> Any:
        fn = self._fn
        capture_error: Exception | None = None
        _capture_state.depth = getattr(_capture_state, "depth", 0) + 1
        try:
            with compiled_region():
                result = self._capture_fn(fn, args, kwargs)
        except Unsupported as exc:
            if self.fullgraph:
                cause = exc if config.verbose else None
                raise Unsupported(exc.reason, exc.filename, exc.lineno) from cause
            cache.eager_reason = str(exc)
            name = fn.__code__.co_qualname
            event = CaptureEvent(name, None, (), exc.reason, exc.filename, exc.lineno, True)
            _record(attrs.evolve(event, internal=self._quiet))
            self._warn(self._unsupported_message(exc), exc.lineno, exc.filename)
            return self._run_eagerly(stance, args, kwargs)
        except Exception as exc:
            capture_error = exc
        finally:
            _capture_state.depth -= 1
        if capture_error is not None:
            # Outside the except block, so NumPy's error from eager is not chained to ours.
            return self._eager_after_capture_error(cache, stance, capture_error, args, kwargs)
        if not isinstance(result, CaptureResult):
            return self._compile_break(cache, stance, L, args, kwargs, tag, backend_fn, result)
        fetch = compile_fetch(result.input_sources)
        example_inputs = list(fetch(L, fn.__globals__, fn))
        compiled = self._backend_compile(
            backend_fn, result.graph, example_inputs, stance, backend_kwargs
        )
        if compiled is None:
            cache.eager_reason = f"backend failed to compile {fn.__qualname__}"
            return self._run_eagerly(stance, args, kwargs)
        check = self._checked_guards(result.guards, L)
        if check is None:
            cache.eager_reason = "guards reject the inputs they were built from"
            return self._run_eagerly(stance, args, kwargs)
        self._log_compile(result.graph, check.source, stance)
        has_ops = any(node.op is not None for node in result.graph)
        graph = result.graph if has_ops else None
        _record(CaptureEvent(fn.__code__.co_qualname, graph, result.guards))
        metadata = {"graph": result.graph, "backend": self._backend_label(stance)}
        metadata["guards"] = result.guards
        entry = CacheEntry(check, fetch, compiled, tag, metadata)
        cache.add(entry)
        return entry.compiled(*example_inputs)

    def _compile_break(
        self,
        cache: CodeCache,
        stance: Stance,
        L: dict[str, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tag: Any,
        backend_fn: BackendFn,
        result: GraphBreak,
    ) -> Any:
        # Late import, as in _capture_with_breaks.
        from .graph_break import BreakRunner

        fn = self._fn
        fetch = compile_fetch(result.fetch_sources)
        fetched = list(fetch(L, fn.__globals__, fn))
        graph_fn = None
        if result.op_count:
            _, _, backend_kwargs = self._backend_for(stance)
            example_inputs = fetched[: result.input_count]
            graph_fn = self._backend_compile(
                backend_fn, result.graph, example_inputs, stance, backend_kwargs
            )
            if graph_fn is None:
                cache.eager_reason = f"backend failed to compile {fn.__qualname__}"
                return self._run_eagerly(stance, args, kwargs)
        check = self._checked_guards(result.guards, L)
        if check is None:
            cache.eager_reason = "guards reject the inputs they were built from"
            return self._run_eagerly(stance, args, kwargs)
        graph = result.graph if result.op_count else None
        if graph is not None:
            self._log_compile(graph, check.source, stance)
        reason = None if result.replay_only else result.reason
        event = CaptureEvent(
            fn.__code__.co_qualname, graph, result.guards, reason, result.filename, result.lineno
        )
        _record(event)
        runner = BreakRunner(result, graph_fn, fn, self._wrap)
        metadata = {"graph": result.graph, "backend": self._backend_label(stance)}
        metadata.update({"guards": result.guards, "graph_break": result})
        entry = CacheEntry(check, fetch, runner, tag, metadata)
        cache.add(entry)
        return runner(*fetched)

    def _wrap(self, fn: types.FunctionType) -> CompiledFunction:
        # Resume functions and callees at graph breaks: compiled like this function.
        key = (fn.__code__, tuple(id(cell) for cell in fn.__closure__ or ()))
        found = self._wrapped.get(key)
        if found is None:
            compiled = CompiledFunction(
                fn,
                dynamic=self.dynamic,
                backend=self.backend,
                mode=self.mode,
                options=self.options,
                cache_provider=self._cache_provider,
            )
            compiled._quiet = True
            found = (fn, compiled)
            self._wrapped[key] = found
        return found[1]

    def _backend_label(self, stance: Stance) -> str:
        return backend_name(self.backend if stance.force_backend is None else stance.force_backend)

    def _backend_compile(
        self,
        backend_fn: BackendFn,
        graph: Graph,
        example_inputs: list[Any],
        stance: Stance,
        backend_kwargs: dict[str, Any],
    ) -> Callable[..., Any] | None:
        fn = self._fn
        try:
            compiled: Callable[..., Any] = backend_fn(graph, example_inputs, **backend_kwargs)
        except Exception as exc:
            name = self._backend_label(stance)
            message = f"backend {name!r} failed to compile {fn.__qualname__} ({_where(fn)}): {exc}"
            if config.suppress_errors:
                log.warning("%s; running it eagerly (suppress_errors=True)", message, exc_info=True)
                return None
            raise BackendCompileError(message) from exc
        return compiled

    def _checked_guards(self, guards: tuple[Guard, ...], L: dict[str, Any]) -> Any:
        fn = self._fn
        G = fn.__globals__
        check = compile_guards(guards)
        if not check(L, G, fn):
            failure = check.failure(L, G, fn)
            message = (
                f"guards of {fn.__qualname__} ({_where(fn)}) reject the inputs they were built "
                f"from: {failure}. This is a numpile bug; please report it with the function."
            )
            if config.suppress_errors:
                log.warning("%s; running it eagerly (suppress_errors=True)", message)
                return None
            raise InternalCompilerError(message)
        return check

    def _log_compile(self, graph: Graph, guard_source: str, stance: Stance) -> None:
        level = logging.INFO if config.verbose else logging.DEBUG
        name = self._backend_label(stance)
        qualname = self._fn.__qualname__
        log.log(level, "compiled %s with %s:\n%s\n%s", qualname, name, graph, guard_source)

    def _eager_after_capture_error(
        self,
        cache: CodeCache,
        stance: Stance,
        error: Exception,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        # An invalid program: eager raises NumPy's own error from the user's line. If eager
        # succeeds, capture was wrong; never return a wrong result: keep running eagerly.
        result = self._run_eagerly(stance, args, kwargs)
        fn = self._fn
        log.warning(
            "capturing %s (%s) raised %s: %s, but the function runs fine eagerly; "
            "running it eagerly from now on",
            fn.__qualname__,
            _where(fn),
            type(error).__name__,
            error,
            exc_info=error if config.verbose else None,
        )
        cache.eager_reason = f"capture raised {type(error).__name__}: {error}"
        return result

    def _warn(self, message: str, lineno: int | None, filename: str | None = None) -> None:
        code = self._fn.__code__
        if self._quiet:
            log.info("%s", message)
            return
        warnings.warn_explicit(
            message,
            CaptureFallbackWarning,
            filename or code.co_filename,
            lineno or code.co_firstlineno,
            module=self._fn.__module__,
        )

    def _unsupported_message(self, exc: Unsupported) -> str:
        name = self._fn.__qualname__
        return (
            f"numpile could not capture {name}: {exc}; running {name} eagerly from now on "
            "(numpile.reset() forgets this). Pass fullgraph=True to make this an error, or "
            "silence it with warnings.filterwarnings('ignore', "
            "category=numpile_capture.CaptureFallbackWarning)."
        )

    def _limit_message(self, failures: tuple[str, ...]) -> str:
        fn = self._fn
        last = failures[0] if failures else "unknown"
        return (
            f"{fn.__qualname__} ({_where(fn)}) hit numpile.config.cache_size_limit "
            f"({config.cache_size_limit}); new kinds of inputs run eagerly from now on "
            f"(cached compiled code is still used). Last recompile reason: {last}. Raise "
            "numpile.config.cache_size_limit, or make the inputs more uniform; the logger "
            "'numpile.capture.recompiles' shows every recompile."
        )

    def _fail_on_recompile_message(self, cache: CodeCache, L: dict[str, Any], tag: Any) -> str:
        fn = self._fn
        message = (
            "Detected recompile when numpile.compile stance is 'fail_on_recompile'. "
            f"function: {fn.__qualname__!r}, file: {fn.__code__.co_filename!r}, "
            f"line: {fn.__code__.co_firstlineno}"
        )
        failures = cache.failures(L, fn.__globals__, fn, tag)
        if failures:
            lines = "\n".join(f"    - {text}" for text in failures)
            message += f"\n  triggered by the following guard failure(s):\n{lines}"
        return message


def _backend_kwargs(
    backend_fn: BackendFn,
    backend: str | BackendFn,
    mode: str | None,
    options: dict[str, Any] | None,
    *,
    warn: bool = True,
) -> dict[str, Any]:
    accepted = accepted_options(backend_fn)
    kwargs: dict[str, Any] = {}
    name = backend_name(backend)
    if mode is not None and mode != "default":
        if "mode" in accepted:
            kwargs["mode"] = mode
        elif warn:
            warnings.warn(
                f"backend {name!r} takes no mode; mode={mode!r} is ignored",
                UserWarning,
                stacklevel=3,
            )
    if options is not None:
        if "options" not in accepted:
            raise TypeError(f"backend {name!r} takes no options; got options={options!r}")
        kwargs["options"] = options
    return kwargs


def _validate_mode(mode: str | None, options: dict[str, Any] | None) -> None:
    if mode is not None and options is not None:
        raise ValueError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")


def _unwrap(model: Callable[..., Any]) -> Callable[..., Any]:
    original = getattr(model, "_numpile_original", None)
    return original if original is not None else model


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
) -> Any:
    """Compile a NumPy function: `@compile`, `@compile(...)` or `compile(fn)`.

    fullgraph: raise `Unsupported` instead of running eagerly what cannot be
        captured.
    dynamic: None (default), True or False: shape specialization policy
        (reserved; the tracer specializes shapes today).
    backend: a registered backend name or a callable `(graph, example_inputs)`;
        None means `config.default_backend`.
    mode: "default", "reduce-overhead", "max-autotune" or
        "max-autotune-no-cudagraphs", passed to backends that accept `mode`.
    options: a dict of backend options, passed to backends that accept
        `options`; exclusive with `mode`.
    disable: return `model` unchanged.

        >>> @compile_function(backend="eager")
        ... def f(x):
        ...     return x * 2
    """
    _validate_mode(mode, options)
    chosen = config.default_backend if backend is None else backend
    # Checked here, at the user's call: unknown names, and mode/options the backend refuses.
    _backend_kwargs(lookup_backend(chosen), chosen, mode, options)

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
        return CompiledFunction(
            _unwrap(fn),
            fullgraph=fullgraph,
            dynamic=dynamic,
            backend=backend,
            mode=mode,
            options=options,
        )

    if model is None:
        return decorate
    return decorate(model)


def reset() -> None:
    """Forget every compiled entry, recompile reason and eager-fallback flag.

    >>> reset()
    """
    with _COMPILE_LOCK:
        clear_caches()
    log.debug("numpile.reset(): every code cache cleared")
