"""Trace rules: what the tracer does when captured code calls a function users marked.

Users mark functions with five calls; the tracer asks `rule_for(callee)` at
every call it meets and obeys the `Rule` it gets back:

| user call                          | `Rule.kind`   | the tracer                          |
| ---------------------------------- | ------------- | ----------------------------------- |
| `disable(fn, recursive=True)`      | DISABLED      | graph break; the wrapper runs eagerly |
| `disallow_in_graph(fn)`            | DISALLOW      | graph break; `fn` runs eagerly       |
| `graph_break()` (called)           | GRAPH_BREAK   | graph break; the call is a no-op     |
| `allow_in_graph(fn)`               | ALLOW         | one opaque node: `rule.op()`         |
| `substitute_in_graph(orig)(poly)`  | SUBSTITUTE    | inline `rule.polyfill` instead       |
| `register_transform(fn, expand)`   | TRANSFORM     | `rule.expand(TransformCall)` adds nodes |
| `forbid_in_graph(fn, reason)`      | FORBIDDEN     | raises `ForbiddenCallError`: never traced |

`rule.breaks` is True for the three kinds that break, and `rule.reason` is the
text for `explain()` and for `Unsupported` under `fullgraph=True`.

A `disable` wrapper's body is one call to `_run_disabled`, whose own rule is a
break: compiled directly (`numpile.compile(numpile.disable(f))`), it still runs
`f` in plain Python, with one break.

API for the tracer (all thread-safe to read; registration happens at import time):

- `rule_for(fn) -> Rule | None`: the rule for a callee (a function, a builtin,
  a bound method: its `__func__` is looked up too), or None: trace as usual.
- `Rule.op() -> Op`: for ALLOW, the EXTERN op whose impl calls `fn`. Put a call
  in the graph with `graph.call(rule.op(), *inputs, **constant_kwargs)`.
  Its meta rule calls `fn` once on example arrays (`np.ones` of each input's
  static shape and dtype; Python scalars by their type) and reads the result's
  metadata, so `fn` must take arrays and Python constants and return one array
  or NumPy scalar, with a shape and dtype that do not depend on the data. A
  symbolic input shape raises `Unsupported` (the call is then a graph break).
- `Rule.polyfill`: for SUBSTITUTE, the Python function to inline with the
  call's arguments. When `rule.can_constant_fold_through` is True and every
  argument is a constant, the tracer may call `rule.target` (the original) at
  capture time and use the result as a constant.
- `Rule.expand`: for TRANSFORM (function transforms such as `grad`, registered by the
  layers above), called with a `TransformCall`: the graph, the call's arguments as trees of
  graph values (Nodes, constants, functions) and `inline(fn, args, kwargs)`, which traces a
  call of a Python function on graph values into the same graph. It returns the call's
  result as such a tree, or raises `Unsupported` (the call is then a graph break).
- `allowed_op_named(name) -> Op | None`: the op of an allowed function by its name (these
  ops are not in the canonical registry, so `get_op` does not know them; a backend that
  looks ops up by name, e.g. to reload a cached artifact, asks here next).
- `in_disabled_region() -> bool`: True while a `disable(recursive=True)`
  wrapper runs on this thread; the dispatcher runs compiled functions eagerly
  then, so nothing called from a disabled function is compiled.
- `clear()`: forget every registration; `disable` wrappers stay disabled, since
  their rule lives on the wrapper itself, and forbidden callables stay forbidden.
  `scoped_rules()`: a `with` block whose registrations are forgotten on exit,
  earlier ones kept (for tests).

    >>> import numpy as np
    >>> def noisy(x):
    ...     print("eager")
    ...     return x
    >>> quiet = disable(noisy)
    >>> rule_for(quiet).kind
    <RuleKind.DISABLED: 'disabled'>
    >>> rule_for(np.sin) is None
    True
"""

from __future__ import annotations

import enum
import functools
import inspect
import logging
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import attrs
import numpy as np

from numpile_runtime import new_lock

