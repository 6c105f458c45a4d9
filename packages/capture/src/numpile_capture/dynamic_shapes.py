"""Which sizes and scalars are dynamic: marks on arrays, the policy of one capture.

`compile(dynamic=...)` picks the policy: False specializes every size; True
makes every size dynamic from the first compile; None (the default) compiles
static first and makes a dimension dynamic once a recompile sees it change
(the observed sizes are kept per code object until `reset()`). Python int and
float inputs follow the same policy: a dynamic one becomes a graph input
instead of a constant the graph bakes in (see `ScalarInputVar`), except that a Python
float argument is one from the first compile under None (a new step size compiles
nothing; `is_float_argument`); so do NumPy integer and
floating scalars (a 0-d graph input guarded by its type, hence its dtype, not its value).

NumPy arrays take no attributes, so marks live in a side table keyed by
`id(array)` and removed by `weakref.finalize` when the array dies; a mark
belongs to that array object only (a view or a copy is unmarked).

    >>> x = np.zeros((8, 3))
    >>> mark_dynamic(x, 0, min=2, max=64)
    >>> dim_marks(x)
    {0: (2, 64)}
"""

from __future__ import annotations

import contextlib
import logging
import threading
import types
import weakref
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from numpile_guards.shape_env import ShapeEnv
from numpile_guards.symbolic import is_size_expr
from numpile_runtime import is_device_array

log = logging.getLogger("numpile.capture.dynamic")

# NOTE: id(array) -> (dim -> (min, max) for dynamic marks, dims marked static); entries are
# removed by weakref.finalize when the array is collected, so ids are never stale.
_MARKS: dict[int, tuple[dict[int, tuple[int | None, int | None]], set[int]]] = {}

# NOTE: code object -> source name -> last sizes seen (None: seen changing, now dynamic).
_OBSERVED: dict[types.CodeType, dict[str, tuple[int | None, ...]]] = {}

# NOTE: code object -> source name -> (type, value) of the Python scalar seen there
# (CHANGED once two captures saw different values: it is dynamic from then on).
_OBSERVED_SCALARS: dict[types.CodeType, dict[str, Any]] = {}

# NOTE: code object -> the array inputs whose dynamic sizes share no symbol with equal
# sizes of other inputs (see `DynamicPolicy.unshared`).
_UNSHARED: dict[types.CodeType, set[str]] = {}

# NOTE: code object -> its arrays made dynamic for the kept loops that compute with them
# (see `BodyWidening`).
_BODY: dict[types.CodeType, BodyWidening] = {}
CHANGED = "changed"
# The lower bound of an unshared dynamic size: a bound keeps a symbol of its own, and 2
# is where every dynamic size starts (sizes 0 and 1 are specialized).
_MIN_UNSHARED = 2

_state = threading.local()


def _marks_of(x: np.ndarray[Any, Any]) -> tuple[dict[int, tuple[int | None, int | None]], set[int]]:
    key = id(x)
    found = _MARKS.get(key)
    if found is None:
        found = ({}, set())
        _MARKS[key] = found
        weakref.finalize(x, _MARKS.pop, key, None)
    return found


def _check_dim(x: Any, dim: int) -> int:
    if not (isinstance(x, np.ndarray) or is_device_array(x)):
        raise TypeError(f"mark_dynamic/mark_static take a numpy.ndarray, got {type(x).__name__}")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"dimension {dim} is out of range for an array of {x.ndim} dims")
    return int(dim % x.ndim)


def mark_dynamic(x: Any, dim: int, *, min: int | None = None, max: int | None = None) -> None:
    """Compile `x`'s size `dim` as a symbol (within [min, max]) the next time it is captured.

    Sizes 0 and 1 stay specialized; a size outside the range fails the guard and recompiles.

        >>> mark_dynamic(np.zeros((4, 5)), 1, min=2)
    """
    axis = _check_dim(x, dim)
    size = x.shape[axis]
    if min is not None and max is not None and min > max:
        raise ValueError(f"mark_dynamic: min={min} is larger than max={max}")
    if (min is not None and size < min) or (max is not None and size > max):
        raise ValueError(
            f"mark_dynamic: size {size} of dimension {axis} is outside [min={min}, max={max}]"
        )
    dynamic, static = _marks_of(x)
    dynamic[axis] = (min, max)
    static.discard(axis)


def mark_static(x: Any, dim: int) -> None:
    """Always specialize `x`'s size `dim`, even with `dynamic=True` or after it changed.

    >>> mark_static(np.zeros((4, 5)), 0)
    """
    axis = _check_dim(x, dim)
    dynamic, static = _marks_of(x)
    static.add(axis)
    dynamic.pop(axis, None)


