"""The call dispatcher: what happens each time a compiled function is called.

`compile_function(fn)` (the `numpile.compile` entry point) returns a
`CompiledFunction`. Calling it:

0. takes the fast path when it can: the entries the last two calls that hit different
   entries hit are remembered, most recent first (a hit on the second moves it to the
   front, so calls whose guards alternate between two entries look nothing up), each
   with the dispatch epoch it was found in (`numpile_guards.EPOCH`, advanced by a new
   stance, `reset()` and every entry added); while the epoch is the same, this
   thread is in no region that runs compiled functions as plain Python
   (`region.PLAIN_CALLS`) and `fn`'s code and defaults are the ones bound, the
   call binds its arguments, runs the remembered entries' guard checks and, when one passes,
   fetches the inputs and runs the compiled code. Those four are one generated
   function per entry (`numpile_guards.compile_entry`: `fn`'s own parameters, the
   guards over them as local variables, the compiled callable called with the
   inputs spelled out), made when the entry is first remembered. Anything else
   takes steps 1-4;
1. reads the stance ("force_eager" runs `fn` as is);
2. binds the arguments into `L` (defaults applied), with `G = fn.__globals__`
   and `F = fn`;
3. checks the cached entries of `fn.__code__` (closures of one code share a
   cache; guards on `F` tell them apart): a hit fetches the inputs and runs
   the compiled callable, nothing else;
4. a miss logs why each entry was rejected (logger
   "numpile.recompiles"), then captures the function, hands the
   graph to the backend, compiles the guards, checks that they accept the
   very inputs they were built from, caches the entry and runs it.

Code that cannot be captured runs eagerly (one warning per function), or
raises `Unsupported` with `fullgraph=True`. A capture that fails for any other
reason (an invalid NumPy program) runs the function eagerly, so the user sees
NumPy's own exception from their own line.

    >>> from numpile_capture import compile_function
    >>> @compile_function
    ... def f(x):
    ...     return np.sin(x) + 1
    >>> f(np.zeros(3))  # doctest: +SKIP
    array([1., 1., 1.])
"""

from __future__ import annotations

import functools
import logging
import threading
import types
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from numpile_guards import (
    EPOCH,
    CacheEntry,
    CheckFn,
    CodeCache,
    FetchFn,
    Guard,
    cache_for,
    clear_caches,
    compile_entry,
    compile_fetch,
    compile_guards,
    filter_guards,
    fusable,
    gate_generation,
    split_guard_filter,
)
from numpile_runtime import (
    BuildError,
    compile_progress,
    compiling,
    compiling_in_this_thread,
    new_rlock,
    numpile_code_only,
    timed,
)

from .backends import (
    BackendCompileError,
    BackendFn,
    backend_name,
    default_backend,
    lookup_backend,
    prepare_backend,
)
from .binder import entry_parameters, make_binder
from .bound_origins import capture_widening, drop_body_widening
from .capture_events import CaptureEvent as CaptureEvent
from .capture_events import record_event
from .capture_events import recording_captures as recording_captures
from .capture_result import CaptureResult, Unsupported
from .compile_options import MODES as MODES
from .compile_options import backend_kwargs
from .compiling import backend_compiling
from .config import config
from .dynamic_shapes import (
    DynamicPolicy,
    accepts_dynamic_shapes,
    body_widening,
    capturing_with,
    forget_observed_sizes,
    graph_has_scalar_inputs,
    graph_has_symbols,
    observed_scalars,
    observed_sizes,
    set_active_shape_env,
    symbolic_params,
    unshared_sources,
    used_symbols,
)
from .eager_tier import NotCompiledYet, offer_eager_tier
from .entry_gate import gates_available, install_caller, make_gate
from .fallbacks import (
    CaptureFallbackWarning as CaptureFallbackWarning,
)
from .fallbacks import (
    DynamicCompileError,
    fail_on_recompile_message,
    limit_message,
    unsupported_message,
    where,
)
from .fallbacks import (
    InternalCompilerError as InternalCompilerError,
)
from .graph import Graph
from .graph_sizes import sympy_sizes
from .light_capture import capture_light_first, takes_light_sizes
from .loop_tiers import LoopTier, collecting_loop_tiers, merged_loop_tiers
from .performance_hints import report_graph_break
from .pickling import reduce_compiled
from .region import PLAIN_CALLS
from .stance import Stance, compiled_region, current_stance
from .trace_rules import ForbiddenCallError, in_disabled_region

if TYPE_CHECKING:
    from .graph_breaks import GraphBreak

log = logging.getLogger("numpile.capture")
recompiles_log = logging.getLogger("numpile.recompiles")
dynamic_log = logging.getLogger("numpile.capture.dynamic")