from .capture_result import Unsupported
from .compiling import backend_compiling
from .meta import ArrayMeta, ScalarMeta, contiguous_strides, meta_of
from .op import Op, OpKind
from .region import PLAIN_CALLS, ThreadRegion

if TYPE_CHECKING:
    from .graph import Graph

log = logging.getLogger("numpile.capture.trace_rules")

_F = TypeVar("_F", bound=Callable[..., Any])

# The attribute a `disable` wrapper carries its rule in (survives `clear()`).
_DISABLE_ATTRIBUTE = "_numpile_disable_rule"
# The attribute a function transform's wrapper carries its rule in (dies with the wrapper).
_TRANSFORM_ATTRIBUTE = "_numpile_transform_rule"
# The attribute a forbidden function (a `set_stance`-decorated one) carries its rule in.
_FORBIDDEN_ATTRIBUTE = "_numpile_forbidden_rule"


class ForbiddenCallError(RuntimeError):
    """Compiled code called a function that must never run inside a compiled region.

    `set_stance` is one (the stance cannot change while compiled code runs), and so
    is every function decorated with it. The error reaches the caller of the
    compiled function; it is not a graph break. `filename` and `lineno` say where the
    user's code made the call.

        >>> str(ForbiddenCallError("set_stance is forbidden", "model.py", 3))
        'set_stance is forbidden (model.py:3)'
    """

    def __init__(self, reason: str, filename: str | None = None, lineno: int | None = None):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        where = f" ({filename}:{lineno})" if filename is not None else ""
        super().__init__(f"{reason}{where}")


class RuleKind(enum.Enum):
    """What the tracer does with a call to a marked function."""

    DISABLED = "disabled"
    ALLOW = "allow"
    DISALLOW = "disallow"
    SUBSTITUTE = "substitute"
    GRAPH_BREAK = "graph_break"
    TRANSFORM = "transform"
    FORBIDDEN = "forbidden"


_BREAKING = (RuleKind.DISABLED, RuleKind.DISALLOW, RuleKind.GRAPH_BREAK)


@attrs.frozen(eq=False)
class Rule:
    """The tracer's instruction for calls to `target`.

    `original` is the function a `disable` wrapper runs; `polyfill` the function
    inlined in place of a substituted one; `recursive` says whether a disabled
    function's callees are disabled too.

        >>> rule_for(graph_break).breaks
        True
    """

    kind: RuleKind
    target: Any = attrs.field(repr=False)
    reason: str
    original: Any = attrs.field(default=None, repr=False)
    polyfill: Callable[..., Any] | None = attrs.field(default=None, repr=False)
    recursive: bool = True
    can_constant_fold_through: bool = False
    expand: Callable[[TransformCall], Any] | None = attrs.field(default=None, repr=False)

    @property
    def breaks(self) -> bool:
        """Whether a call under this rule is a graph break."""
        return self.kind in _BREAKING

    def op(self) -> Op:
        """The opaque EXTERN op a call to an `allow_in_graph` function becomes.

        >>> def double(x):
        ...     return x * 2
        >>> allow_in_graph(double) is double
        True
        >>> rule_for(double).op().kind
        <OpKind.EXTERN: 'extern'>
        """
        if self.kind is not RuleKind.ALLOW:
            raise ValueError(f"a {self.kind.value} rule has no op")
        return _allowed_op(self.target)


# NOTE: registries keyed by id(); each Rule holds its target, so an id is never reused while
# its entry exists. Insertion-ordered like every table here. Guarded by _LOCK for writes.
_RULES: dict[int, Rule] = {}
# NOTE: forbidden callables by id (each Rule holds its target); `clear()` keeps them.
_FORBIDDEN: dict[int, Rule] = {}
_ALLOWED_OPS: dict[int, Op] = {}
_OP_NAMES: set[str] = set()
_LOCK = new_lock()

# NOTE: how deep this thread is in functions wrapped by disable(recursive=True).
_region = ThreadRegion()


def _name_of(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}.{qualname}" if module else str(qualname)


def _register(target: Any, rule: Rule) -> None:
    with _LOCK:
        _RULES[id(target)] = rule
    log.debug("trace rule %s for %s", rule.kind.value, _name_of(target))