def dim_marks(x: Any) -> dict[int, tuple[int | None, int | None]]:
    """The dims of `x` marked dynamic, with their (min, max).

    >>> dim_marks(np.zeros(3))
    {}
    """
    found = _MARKS.get(id(x))
    return dict(found[0]) if found is not None else {}


def static_marks(x: Any) -> set[int]:
    """The dims of `x` marked static.

    >>> static_marks(np.zeros(3))
    set()
    """
    found = _MARKS.get(id(x))
    return set(found[1]) if found is not None else set()


@attrs.frozen
class DimChoice:
    """How one size of an input is captured: static, or a symbol within [lo, hi]."""

    dynamic: bool
    lo: int | None = None
    hi: int | None = None


_STATIC = DimChoice(False)


@attrs.define
class BodyWidening:
    """The array inputs of one code object made dynamic because a kept loop computes with
    them (`bound_origins.BodyOrigin`), each with the sizes recorded before (`before`).

    That widening is a bet on calls to come; where it costs what the static first compile
    would not (a dynamic compile that fails, sympy in a light capture), it is undone and
    `off` for the code from then on (`bound_origins.drop_body_widening`).

        >>> BodyWidening().off
        False
    """

    before: dict[str, tuple[int | None, ...]] = attrs.field(factory=dict)
    off: bool = False


