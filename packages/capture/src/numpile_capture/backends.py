"""The backend registry: names to compiler functions, and the `eager` backend.

A backend is a callable `backend(graph, example_inputs) -> compiled` where
`compiled(*inputs)` takes the graph's inputs positionally and returns
`graph.output` evaluated (the same pytree). Backends that accept `mode` or
`options` keyword arguments receive the ones given to `compile`.

numpile's own backends register themselves when their package is imported
(`register_backend_path`: a name and where the function lives, loaded on first use).
Other packages' backends are found through the `numpile.backends` entry-point group,
read only when a name is asked for that no registration provides, or when backends are
listed: `importlib.metadata` costs about 20 ms of CPU to import and more to scan, which
a process compiling with numpile's own backends does not pay. `register_backend` adds
one at run time:

    >>> @register_backend(name="my_backend")
    ... def my_backend(graph, example_inputs):
    ...     return lambda *inputs: run_graph(graph, inputs)
    >>> lookup_backend("my_backend") is my_backend
    True
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias, overload

import attrs

from .config import config
from .graph import Graph
from .interpreter import run_graph

log = logging.getLogger("numpile.capture.backends")

CompiledFn: TypeAlias = Callable[..., Any]
BackendFn: TypeAlias = Callable[..., CompiledFn]

ENTRY_POINT_GROUP = "numpile.backends"

# NOTE: the backend a compile given none uses (`config.default_backend` None): the first of
# these names the registry knows, so installing numpile_inductor (which registers it) makes it
# the default and a layer alone falls back to running graphs with NumPy.
PREFERRED_BACKENDS: tuple[str, ...] = ("inductor", "eager")


class InvalidBackendError(ValueError):
    """A backend name that no registration or entry point provides.

    >>> lookup_backend("no_such_backend")  # doctest: +SKIP
    InvalidBackendError: unknown backend 'no_such_backend'; known backends: eager, ...
    """


class BackendCompileError(RuntimeError):
    """A backend raised while compiling a graph; the original error is the `__cause__`.

    >>> raise BackendCompileError("backend 'x' failed on f: boom")  # doctest: +SKIP
    """


@attrs.frozen
class _Registration:
    # One known backend: loaded (`fn` set), or `load` still to call (a "module:attribute"
    # path or an entry point's `load`).
    name: str
    fn: BackendFn | None
    tags: tuple[str, ...]
    load: Callable[[], Any] | None = None


# NOTE: the registry of backends by name, insertion-ordered; paths and entry points are
# loaded only when used or listed; entry points are merged in on the first lookup of a name
# the registry does not hold, or the first listing.
_REGISTRY: dict[str, _Registration] = {}
_entry_points_merged = False


def _entry_points() -> list[tuple[str, Callable[[], Any]]]:
    # Late import: only a name numpile's packages do not register reads the metadata.
    from importlib.metadata import entry_points

    return [(ep.name, ep.load) for ep in entry_points(group=ENTRY_POINT_GROUP)]


def _merge_entry_points() -> None:
    global _entry_points_merged
    if _entry_points_merged:
        return
    _entry_points_merged = True
    for name, load in _entry_points():
        if name not in _REGISTRY:
            _REGISTRY[name] = _Registration(name, None, (), load)


def _import_path(path: str) -> Any:
    module_name, _, attribute = path.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def register_backend_path(name: str, path: str) -> None:
    """Register the backend `name` as the function at `path` (`"module:attribute"`), imported
    on first use; numpile's packages register their own backends so, at import.

    A name registered already (by a function or a path) keeps its registration.

        >>> register_backend_path("eager", "numpile_capture.backends:eager")
        >>> lookup_backend("eager") is eager
        True
    """
    if name not in _REGISTRY:
        _REGISTRY[name] = _Registration(name, None, (), lambda: _import_path(path))


def _load(registration: _Registration) -> _Registration:
    if registration.fn is not None:
        return registration
    assert registration.load is not None
    fn = registration.load()
    # Loading the module may itself have called register_backend (with tags): keep that.
    current = _REGISTRY.get(registration.name)
    if current is not None and current.fn is not None:
        return current
    tags = tuple(getattr(fn, "_numpile_backend_tags", ()))
    loaded = _Registration(registration.name, fn, tags)
    _REGISTRY[registration.name] = loaded
    return loaded


@overload
def register_backend(
    compiler_fn: None = None, name: str | None = None, tags: Sequence[str] = ()
) -> Callable[[BackendFn], BackendFn]: ...


@overload
def register_backend(
    compiler_fn: BackendFn, name: str | None = None, tags: Sequence[str] = ()
) -> BackendFn: ...


def register_backend(
    compiler_fn: BackendFn | None = None, name: str | None = None, tags: Sequence[str] = ()
) -> BackendFn | Callable[[BackendFn], BackendFn]:
    """Register `compiler_fn` under `name` (default: its `__name__`); usable as a decorator.

    `tags` such as "debug" or "experimental" hide a backend from the default
    `list_backends()`. A name can be registered once (registering the same
    function again is a no-op).

        >>> @register_backend(tags=("debug",))
        ... def print_graph(graph, example_inputs):
        ...     print(graph)
        ...     return eager(graph, example_inputs)
    """
    if compiler_fn is None:

        def decorator(fn: BackendFn) -> BackendFn:
            return register_backend(fn, name, tags)

        return decorator
    key = name if name is not None else getattr(compiler_fn, "__name__", None)
    if not key:
        raise ValueError("register_backend needs a name for a callable without __name__")
    existing = _REGISTRY.get(key)
    if existing is not None and existing.fn is not None and existing.fn is not compiler_fn:
        raise ValueError(f"a backend named {key!r} is already registered ({existing.fn!r})")
    _REGISTRY[key] = _Registration(key, compiler_fn, tuple(tags))
    return compiler_fn


def lookup_backend(backend: str | BackendFn) -> BackendFn:
    """The compiler function for a backend name, or `backend` itself when it is callable.

    >>> lookup_backend("eager") is eager
    True
    """
    if callable(backend):
        return backend
    if not isinstance(backend, str):
        raise TypeError(f"a backend is a name or a callable, got {type(backend).__name__}")
    if backend not in _REGISTRY:
        _merge_entry_points()
    registration = _REGISTRY.get(backend)
    if registration is None:
        known = ", ".join(sorted(_REGISTRY))
        raise InvalidBackendError(
            f"unknown backend {backend!r}; known backends: {known}. "
            "Register one with numpile.register_backend or the "
            f"'{ENTRY_POINT_GROUP}' entry-point group."
        )
    fn = _load(registration).fn
    assert fn is not None
    return fn


def preferred_backend() -> str:
    """The best backend installed: the first of `PREFERRED_BACKENDS` the registry knows.

    `compile` uses it when given no backend and `config.default_backend` is None;
    so do the autograd transforms given no compiler.

        >>> preferred_backend() in PREFERRED_BACKENDS
        True
    """
    for name in PREFERRED_BACKENDS:
        if name not in _REGISTRY:
            _merge_entry_points()
        if name in _REGISTRY:
            return name
    return "eager"


def default_backend() -> str | BackendFn:
    """The backend `compile` uses when given none: `config.default_backend`, else the best
    installed (`preferred_backend()`).

        >>> from numpile_capture.config import config
        >>> with config.patch(default_backend="eager"):
        ...     default_backend()
        'eager'
    """
    chosen: str | BackendFn | None = config.default_backend
    return preferred_backend() if chosen is None else chosen


def list_backends(exclude_tags: Iterable[str] | None = ("debug", "experimental")) -> list[str]:
    """Sorted names of the registered backends, without those tagged with `exclude_tags`.

    Pass `exclude_tags=None` to list every backend.

        >>> "eager" in list_backends()
        True
    """
    _merge_entry_points()
    excluded = set(exclude_tags or ())
    names: list[str] = []
    for name in list(_REGISTRY):
        registration = _REGISTRY[name]
        if excluded and registration.fn is None:
            try:
                registration = _load(registration)
            except Exception:
                log.warning("could not load backend %r", name, exc_info=True)
                continue
        if not excluded.intersection(registration.tags):
            names.append(name)
    return sorted(names)


def backend_name(backend: str | BackendFn) -> str:
    """A readable name for a backend: its registered name, or the callable's name.

    >>> backend_name("eager"), backend_name(eager)
    ('eager', 'eager')
    """
    if isinstance(backend, str):
        return backend
    for name, registration in _REGISTRY.items():
        if registration.fn is backend:
            return name
    return str(getattr(backend, "__qualname__", None) or getattr(backend, "__name__", backend))


def accepted_options(backend: BackendFn) -> frozenset[str]:
    """Which of the keyword arguments `mode` and `options` `backend` accepts.

    >>> sorted(accepted_options(eager))
    []
    """
    try:
        parameters = inspect.signature(backend).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return frozenset({"mode", "options"})
    keyword_kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = {parameter.name for parameter in parameters if parameter.kind in keyword_kinds}
    return frozenset(names & {"mode", "options"})


def prepare_backend(backend: BackendFn, backend_kwargs: Mapping[str, Any]) -> None:
    """Let `backend` start, before capture runs, the work its compile will need.

    A backend may carry a `prepare` attribute, called with the keyword arguments the
    backend itself will get (`mode`, `options`), when a function is compiled with it
    (`numpile.compile`) and again before each capture: the inductor queues the C
    compiler's probe and its precompiled header on a thread of their own, so that they run
    beside the program and capture instead of after them. A preparation that raises is
    logged and ignored (the compile does the same work itself, and reports its errors).

        >>> prepare_backend(eager, {})
    """
    prepare = getattr(backend, "prepare", None)
    if prepare is None:
        return
    try:
        prepare(**backend_kwargs)
    except Exception as error:
        log.debug("preparing backend %s failed: %s", backend_name(backend), error)


def eager(graph: Graph, example_inputs: Sequence[Any]) -> CompiledFn:
    """The reference backend: run the graph op by op with NumPy (`run_graph`).

    >>> compiled = eager(graph, [np.ones(3)])  # doctest: +SKIP
    >>> compiled(np.ones(3))  # doctest: +SKIP
    """

    def run_eager(*inputs: Any) -> Any:
        return run_graph(graph, inputs)

    return run_eager


_REGISTRY["eager"] = _Registration("eager", eager, ())