def rule_for(fn: Any) -> Rule | None:
    """The rule for a call to `fn`, or None when the tracer should trace it as usual.

    >>> rule_for(len) is None
    True
    """
    if fn is graph_break:
        return _GRAPH_BREAK_RULE
    if fn is _run_disabled:
        return _RUN_DISABLED_RULE
    if isinstance(fn, types.FunctionType):
        own = (
            fn.__dict__.get(_DISABLE_ATTRIBUTE)
            or fn.__dict__.get(_TRANSFORM_ATTRIBUTE)
            or fn.__dict__.get(_FORBIDDEN_ATTRIBUTE)
        )
        if isinstance(own, Rule):
            return own
    rule = _RULES.get(id(fn)) or _FORBIDDEN.get(id(fn))
    if rule is not None:
        return rule
    func = getattr(fn, "__func__", None) if isinstance(fn, types.MethodType) else None
    if func is not None:
        return rule_for(func)
    return None


def clear() -> None:
    """Forget every `allow_in_graph`, `disallow_in_graph` and `substitute_in_graph` rule.

    >>> with scoped_rules():
    ...     clear()
    """
    with _LOCK:
        _RULES.clear()
        _ALLOWED_OPS.clear()
        _OP_NAMES.clear()


@contextmanager
def scoped_rules() -> Iterator[None]:
    """Registrations made inside the block are undone on exit; those made before are kept.

    >>> def helper(x):
    ...     return x
    >>> with scoped_rules():
    ...     _ = disallow_in_graph(helper)
    >>> rule_for(helper) is None
    True
    """
    with _LOCK:
        saved = (dict(_RULES), dict(_ALLOWED_OPS), set(_OP_NAMES))
    try:
        yield
    finally:
        with _LOCK:
            _RULES.clear()
            _RULES.update(saved[0])
            _ALLOWED_OPS.clear()
            _ALLOWED_OPS.update(saved[1])
            _OP_NAMES.clear()
            _OP_NAMES.update(saved[2])


# ---------------------------------------------------------------------------------------------
# disable


def in_disabled_region() -> bool:
    """True while a function wrapped by `disable(recursive=True)` runs on this thread.

    >>> in_disabled_region()
    False
    """
    return _region.active


def _run_disabled(original: Any, recursive: bool, args: Any, kwargs: Any) -> Any:
    # The one call a disable wrapper makes. Its own rule is a break, so even a wrapper compiled
    # directly (numpile.compile(numpile.disable(f))) runs `original` in plain Python.
    if not recursive:
        return original(*args, **kwargs)
    with _region.entered(), PLAIN_CALLS.entered():
        return original(*args, **kwargs)


def _make_disabled(fn: Callable[..., Any], recursive: bool, reason: str | None) -> Any:
    # A compiled function is disabled by wrapping the Python function it compiles.
    original = getattr(fn, "_numpile_original", None) or fn
    if not callable(original):
        raise TypeError(f"numpile.disable expects a callable, got {original!r}")

    def disabled(*args: Any, **kwargs: Any) -> Any:
        return _run_disabled(original, recursive, args, kwargs)

    functools.update_wrapper(disabled, original)
    # Not a compile target: the dispatcher must not unwrap it back to `original`.
    disabled.__dict__.pop("_numpile_original", None)
    text = f"call to {_name_of(original)}, disabled with numpile.disable()"
    if reason:
        text += f": {reason}"
    rule = Rule(RuleKind.DISABLED, disabled, text, original=original, recursive=recursive)
    setattr(disabled, _DISABLE_ATTRIBUTE, rule)
    return disabled


@overload
def disable(
    fn: None = None, recursive: bool = True, *, reason: str | None = None
) -> Callable[[_F], _F]: ...


@overload
def disable(fn: _F, recursive: bool = True, *, reason: str | None = None) -> _F: ...