CaptureFn: TypeAlias = Callable[
    [types.FunctionType, tuple[Any, ...], dict[str, Any]], "CaptureResult | GraphBreak"
]
CacheProvider: TypeAlias = Callable[[types.CodeType], CodeCache]

# NOTE: a miss owns the compile turn of its code object only (`numpile_runtime.locks`):
# captures and cache mutations of one code are serialized, guard checks on the hit path are
# not (they only read an entry list that is swapped whole). Owning a turn holds no lock, and
# other callers wait for it only while the backend of numpile's own and the cache insertion
# run (`numpile_code_only`); anything of the user's (capture, guards, fetches, a user
# backend) makes them run eagerly instead. With its turn a miss decides what to run (a
# `Run`); the caller runs it after the turn ends. `reset()` holds `_RESET_LOCK`.
_RESET_LOCK = new_rlock()

# What a miss hands back to run once the compile lock is released.
Run: TypeAlias = Callable[[], Any]

# NOTE: `resume_code.TailCall`, set by the first graph break compiled (a late import: the
# bytecode machinery costs import time); entries with a `tail` exist only after it.
_TailCall: Any = None

_capture_state = threading.local()


def _capture_with_breaks(
    fn: types.FunctionType, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> CaptureResult | GraphBreak:
    # Late import, as above.
    from .graph_breaks import capture_with_breaks

    return capture_with_breaks(fn, args, kwargs)


def _capture_full_graph(
    fn: types.FunctionType, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> CaptureResult | GraphBreak:
    # fullgraph=True: any break raises; side effects are still replayed after the graph.
    from .graph_breaks import capture_with_breaks

    return capture_with_breaks(fn, args, kwargs, fullgraph=True)


def _is_capturing() -> bool:
    return bool(getattr(_capture_state, "depth", 0))


def _options_key(options: dict[str, Any] | None) -> Any:
    if options is None:
        return None
    return tuple(sorted((str(key), repr(value)) for key, value in options.items()))


@attrs.frozen
class _Hit:
    # The entry a function's last call hit, with everything that made it the answer:
    # valid while `epoch` is the current one and `fn` still has this code and defaults.
    epoch: object
    code: types.CodeType | None
    defaults: Any
    kwdefaults: Any
    bind: Callable[..., dict[str, Any]]
    globals: dict[str, Any]
    check: CheckFn
    fetch: FetchFn
    compiled: Callable[..., Any]
    tail: Callable[..., Any] | None
    # The entry's check, fetch and call fused (`numpile_guards.compile_entry`), taking the
    # call's arguments as `fn` does; None where the parts above run one by one.
    enter: Callable[..., Any] | None = None
    # The same for an entry that breaks, calling `tail` (for `call_tail`: a resume function
    # of a loop whose body breaks is called so once per iteration).
    enter_tail: Callable[..., Any] | None = None
    # The cache entry itself (None for `_NO_HIT`): a hit is demoted to second only when
    # the new one is another entry.
    entry: CacheEntry | None = None
    # The entry's call gate (`entry_gate.make_gate`) armed for `epoch`, or None.
    gate: Any = None


def _no_entry(L: dict[str, Any], G: dict[str, Any], F: Any) -> bool:
    return False


def _no_inputs(L: dict[str, Any], G: dict[str, Any], F: Any) -> tuple[Any, ...]:
    return ()


# NOTE: what a function remembers before its first hit: its epoch is no epoch at all.
_NO_HIT = _Hit(object(), None, None, None, dict, {}, _no_entry, _no_inputs, tuple, None)

# What an entry function returns when the entry's guards reject the call.
_MISS = object()

# Entry functions a compiled function keeps (by entry): past this many, it starts again.
_MAX_ENTRY_FUNCTIONS = 16


def _raised_by_the_call(error: BaseException) -> bool:
    # A TypeError of the call itself (arguments that do not bind) has no frame of the
    # callee in its traceback: CPython raises it before the function runs.
    traceback = error.__traceback__
    return traceback is not None and traceback.tb_next is None


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
        self._guard_filter, _ = split_guard_filter(options)
        self.backend = default_backend() if backend is None else backend
        self._backend_fn = lookup_backend(self.backend)
        self._backend_kwargs = backend_kwargs(
            self._backend_fn, self.backend, mode, options, warn=False
        )
        self._tag = self._make_tag(self._backend_fn)
        default_capture = _capture_full_graph if fullgraph else _capture_with_breaks
        self._capture_fn: CaptureFn = capture_fn or default_capture
        self._cache_provider: CacheProvider = cache_provider or cache_for
        # NOTE: resume functions and callees compiled at graph breaks log their eager
        # fallbacks instead of warning: the user did not decorate them.
        self._quiet = False
        # A resume function inside a loop: its int and float locals are inputs from the start.
        self._loop_locals = False
        # NOTE: compiled resume functions and callees made at graph breaks, by code and closure.
        self._wrapped: dict[Any, tuple[types.FunctionType, CompiledFunction]] = {}
        self._forced: dict[int, tuple[Any, BackendFn, dict[str, Any]]] = {}
        self._code = fn.__code__
        self._defaults = fn.__defaults__
        self._kwdefaults = fn.__kwdefaults__
        self._bind = make_binder(fn)
        self._cache = self._cache_provider(fn.__code__)
        self._hit = _NO_HIT
        # NOTE: the hit remembered before `_hit` (another entry), tried when `_hit`'s guards
        # fail; a hit on it swaps the two (move to front).
        self._second = _NO_HIT
        # NOTE: the remembered entries' call gates (`entry_gate`), armed in `_remember`: what
        # the class's `__call__` runs first once the gate extension is installed (a gate, or
        # a list of two tried in order, which the gate's C code keeps most recent first).
        self._gate: Any = None
        # NOTE: entry functions and gates made for this function, by id of their entry
        # (which they hold): made once per entry, code and defaults, not on every hit; each
        # also says whether the gate extension was loaded then (if not, the gate is made
        # again once it is: see `entry_gate`).
        self._enters: dict[int, tuple[Any, ...]] = {}
        # What the backend's first compile will need (a compiler probe, a precompiled
        # header) starts now, beside whatever runs before the first call; again before
        # each capture, where it costs nothing once started.
        prepare_backend(self._backend_fn, self._backend_kwargs)

    def __repr__(self) -> str:
        return f"<numpile compiled {self._fn.__qualname__} at {where(self._fn)}>"

    def __reduce__(self) -> tuple[Any, ...]:
        # How to compile it again, never what was compiled (see `pickling`).
        settings: dict[str, Any] = {"fullgraph": self.fullgraph, "dynamic": self.dynamic}
        settings.update(mode=self.mode, backend=self.backend, options=self.options)
        return reduce_compiled(self, self._fn, settings)

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
            kwargs = backend_kwargs(backend_fn, forced, self.mode, self.options, warn=False)
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
            self._bind = make_binder(fn)
            self._cache = self._cache_provider(fn.__code__)
        return self._bind(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hit = self._hit
        fn = self._fn
        if (
            hit.epoch is EPOCH.current
            and not PLAIN_CALLS.depth
            and fn.__code__ is hit.code
            and fn.__defaults__ is hit.defaults
            and fn.__kwdefaults__ is hit.kwdefaults
        ):
            enter = hit.enter
            if enter is not None:
                try:
                    result = enter(*args, **kwargs)
                except TypeError as error:
                    if not _raised_by_the_call(error):
                        raise
                    # Wrong arguments: let Python raise its own error from the function.
                    return fn(*args, **kwargs)
                except NotCompiledYet:  # tiered: the function's own Python this call
                    return self._run_eagerly(current_stance(), args, kwargs)
                if result is not _MISS:
                    return result
                return self._enter_second(args, kwargs)
            try:
                L = hit.bind(*args, **kwargs)
            except TypeError:
                # Wrong arguments: let Python raise its own error from the function itself.
                return fn(*args, **kwargs)
            G = hit.globals
            if hit.check(L, G, fn):
                # NOTE: run here, not by `_run_hit`: a compiled recursion's level costs frames.
                if hit.tail is None:
                    try:
                        return hit.compiled(*hit.fetch(L, G, fn))
                    except NotCompiledYet:  # tiered: the function's own Python this call
                        return self._run_eagerly(current_stance(), args, kwargs)
                result = hit.tail(*hit.fetch(L, G, fn))
                while type(result) is _TailCall:
                    result = result.fn(*result.args)
                return result
            return self._enter_second(args, kwargs)
        return self._dispatch(args, kwargs)

    def _run_hit(
        self, hit: _Hit, L: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        # The second remembered entry, its check passed, run without its entry function.
        G = hit.globals
        fn = self._fn
        if hit.tail is None:
            try:
                return hit.compiled(*hit.fetch(L, G, fn))
            except NotCompiledYet:  # tiered: the function's own Python this call
                return self._run_eagerly(current_stance(), args, kwargs)
        result = hit.tail(*hit.fetch(L, G, fn))
        while type(result) is _TailCall:
            result = result.fn(*result.args)
        return result

    def _enter_second(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # The first remembered hit's guards failed (its epoch, code and defaults held): the
        # second's, in the same epoch, before a full lookup. A hit moves it to the front.
        second = self._second
        fn = self._fn
        if (
            second.epoch is not EPOCH.current
            or fn.__code__ is not second.code
            or fn.__defaults__ is not second.defaults
            or fn.__kwdefaults__ is not second.kwdefaults
        ):
            return self._dispatch(args, kwargs)
        enter = second.enter
        if enter is not None:
            try:
                result = enter(*args, **kwargs)
            except NotCompiledYet:  # tiered: the function's own Python this call
                return self._run_eagerly(current_stance(), args, kwargs)
            if result is _MISS:
                return self._dispatch(args, kwargs)
            self._promote_second()
            return result
        L = second.bind(*args, **kwargs)
        if not second.check(L, second.globals, fn):
            return self._dispatch(args, kwargs)
        self._promote_second()
        return self._run_hit(second, L, args, kwargs)

    def _promote_second(self) -> None:
        # Move to front: the second remembered hit becomes the first, and its gate too.
        first = self._hit
        self._hit = self._second
        self._second = first
        self._gate = self._gates()

    def _remember(self, epoch: object, entry: CacheEntry, skip_guards_unsafe: bool) -> None:
        # Called right after `lookup` found `entry` for this call, the epoch read before it.
        check = self._cache.hit_check(entry, skip_guards_unsafe=skip_guards_unsafe)
        enter = self._entry_function(entry, skip_guards_unsafe)
        previous = self._hit
        if previous.entry is not entry and previous.code is self._code:
            self._second = previous
        hit = _Hit(
            epoch,
            self._code,
            self._defaults,
            self._kwdefaults,
            self._bind,
            self._fn.__globals__,
            check,
            entry.fetch,
            entry.compiled,
            entry.tail,
            enter if entry.tail is None else None,
            enter if entry.tail is not None else None,
            entry,
            self._armed_gate(epoch, entry),
        )
        self._hit = hit
        self._gate = self._gates()

    def _armed_gate(self, epoch: object, entry: CacheEntry) -> Any:
        # `entry`'s gate for the C hit path, armed with the generation of `epoch`, or None.
        made = self._enters.get(id(entry))
        gate = made[-1] if made is not None and made[0] is entry else None
        generation = gate_generation(epoch) if gate is not None else None
        installed = gate is not None and install_caller(CompiledFunction, _not_compiled_yet)
        if gate is None or generation is None or not installed:
            return None
        gate.arm(generation)
        return gate

    def _gates(self) -> Any:
        # What `_gate` holds for the remembered hits: None, one gate, or a list of two (a
        # gate armed for a past epoch declines in C, so a stale second costs one check).
        first = self._hit.gate
        second = self._second.gate
        if first is None or second is None or first is second:
            return first if first is not None else second
        return [first, second]

    def _entry_function(
        self, entry: CacheEntry, skip_guards_unsafe: bool
    ) -> Callable[..., Any] | None:
        # `entry`'s check, fetch and call (its tail for a graph break's) as one function, made
        # once per entry, guards checked, code and defaults (the hit path compares their
        # identities); None where the parts must run one by one (sources unknown, clashing
        # names).
        if entry.inputs is None:
            self._enters.pop(id(entry), None)
            return None
        fn = self._fn
        guards = self._cache.hit_guards(entry, skip_guards_unsafe=skip_guards_unsafe)
        key = (entry, guards, self._code, self._defaults, self._kwdefaults)
        found = self._enters.get(id(entry))
        if found is not None and all(a is b for a, b in zip(found[:-3], key, strict=True)):
            enter: Callable[..., Any] | None = found[-3]
            if found[-2] or not gates_available():
                return enter
            # Made while the gate extension was being built: its gate, now that it is loaded.
            gate = make_gate(fn, entry, guards, NotCompiledYet)
            self._enters[id(entry)] = (*key, enter, True, gate)
            return enter
        parameters = entry_parameters(fn)
        enter = None
        if fusable(parameters):
            try:
                enter = compile_entry(
                    guards,
                    entry.inputs,
                    parameters,
                    run=entry.compiled if entry.tail is None else entry.tail,
                    miss=_MISS,
                    G=fn.__globals__,
                    F=fn,
                    name=fn.__code__.co_name,
                )
            except Exception as error:  # never fail a call over it: the parts run one by one
                log.debug("no entry function for %s: %s", fn.__qualname__, error)
        if len(self._enters) >= _MAX_ENTRY_FUNCTIONS:
            self._enters.clear()
        with_gates = gates_available()
        gate = make_gate(fn, entry, guards, NotCompiledYet)
        self._enters[id(entry)] = (*key, enter, with_gates, gate)
        return enter

    def _dispatch(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # Steps 1-4 of the module doc: the stance, the regions, a full lookup, a miss.
        epoch = EPOCH.current
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
        skip_unsafe = stance.skip_guard_eval_unsafe
        entry = cache.lookup(L, G, fn, tag, skip_guards_unsafe=skip_unsafe)
        if entry is not None:
            self._remember(epoch, entry, skip_unsafe)
            tail = entry.tail
            if tail is None:
                try:
                    return entry.compiled(*entry.fetch(L, G, fn))
                except NotCompiledYet:
                    return self._run_eagerly(stance, args, kwargs)
            result = tail(*entry.fetch(L, G, fn))
            while type(result) is _TailCall:
                result = result.fn(*result.args)
            return result
        if compiling_in_this_thread():
            # A signal handler (or a hook) calling in while this thread compiles: eager, as
            # a compile cannot nest inside a toolchain probe or a half-done import.
            return fn(*args, **kwargs)
        try:
            with compiling(fn.__code__) as owned:
                # Re-check: a thread that owned the turn before may have compiled this call.
                skip = stance.skip_guard_eval_unsafe
                run: Run
                if not owned:  # the turn's owner runs user code, which may wait on us
                    return fn(*args, **kwargs)
                entry = cache.lookup(L, G, fn, tag, skip_guards_unsafe=skip)
                if entry is not None:
                    run = functools.partial(entry.compiled, *entry.fetch(L, G, fn))
                else:
                    run = self._miss(
                        cache, stance, L, args, kwargs, tag, backend_fn, backend_kwargs
                    )
        finally:
            _emit_deferred()
        try:
            return run()
        except NotCompiledYet:
            return self._run_eagerly(stance, args, kwargs)

    def call_tail(self, *args: Any) -> Any:
        """Call it as a break function's resume: a cached entry that breaks again hands its
        resume call back as a `TailCall` for the caller's loop (see `break_runner`)."""
        hit = self._hit
        fn = self._fn
        if (
            hit.epoch is EPOCH.current
            and not PLAIN_CALLS.depth
            and fn.__code__ is hit.code
            and fn.__defaults__ is hit.defaults
            and fn.__kwdefaults__ is hit.kwdefaults
        ):
            enter = hit.enter_tail
            if enter is not None:
                try:
                    result = enter(*args)
                except NotCompiledYet:
                    return self._fn(*args)
                if result is not _MISS:
                    return result
            else:
                L = hit.bind(*args)
                G = hit.globals
                if hit.check(L, G, fn):
                    run_hit = hit.compiled if hit.tail is None else hit.tail
                    try:
                        return run_hit(*hit.fetch(L, G, fn))
                    except NotCompiledYet:
                        return self._fn(*args)
        epoch = EPOCH.current
        stance = current_stance()
        if stance.name == "force_eager" or _is_capturing() or in_disabled_region():
            return self._fn(*args)
        L = self._bound_locals(args, {})
        fn = self._fn
        tag, backend_fn, backend_kwargs = self._backend_for(stance)
        cache = self._cache
        skip = stance.skip_guard_eval_unsafe
        entry = cache.lookup(L, fn.__globals__, fn, tag, skip_guards_unsafe=skip)
        if entry is not None:
            self._remember(epoch, entry, skip)
        if entry is None:
            if compiling_in_this_thread():
                return self._fn(*args)
            try:
                with compiling(fn.__code__) as owned:
                    if not owned:  # the turn's owner runs user code, which may wait on us
                        return self._fn(*args)
                    entry = cache.lookup(L, fn.__globals__, fn, tag, skip_guards_unsafe=skip)
                    if entry is None:
                        run = self._miss(
                            cache, stance, L, args, {}, tag, backend_fn, backend_kwargs
                        )
            finally:
                _emit_deferred()
        try:
            if entry is None:
                return run()
            run_tail = entry.compiled if entry.tail is None else entry.tail
            return run_tail(*entry.fetch(L, fn.__globals__, fn))
        except NotCompiledYet:
            return self._fn(*args)

    def _run_eagerly(self, stance: Stance, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if stance.name == "eager_on_recompile":
            return self._fn(*args, **kwargs)
        with compiled_region():
            return self._fn(*args, **kwargs)

    def _eagerly(self, stance: Stance, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Run:
        return functools.partial(self._run_eagerly, stance, args, kwargs)

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
    ) -> Run:
        fn = self._fn
        G = fn.__globals__
        if cache.eager_reason is not None:
            return self._eagerly(stance, args, kwargs)
        # NOTE: a function without compiled code (never compiled, or since `reset()`) compiles
        # for the first time under every stance; only a recompile is refused (as documented).
        has_entries = bool(cache.entries_for(tag))
        if stance.name == "eager_on_recompile" and has_entries:
            return self._eagerly(stance, args, kwargs)
        if stance.name == "fail_on_recompile" and has_entries:
            raise RuntimeError(
                fail_on_recompile_message(fn, cache.failures(L, fn.__globals__, fn, tag))
            )
        if has_entries:
            if cache.is_full(tag, config.cache_size_limit):
                # NOTE: past the limit a miss compiles nothing: its reason is worked out (slow
                # path, every entry) once, for the warning, not again on every eager call.
                if not cache.limit_warned:
                    cache.limit_warned = True
                    reason = cache.record_recompile(L, G, fn, tag)
                    recompiles_log.info("%s", reason)
                    self._warn(
                        limit_message(fn, reason.failures, config.cache_size_limit),
                        fn.__code__.co_firstlineno,
                    )
                return self._eagerly(stance, args, kwargs)
            recompiles_log.info("%s", cache.record_recompile(L, G, fn, tag))
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
        static: bool = False,
    ) -> Run:
        try:
            return self._compile_with_policy(
                cache, stance, L, args, kwargs, tag, backend_fn, backend_kwargs, static
            )
        except DynamicCompileError as failed:
            if drop_body_widening(self._policy(backend_fn, static)):
                # Arrays made dynamic for the kept loops that compute with them tripped it
                # (a transform's stacks sized by them): static first, as before that.
                dynamic_log.info(
                    "%s: dynamic compile failed (%s); arrays kept loops compute with static",
                    self._fn.__qualname__,
                    failed,
                )
                try:
                    return self._compile_with_policy(
                        cache, stance, L, args, kwargs, tag, backend_fn, backend_kwargs, static
                    )
                except DynamicCompileError as again:
                    failed = again
            # Symbolic sizes tripped capture or the backend: compile this call static instead.
            dynamic_log.info(
                "%s: dynamic compile failed (%s); compiling static", self._fn.__qualname__, failed
            )
            return self._compile_with_policy(
                cache, stance, L, args, kwargs, tag, backend_fn, backend_kwargs, True
            )

    def _policy(self, backend_fn: BackendFn, static: bool) -> DynamicPolicy:
        mode = self.dynamic if accepts_dynamic_shapes(backend_fn) else False
        if static:
            mode = False
        code = self._fn.__code__
        observed = observed_sizes(code) if self.dynamic is None else None
        scalars = observed_scalars(code) if self.dynamic is None else None
        unshared = unshared_sources(code) if self.dynamic is None else None
        body = body_widening(code) if self.dynamic is None else None
        if not config.dynamic_loop_arrays:
            body = None
        scalar_types = tuple(
            kind
            for kind, fixed in ((int, config.specialize_int), (float, config.specialize_float))
            if not fixed
        )
        return DynamicPolicy(
            mode,
            observed,
            automatic=config.automatic_dynamic_shapes,
            duck=config.duck_shape,
            scalars=scalars,
            unshared=unshared,
            scalar_types=scalar_types,
            loop_locals=self._loop_locals,
            body=body,
        )

    def _compile_with_policy(
        self,
        cache: CodeCache,
        stance: Stance,
        L: dict[str, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tag: Any,
        backend_fn: BackendFn,
        backend_kwargs: dict[str, Any],
        static: bool,
    ) -> Run:
        fn = self._fn
        capture_error: Exception | None = None
        prepare_backend(backend_fn, backend_kwargs)  # e.g. a compiler probe, beside capture
        _capture_state.depth = getattr(_capture_state, "depth", 0) + 1
        PLAIN_CALLS.enter()
        set_active_shape_env(None)
        try:
            with compiled_region(), timed("capture"):
                # Inputs that bound kept loops are made dynamic, at the loop's head where it
                # can be (the static capture stops there): see bound_origins.

                def capture(policy: DynamicPolicy) -> Any:
                    set_active_shape_env(None)
                    with capturing_with(policy):
                        return self._capture_fn(fn, args, kwargs)

                result = capture_light_first(
                    lambda: capture_widening(capture, lambda: self._policy(backend_fn, static))
                )
        except ForbiddenCallError:
            raise  # set_stance inside a compiled function: the user's error, not a fallback
        except Unsupported as exc:
            if not static and used_symbols():
                raise DynamicCompileError(str(exc)) from exc
            if self.fullgraph:
                cause = exc if config.verbose else None
                raise Unsupported(exc.reason, exc.filename, exc.lineno) from cause
            cache.eager_reason = str(exc)
            name = fn.__code__.co_qualname
            event = CaptureEvent(name, None, (), exc.reason, exc.filename, exc.lineno, True)
            record_event(attrs.evolve(event, internal=self._quiet))
            self._warn(unsupported_message(fn, exc), exc.lineno, exc.filename)
            return self._eagerly(stance, args, kwargs)
        except Exception as exc:
            if not static and used_symbols():
                raise DynamicCompileError(f"{type(exc).__name__}: {exc}") from exc
            capture_error = exc
        finally:
            _capture_state.depth -= 1
            PLAIN_CALLS.leave()
            set_active_shape_env(None)
        if capture_error is not None:
            # Outside the except block, so NumPy's error from eager is not chained to ours.
            error = capture_error
            return lambda: self._eager_after_capture_error(cache, stance, error, args, kwargs)
        if not isinstance(result, CaptureResult):
            return self._compile_break(cache, stance, L, args, kwargs, tag, backend_fn, result)
        # Fetches and guards may run user code (properties, `__hash__`): before the backend,
        # the part of a compile that other callers may wait for (see `numpile_code_only`).
        fetch = compile_fetch(result.input_sources)
        example_inputs = list(fetch(L, fn.__globals__, fn))
        check = self._checked_guards(result.guards, L)
        if check is None:
            cache.eager_reason = "guards reject the inputs they were built from"
            return self._eagerly(stance, args, kwargs)
        compiled, tiers = self._backend_compile(
            backend_fn, result.graph, example_inputs, stance, backend_kwargs
        )
        if compiled is None:
            cache.eager_reason = f"backend failed to compile {fn.__qualname__}"
            return self._eagerly(stance, args, kwargs)
        self._log_compile(result.graph, check.source, stance)
        has_ops = any(node.op is not None for node in result.graph)
        graph = result.graph if has_ops else None
        record_event(CaptureEvent(fn.__code__.co_qualname, graph, result.guards, loop_tiers=tiers))
        metadata = {"graph": result.graph, "backend": self._backend_label(stance)}
        metadata["guards"] = result.guards
        offer_eager_tier(compiled)  # the graph is the whole function (see eager_tier)
        entry = CacheEntry(check, fetch, compiled, tag, metadata, inputs=result.input_sources)
        cache.add(entry)
        return functools.partial(entry.compiled, *example_inputs)

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
    ) -> Run:
        # Late import, as in _capture_with_breaks.
        from .break_runner import BreakRunner
        from .resume_code import TailCall

        global _TailCall
        _TailCall = TailCall

        fn = self._fn
        fetch = compile_fetch(result.fetch_sources)
        fetched = list(fetch(L, fn.__globals__, fn))
        check = self._checked_guards(result.guards, L)  # before the backend, as above
        if check is None:
            cache.eager_reason = "guards reject the inputs they were built from"
            return self._eagerly(stance, args, kwargs)
        graph_fn = None
        tiers: tuple[LoopTier, ...] = ()
        if result.op_count:
            _, _, backend_kwargs = self._backend_for(stance)
            example_inputs = fetched[: result.input_count]
            graph_fn, tiers = self._backend_compile(
                backend_fn, result.graph, example_inputs, stance, backend_kwargs
            )
            if graph_fn is None:
                cache.eager_reason = f"backend failed to compile {fn.__qualname__}"
                return self._eagerly(stance, args, kwargs)
        graph = result.graph if result.op_count else None
        if graph is not None:
            self._log_compile(graph, check.source, stance)
        reason = None if result.replay_only else result.reason
        event = CaptureEvent(
            fn.__code__.co_qualname,
            graph,
            result.guards,
            reason,
            result.filename,
            result.lineno,
            loop_tiers=tiers,
        )
        record_event(event)
        if reason is not None:
            hint = functools.partial(report_graph_break, fn, reason, quiet=self._quiet)
            _defer(functools.partial(hint, result.filename, result.lineno))
        runner = BreakRunner(result, graph_fn, fn, self._wrap)
        metadata = {"graph": result.graph, "backend": self._backend_label(stance)}
        metadata.update({"guards": result.guards, "graph_break": result})
        inputs = result.fetch_sources
        entry = CacheEntry(check, fetch, runner, tag, metadata, inputs=inputs, tail=runner.run_tail)
        cache.add(entry)
        return functools.partial(runner, *fetched)

    def _wrap(self, fn: types.FunctionType) -> CompiledFunction:
        # Resume functions and callees at graph breaks: compiled like this function.
        # Late import: only the break machinery (imported at the first break) wraps.
        from .resume_code import resumes_in_loop

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
            compiled._loop_locals = resumes_in_loop(fn.__code__)
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
    ) -> tuple[Callable[..., Any] | None, tuple[LoopTier, ...]]:
        # The compiled callable (None where it failed and errors are suppressed) and how the
        # backend runs the graph's loops (`loop_tiers`).
        fn = self._fn
        if not takes_light_sizes(backend_fn):
            graph = sympy_sizes(graph)
        if graph_has_symbols(graph) and symbolic_params(graph):
            raise DynamicCompileError(f"symbolic parameters in {symbolic_params(graph)}")
        try:
            with (
                backend_compiling(),
                compile_progress(f"{fn.__qualname__} ({where(fn)})"),
                numpile_code_only(fn.__code__, waitable=_is_numpile_own(backend_fn)),
                collecting_loop_tiers() as tiers,
            ):
                compiled: Callable[..., Any] = backend_fn(graph, example_inputs, **backend_kwargs)
        except Exception as exc:
            if graph_has_symbols(graph) or graph_has_scalar_inputs(graph):
                if isinstance(exc, BuildError):
                    # Generated code its compiler refused is a numpile bug: said, not only
                    # worked around by the static compile that follows.
                    note = (
                        "the backend's build of %s (%s) with symbolic sizes failed, a numpile "
                        "bug; compiling it static instead: %s"
                    )
                    _defer(functools.partial(log.warning, note, fn.__qualname__, where(fn), exc))
                # Compiled static, the sizes and scalars are constants the backend may take.
                raise DynamicCompileError(f"backend: {type(exc).__name__}: {exc}") from exc
            name = self._backend_label(stance)
            message = f"backend {name!r} failed to compile {fn.__qualname__} ({where(fn)}): {exc}"
            if config.suppress_errors:
                note = "%s; running it eagerly (suppress_errors=True)"
                _defer(functools.partial(log.warning, note, message, exc_info=exc))
                return None, ()
            raise BackendCompileError(message) from exc
        return compiled, merged_loop_tiers(tiers)

    def _checked_guards(self, guards: tuple[Guard, ...], L: dict[str, Any]) -> Any:
        fn = self._fn
        G = fn.__globals__
        check = compile_guards(filter_guards(guards, self._guard_filter), name=fn.__qualname__)
        if not check(L, G, fn):
            failure = check.failure(L, G, fn)
            message = (
                f"guards of {fn.__qualname__} ({where(fn)}) reject the inputs they were built "
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
        # Deferred: a logging handler is user code, and this runs inside the compile's turn.
        note = "compiled %s with %s:\n%s\n%s"
        _defer(functools.partial(log.log, level, note, qualname, name, graph, guard_source))

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
        if isinstance(error, RecursionError):
            return result  # capture ran deep in a recursion: a shallower call compiles
        fn = self._fn
        log.warning(
            "capturing %s (%s) raised %s: %s, but the function runs fine eagerly; "
            "running it eagerly from now on",
            fn.__qualname__,
            where(fn),
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
        warn = functools.partial(
            warnings.warn_explicit,
            message,
            CaptureFallbackWarning,
            filename or code.co_filename,
            lineno or code.co_firstlineno,
        )
        _defer(functools.partial(warn, module=self._fn.__module__))


def _not_compiled_yet(compiled: CompiledFunction, *args: Any) -> Any:
    # A gate's call whose compiled callable raised `NotCompiledYet`: as the Python hit path.
    return compiled._run_eagerly(current_stance(), args, {})


def _is_numpile_own(backend_fn: BackendFn) -> bool:
    # A backend that is not numpile's own is user code: nobody may wait for it.
    module = getattr(backend_fn, "__module__", None) or ""
    return module.split(".")[0].startswith("numpile")


def _defer(emit: Callable[[], Any]) -> None:
    # Warnings and logs wait until the compile's turn ends: other callers may be waiting
    # for it, and a `showwarning` hook, a filter that raises or a log handler is user code.
    if compiling_in_this_thread():
        pending: list[Callable[[], Any]] = getattr(_capture_state, "deferred", [])
        pending.append(emit)
        _capture_state.deferred = pending
    else:
        emit()


def _emit_deferred() -> None:
    pending: list[Callable[[], Any]] = getattr(_capture_state, "deferred", [])
    _capture_state.deferred = []
    for emit in pending:
        emit()


def reset() -> None:
    """Forget every compiled entry, recompile reason and eager-fallback flag.

    >>> reset()
    """
    with _RESET_LOCK:
        clear_caches()
        forget_observed_sizes()
    log.debug("numpile.reset(): every code cache cleared")