@attrs.frozen
class DynamicPolicy:
    """The dynamic-shape policy of one capture: `mode` (None, True, False) and the sizes seen.

    `observed` is the per-code record automatic dynamic reads and updates.

        >>> DynamicPolicy(False).choose(np.zeros(4), "L['x']")
        (DimChoice(dynamic=False, lo=None, hi=None),)
    """

    mode: bool | None
    observed: dict[str, tuple[int | None, ...]] | None = attrs.field(default=None, eq=False)
    automatic: bool = True
    duck: bool = True
    scalars: dict[str, Any] | None = attrs.field(default=None, eq=False)
    scalar_types: tuple[type, ...] = (int, float)
    # Origins of the bounds of loops the capture kept (see bound_origins).
    loop_bounds: set[Any] = attrs.field(factory=set, eq=False)
    # Whether a loop about to be kept widens its bounds' origins at its head, before its
    # body is traced, and whether this capture follows such a widening (see
    # bound_origins.capture_widening).
    ahead: bool = attrs.field(default=False, eq=False)
    widened_ahead: bool = attrs.field(default=False, eq=False)
    # Array inputs read by a loop whose trip count is data (CSR's `data`, `x`): their
    # dynamic sizes are independent of the other inputs', so equal values do not make
    # them share a symbol (which a guard would then hold equal; see bound_origins).
    unshared: set[str] | None = attrs.field(default=None, eq=False)
    # Sizes widened ahead: an input first read after the widening has its dims of these
    # sizes dynamic from the start, as the widening would have made them had it been read.
    dynamic_sizes: frozenset[int] = attrs.field(default=frozenset(), eq=False)
    # A resume function inside a loop (see resume_code.resumes_in_loop): its int and float
    # locals (the index, counters, carried scalars) change every iteration, so they are
    # graph inputs from the first compile, not after a recompile sees them change.
    loop_locals: bool = attrs.field(default=False, eq=False)
    # The code's arrays widened for the kept loops that compute with them (None: no such
    # widening, as under `mode` True or False).
    body: BodyWidening | None = attrs.field(default=None, eq=False)

    def scalar_is_input(self, value: Any, source: str) -> bool:
        """Whether the Python scalar `value` read from `source` is compiled as a graph input.

        Only exact ints and floats of `scalar_types` qualify (bools and NumPy scalars stay
        specialized); with `mode` None, a float argument at once (`is_float_argument`),
        anything else once a recompile has seen `source` change.

            >>> DynamicPolicy(True).scalar_is_input(0.5, "L['lr']")
            True
        """
        if type(value) not in self.scalar_types or self.mode is False:
            return False
        changed = self._observe_scalar(source, value)
        first = self.mode is None and self.is_float_argument(value, source)
        return self.mode is True or changed or first or self.is_loop_local(source)

    def is_float_argument(self, value: Any, source: str) -> bool:
        """Whether `value` is a Python float read from the frame's locals (an argument, an
        item of one): a graph input from the first capture under `mode` None, since a step
        size or a coefficient changes between calls and its exact value matters to no shape.

        A use that needs the value (`np.full`, a slice bound) still specializes it; globals
        and closure cells, which hold constants, are baked in until they change.

            >>> DynamicPolicy(None).is_float_argument(0.1, "L['dt']")
            True
        """
        return type(value) is float and float in self.scalar_types and source.startswith("L[")

    def is_loop_local(self, source: str) -> bool:
        """Whether `source` is a local of a resume function inside a loop (`loop_locals`):
        a value the loop carries, made afresh each iteration.

            >>> DynamicPolicy(None, loop_locals=True).is_loop_local("L['s']")
            True
        """
        return self.loop_locals and source.startswith("L[")

    def numpy_scalar_is_input(self, value: Any, source: str) -> bool:
        """Whether the NumPy scalar `value` read from `source` is compiled as a 0-d graph input.

        An integer or floating one follows the policy of the Python int or float it stands
        for (`scalar_types`; with `mode` None, once a recompile has seen `source` change,
        type or value); a bool or complex one stays specialized, as Python's do, except as
        a local of a resume function inside a loop (`loop_locals`).

            >>> DynamicPolicy(True).numpy_scalar_is_input(np.float32(0.5), "L['dt']")
            True
            >>> DynamicPolicy(None, scalars={}).numpy_scalar_is_input(np.int64(3), "L['k']")
            False
        """
        if not isinstance(value, np.number | np.bool_) or self.mode is False:
            return False
        if self.is_loop_local(source):
            return True
        if _python_kind(value) not in self.scalar_types:
            return False
        changed = self._observe_scalar(source, value)
        return self.mode is True or changed

    def _observe_scalar(self, source: str, value: Any) -> bool:
        if self.scalars is None or not self.automatic:
            return False
        before = self.scalars.get(source)
        seen = (type(value), value)
        if before is None:
            self.scalars[source] = seen
            return False
        if before == CHANGED:
            return True
        if before == seen:
            return False
        log.info("automatic dynamic: %s changed (%r -> %r)", source, before[1], value)
        self.scalars[source] = CHANGED
        return True

    def choose(self, x: np.ndarray[Any, Any], source: str) -> tuple[DimChoice, ...]:
        """The choice for each dim of input `x` read from `source`; records its sizes."""
        shape = tuple(int(d) for d in x.shape)
        changed = self._observe(source, shape)
        if self.mode is False:
            return tuple(_STATIC for _ in shape)
        marks = _MARKS.get(id(x))
        dynamic, static = marks if marks is not None else ({}, set())
        alone = self.unshared is not None and source in self.unshared
        choices = []
        for axis in range(len(shape)):
            if axis in static:
                choices.append(_STATIC)
            elif axis in dynamic:
                lo, hi = dynamic[axis]
                choices.append(DimChoice(True, lo, hi))
            elif alone and axis in changed:
                choices.append(DimChoice(True, lo=_MIN_UNSHARED))  # bounded: no duck sizing
            elif self.mode is True or axis in changed or self.is_loop_local(source):
                choices.append(DimChoice(True))
            else:
                choices.append(_STATIC)
        return tuple(choices)

    def _observe(self, source: str, shape: tuple[int, ...]) -> set[int]:
        if self.observed is None or not self.automatic:
            return set()
        before = self.observed.get(source)
        if before is None or len(before) != len(shape):
            widened = {axis for axis, size in enumerate(shape) if size in self.dynamic_sizes}
            self.observed[source] = tuple(None if a in widened else d for a, d in enumerate(shape))
            return widened
        merged = tuple(b if b == s else None for b, s in zip(before, shape, strict=True))
        changed = {axis for axis, size in enumerate(merged) if size is None}
        newly = {axis for axis in changed if before[axis] is not None}
        if newly:
            log.info(
                "automatic dynamic: %s dims %s changed (%s -> %s)",
                source,
                sorted(newly),
                before,
                shape,
            )
        self.observed[source] = merged
        return changed


def _python_kind(value: np.generic) -> type | None:
    # The Python scalar type a NumPy scalar stands for in the policy (None: none of them).
    if isinstance(value, np.integer):
        return int
    if isinstance(value, np.floating):
        return float
    return None


def observed_sizes(code: types.CodeType) -> dict[str, tuple[int | None, ...]]:
    """The sizes automatic dynamic has seen for `code` (created empty on first use).

    >>> observed_sizes((lambda: 0).__code__)
    {}
    """
    return _OBSERVED.setdefault(code, {})


def observed_scalars(code: types.CodeType) -> dict[str, Any]:
    """The Python scalar inputs automatic dynamic has seen for `code` (created empty).

    >>> observed_scalars((lambda: 0).__code__)
    {}
    """
    return _OBSERVED_SCALARS.setdefault(code, {})


def unshared_sources(code: types.CodeType) -> set[str]:
    """The array inputs of `code` whose dynamic sizes share no symbol (created empty).

    >>> unshared_sources((lambda: 0).__code__)
    set()
    """
    return _UNSHARED.setdefault(code, set())