def disable(
    fn: Callable[..., Any] | None = None, recursive: bool = True, *, reason: str | None = None
) -> Any:
    """Return a wrapper of `fn` that numpile never compiles; or a decorator when `fn` is None.

    Called from compiled code, the wrapper is a graph break and runs in plain
    Python. recursive=True (default): nothing `fn` calls is compiled either,
    not even functions decorated with `numpile.compile`. recursive=False: only
    `fn` itself is skipped; compiled functions it calls still compile.
    `reason` is shown by `explain()` next to the break.

        >>> @disable(reason="prints")
        ... def log_value(x):
        ...     print(x)
        >>> rule_for(log_value).kind.value
        'disabled'
    """
    if fn is None:

        def decorate(inner: _F) -> _F:
            return _make_disabled(inner, recursive, reason)  # type: ignore[no-any-return]

        return decorate
    return _make_disabled(fn, recursive, reason)


def forbid_in_graph(fn: _F, reason: str) -> _F:
    """Make a call to `fn` from captured code raise `ForbiddenCallError` (never a break).

    For functions whose effect is wrong inside a compiled region (`set_stance`).
    A Python function carries its rule itself; other callables are kept in a
    table that `clear()` does not empty. Returns `fn`.

        >>> def switch():
        ...     pass
        >>> forbid_in_graph(switch, "it switches modes").__name__
        'switch'
        >>> rule_for(switch).kind.value
        'forbidden'
    """
    rule = Rule(
        RuleKind.FORBIDDEN, fn, f"attempt to trace forbidden callable {_name_of(fn)}: {reason}"
    )
    if isinstance(fn, types.FunctionType):
        setattr(fn, _FORBIDDEN_ATTRIBUTE, rule)
    else:
        with _LOCK:
            _FORBIDDEN[id(fn)] = rule
    return fn


# ---------------------------------------------------------------------------------------------
# allow_in_graph / disallow_in_graph / graph_break


def allow_in_graph(fn: _F) -> _F:
    """Put calls to `fn` into the graph as one opaque node instead of tracing into it.

    `fn` must be functional: it takes arrays (and Python constants), returns
    one array whose shape and dtype do not depend on the data, mutates
    nothing, and reads no captured arrays. It runs on example inputs once at
    capture time to learn its result's metadata. Returns `fn` unchanged.

        >>> def my_op(x):
        ...     return x * 2 + 1
        >>> allow_in_graph(my_op) is my_op
        True
        >>> rule_for(my_op).kind.value
        'allow'
    """
    if not callable(fn):
        raise TypeError(f"allow_in_graph expects a callable, got {fn!r}")
    existing = rule_for(fn)
    if existing is not None and existing.kind is RuleKind.DISABLED:
        raise ValueError(f"{_name_of(fn)} is disabled with numpile.disable(); it cannot be allowed")
    _register(fn, Rule(RuleKind.ALLOW, fn, f"call to {_name_of(fn)}, allowed in graph"))
    return fn


def disallow_in_graph(fn: _F) -> _F:
    """Make every call to `fn` from compiled code a graph break; `fn` runs eagerly there.

    Returns `fn` unchanged.

        >>> def lookup(table, key):
        ...     return table[key]
        >>> disallow_in_graph(lookup) is lookup
        True
        >>> rule_for(lookup).breaks
        True
    """
    if not callable(fn):
        raise TypeError(f"disallow_in_graph expects a callable, got {fn!r}")
    text = f"call to {_name_of(fn)}, disallowed with numpile.disallow_in_graph()"
    _register(fn, Rule(RuleKind.DISALLOW, fn, text))
    return fn


def graph_break() -> None:
    """Force a graph break where compiled code calls it; called eagerly, it does nothing.

    >>> graph_break()
    """


_GRAPH_BREAK_RULE = Rule(RuleKind.GRAPH_BREAK, graph_break, "call to numpile.graph_break()")
_RUN_DISABLED_RULE = Rule(
    RuleKind.DISABLED, _run_disabled, "a function disabled with numpile.disable() runs eagerly"
)


# ---------------------------------------------------------------------------------------------
# substitute_in_graph


def _signature_shape(signature: inspect.Signature) -> tuple[Any, ...]:
    # What callers can observe: the kinds in order, names where a caller may pass them by
    # keyword, and defaults. Annotations and positional-only names do not matter.
    shape: list[Any] = []
    for parameter in signature.parameters.values():
        by_name = parameter.kind not in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        )
        name = parameter.name if by_name else None
        shape.append((parameter.kind, name, parameter.default))
    return tuple(shape)


def _check_signature(original: Callable[..., Any], polyfill: Callable[..., Any]) -> None:
    try:
        expected = inspect.signature(original)
    except (TypeError, ValueError):
        return  # a builtin without a signature: nothing to compare against
    actual = inspect.signature(polyfill)
    if _signature_shape(expected) != _signature_shape(actual):
        raise TypeError(
            f"signature mismatch between {_name_of(original)}{expected} and its polyfill "
            f"{_name_of(polyfill)}{actual}; make them match or pass skip_signature_check=True"
        )


def substitute_in_graph(
    original_fn: Callable[..., Any],
    *,
    can_constant_fold_through: bool = False,
    skip_signature_check: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a Python polyfill that the tracer inlines in place of `original_fn`.

    The decorated function must have the same signature and behaviour as
    `original_fn` (usually a C function the tracer cannot see into); its
    signature is checked unless `skip_signature_check`. The decorator returns
    a function that calls `original_fn` eagerly and is traced as the polyfill.
    With `can_constant_fold_through`, calls on constants run `original_fn` at
    capture time.

        >>> def c_index(a, b, /):  # stands for a C function capture cannot see into
        ...     return list(a).index(b)
        >>> @substitute_in_graph(c_index)
        ... def index_of(a, b, /):
        ...     for i, item in enumerate(a):
        ...         if item is b or item == b:
        ...             return i
        ...     raise ValueError("sequence.index(x): x not in sequence")
        >>> index_of([1, 2, 3], 3)
        2
        >>> rule_for(c_index).kind.value
        'substitute'
    """
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph expects a callable, got {original_fn!r}")

    def decorate(polyfill: Callable[..., Any]) -> Callable[..., Any]:
        if not isinstance(polyfill, types.FunctionType):
            raise TypeError(f"a polyfill must be a Python function, got {polyfill!r}")
        existing = rule_for(original_fn)
        if existing is not None and existing.kind is RuleKind.SUBSTITUTE:
            raise ValueError(f"{_name_of(original_fn)} already has a polyfill")
        if not skip_signature_check:
            _check_signature(original_fn, polyfill)

        @functools.wraps(polyfill)
        def substituted(*args: Any, **kwargs: Any) -> Any:
            return original_fn(*args, **kwargs)

        rule = Rule(
            RuleKind.SUBSTITUTE,
            original_fn,
            f"call to {_name_of(original_fn)}, traced through its polyfill",
            original=original_fn,
            polyfill=polyfill,
            can_constant_fold_through=can_constant_fold_through,
        )
        _register(original_fn, rule)
        _register(substituted, rule)
        return substituted

    return decorate


# ---------------------------------------------------------------------------------------------
# function transforms


@attrs.frozen(eq=False)
class TransformCall:
    """A call to a transform's function met while tracing, as `Rule.expand` receives it.

    `args` and `kwargs` are trees (tuples, lists, dicts) of graph values: Nodes
    for arrays, Python constants, functions. `inline(fn, args, kwargs)` traces
    a call of the Python function `fn` on such trees into `graph` and returns
    its result as such a tree (see `Inline`).

        >>> call = TransformCall(graph, (x_node,), {}, inline)  # doctest: +SKIP
    """

    graph: Graph
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    inline: Inline


class Inline(Protocol):
    """How a transform's rule traces a call of a Python function into the graph.

    Loops in `fn` are unrolled unless `keep_loops` (reverse mode keeps the loops it has a
    VJP for: a `for` loop over a range stays a `for_loop` node, its trip count a run-time
    value; `pin_trip_counts` reads the bounds as ints instead, guarded).

        >>> call.inline(loss, (w, x), {}, keep_loops=True)  # doctest: +SKIP
    """

    def __call__(
        self,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        /,
        *,
        keep_loops: bool = False,
        pin_trip_counts: bool = False,
    ) -> Any: ...


def register_transform(fn: _F, expand: Callable[[TransformCall], Any], reason: str) -> _F:
    """Make calls to the Python function `fn` from captured code run `expand(call)` instead.

    `expand` adds nodes to `call.graph` and returns the call's result (see
    `TransformCall`); it may raise `Unsupported` to make the call a graph break,
    where `fn` then runs eagerly. The rule lives on `fn` itself. Returns `fn`.

        >>> def double(x):
        ...     return x * 2
        >>> _ = register_transform(double, lambda call: call.inline(double, call.args, {}), "x2")
        >>> rule_for(double).kind.value
        'transform'
    """
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"register_transform expects a Python function, got {fn!r}")
    rule = Rule(RuleKind.TRANSFORM, fn, reason, expand=expand)
    setattr(fn, _TRANSFORM_ATTRIBUTE, rule)
    return fn


# ---------------------------------------------------------------------------------------------
# the opaque op of an allowed function


def allowed_op(fn: Callable[..., Any]) -> Op:
    """The opaque op of `fn`, marked `allow_in_graph` first if it is not (a rule of another
    layer that puts a call to `fn` into a graph it builds, as custom derivative rules do).

    >>> def quadruple(x):
    ...     return x * 4
    >>> allowed_op(quadruple) is allowed_op_named(allowed_op(quadruple).name)
    True
    """
    rule = rule_for(fn)
    if rule is None or rule.kind is not RuleKind.ALLOW:
        allow_in_graph(fn)
    return _allowed_op(fn)


def allowed_op_named(name: str) -> Op | None:
    """The op made for an `allow_in_graph` function, by its name; None if there is none.

    >>> def triple(x):
    ...     return x * 3
    >>> name = allow_in_graph(triple) and rule_for(triple).op().name
    >>> allowed_op_named(name) is rule_for(triple).op()
    True
    >>> allowed_op_named("sin") is None
    True
    """
    for op in list(_ALLOWED_OPS.values()):
        if op.name == name:
            return op
    return None


def _example(meta: Any) -> Any:
    if isinstance(meta, ArrayMeta):
        if not all(isinstance(dim, int) for dim in meta.shape):
            raise Unsupported("not supported yet: allow_in_graph functions on symbolic shapes")
        return np.ones(meta.shape, dtype=meta.dtype)
    if isinstance(meta, ScalarMeta):
        return meta.type(1)
    return meta


def _allowed_op(fn: Callable[..., Any]) -> Op:
    found = _ALLOWED_OPS.get(id(fn))
    if found is not None:
        return found
    name = f"allowed[{_name_of(fn)}]"

    def meta(*inputs: Any, **params: Any) -> ArrayMeta | ScalarMeta:
        examples = [_example(value) for value in inputs]
        with warnings.catch_warnings(), np.errstate(all="ignore"), backend_compiling():
            warnings.simplefilter("ignore")
            result = fn(*examples, **params)
        if not isinstance(result, np.ndarray | np.generic):
            raise Unsupported(
                f"not supported yet: allow_in_graph function {_name_of(fn)} returned "
                f"{type(result).__name__}; it must return one array"
            )
        found = meta_of(result)
        if isinstance(found, ArrayMeta) and found.strides == contiguous_strides(found.shape):
            return ArrayMeta(found.shape, found.dtype)  # NumPy's default layout: untracked
        return found

    def impl(*inputs: Any, **params: Any) -> Any:
        return fn(*inputs, **params)

    with _LOCK:
        unique = name
        suffix = 1
        while unique in _OP_NAMES:
            suffix += 1
            unique = f"{name[:-1]}#{suffix}]"
        _OP_NAMES.add(unique)
        op = Op(unique, OpKind.EXTERN, meta, impl, doc=f"calls {_name_of(fn)} (allow_in_graph)")
        _ALLOWED_OPS[id(fn)] = op
    return op