def body_widening(code: types.CodeType) -> BodyWidening:
    """The arrays of `code` widened for the kept loops that compute with them (created
    empty).

    >>> body_widening((lambda: 0).__code__).before
    {}
    """
    return _BODY.setdefault(code, BodyWidening())


def forget_observed_sizes() -> None:
    """Forget every observed size and scalar (part of `reset()`)."""
    _OBSERVED.clear()
    _OBSERVED_SCALARS.clear()
    _UNSHARED.clear()
    _BODY.clear()


@contextlib.contextmanager
def capturing_with(policy: DynamicPolicy) -> Iterator[DynamicPolicy]:
    """Make `policy` the one captures on this thread use inside the block.

    >>> with capturing_with(DynamicPolicy(False)) as policy:
    ...     current_policy() is policy
    True
    """
    previous = getattr(_state, "policy", None)
    _state.policy = policy
    try:
        yield policy
    finally:
        _state.policy = previous


def current_policy() -> DynamicPolicy:
    """The policy of the capture running on this thread (static when none was set)."""
    policy: DynamicPolicy | None = getattr(_state, "policy", None)
    return policy if policy is not None else DynamicPolicy(False)


def graph_has_symbols(graph: Any) -> bool:
    """Whether a placeholder of `graph` has a symbolic size (the graph is dynamic).

    >>> from numpile_capture.graph import Graph
    >>> graph_has_symbols(Graph())
    False
    """
    for node in graph.placeholders:
        shape = getattr(node.meta, "shape", ())
        if any(not isinstance(dim, int) for dim in shape):
            return True
    return False


def graph_has_scalar_inputs(graph: Any) -> bool:
    """Whether a placeholder of `graph` is an unspecialized Python scalar (an int or float
    input, a resumed loop's index): compiled static, it would be a constant.

    >>> from numpile_capture.graph import Graph
    >>> graph_has_scalar_inputs(Graph())
    False
    """
    return any(getattr(node.meta, "type", None) in (int, float) for node in graph.placeholders)


def _symbolic_count(value: Any) -> int:
    if isinstance(value, tuple | list):
        return sum(_symbolic_count(item) for item in value)
    if isinstance(value, dict):
        return sum(_symbolic_count(item) for item in value.values())
    if isinstance(value, slice):
        return _symbolic_count((value.start, value.stop, value.step))
    return 1 if is_size_expr(value) else 0


def symbolic_params(graph: Any) -> list[str]:
    """Nodes whose static parameters hold symbolic sizes an implementation cannot run with.

    A reshape may carry one (its implementation infers it as -1).

        >>> from numpile_capture.graph import Graph
        >>> symbolic_params(Graph())
        []
    """
    found = []
    for node in graph.nodes:
        if node.op is None:
            continue
        constants = [value for value in node.inputs if not hasattr(value, "op")]
        count = _symbolic_count(constants) + _symbolic_count(dict(node.kwargs))
        allowed = 1 if node.op.name == "reshape" else 0
        if count > allowed:
            found.append(node.name)
    return found


def used_symbols() -> bool:
    """Whether the latest capture on this thread made any size symbolic.

    >>> used_symbols() in (True, False)
    True
    """
    env = active_shape_env()
    return env is not None and bool(env.symbols())


def accepts_dynamic_shapes(backend_fn: Any) -> bool:
    """Whether a backend is handed graphs with symbolic sizes.

    A backend may say no with `supports_dynamic_shapes = False`; one that raises on
    a symbolic graph gets the call's static graph instead.

        >>> accepts_dynamic_shapes(lambda graph, inputs: None)
        True
    """
    return bool(getattr(backend_fn, "supports_dynamic_shapes", True))


def set_active_shape_env(env: ShapeEnv | None) -> None:
    """Make `env` the shape environment that meta rules consult (one per capture).

    Held weakly: once its capture is gone, meta rules see no environment.
    """
    _state.env = None if env is None else weakref.ref(env)


@contextlib.contextmanager
def shape_env_in_use(env: ShapeEnv) -> Iterator[ShapeEnv]:
    """Make `env` the active shape environment inside the block (meta rules outside a capture).

    >>> with shape_env_in_use(ShapeEnv()) as env:
    ...     active_shape_env() is env
    True
    >>> active_shape_env() is None
    True
    """
    set_active_shape_env(env)
    try:
        yield env
    finally:
        set_active_shape_env(None)


def active_shape_env() -> ShapeEnv | None:
    """The shape environment of the capture running on this thread, if any.

    >>> active_shape_env() is None or isinstance(active_shape_env(), ShapeEnv)
    True
    """
    ref: weakref.ref[ShapeEnv] | None = getattr(_state, "env", None)
    return None if ref is None else ref()
