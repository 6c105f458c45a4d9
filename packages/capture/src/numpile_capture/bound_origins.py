"""Where a kept loop's bounds came from, so that trip counts never specialize.

Under the default policy (`dynamic=None`) a Python int input and an array's sizes are
baked into the first graph. When such an int only bounds a loop that capture keeps
(`range(sweeps)`, `range(n - 1, -1, -1)` with `n = b.shape[0]`), baking it in compiles
once more for each new trip count, although the loop's code does not depend on it.
So capture tags those ints with their origins (`OriginVar`: a constant that remembers
the inputs it was computed from), a kept loop records the origins of its bounds on the
capture's policy (a `for`'s range or the length of the arrays it zips; an int compared
with a run-time counter, `while it < maxit`), and the dispatcher captures the frame once
more with those inputs dynamic (`widen_loop_bounds`): the Python int becomes an
unspecialized graph input (its uses that need the value still guard on it: a created
array's shape, a branch's outcome) and every input dimension of the size becomes a
symbol (duck sizing: a square matrix whose order bounds the loop is symbolic in both
dimensions). A size that no input dimension has, read from an array computed from
inputs (`v = A[1:-1]`, `range(v.shape[0])`), makes every dimension of those inputs a
symbol instead, so the bound becomes an expression of them (`s0 - 2`).

The static capture would be thrown away, so it stops at the head of the first loop about
to be kept whose bounds have such origins, before its body is traced (`widen_ahead`
raises `WidenAhead`): `capture_widening` widens them and captures again. A loop whose
widened bounds then make it fall back (`fell_back`) would have been kept or unrolled
with its static bounds: the records are restored and the frame is captured as before
this shortcut, static first.

With `config.dynamic_loop_arrays` (off by default) the array inputs a kept loop computes
with (`BodyOrigin`) are widened the same way, their body compiled once for every size.
That is a bet on calls to come, dropped for the code (`drop_body_widening`: static
first, as without it) where it costs what the static first compile does not: a dynamic
compile that fails (the dispatcher), a light capture that would need sympy
(`capture_widening`).

    >>> var = with_origins(ConstantVar(7), size_var(8))
    >>> sorted(var.origins) if isinstance(var, OriginVar) else None
    [SizeOrigin(size=8, inputs=frozenset())]
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from numpile_guards import NeedsSympy, light_active

from .capture_events import forget_loops_after, loops_recorded
from .dynamic_shapes import CHANGED, BodyWidening, DynamicPolicy, current_policy
from .variables import ConstantVar, ListVar, ScalarNodeVar, TupleVar, Variable

log = logging.getLogger("numpile.capture.dynamic")

_T = TypeVar("_T")


@attrs.frozen(order=True)
class ScalarOrigin:
    """A Python int input, by the name of its source (`L['sweeps']`)."""

    source: str


@attrs.frozen(order=True)
class SizeOrigin:
    """A static array size: every input dimension of this size is its possible origin.

    `inputs` names the array inputs the sized array was computed from (a view `A[1:-1]`:
    `L['A']`): where no input dimension has the size, as a view's `n - 2` has not, each
    of their dimensions is its possible origin.
    """

    size: int
    inputs: frozenset[str] = frozenset()


@attrs.frozen(order=True)
class ReadOrigin:
    """An array input read by a kept loop whose trip count is data (CSR's
    `range(indptr[i], indptr[i + 1])`): its sizes only bound the indices such a loop reads
    at, as a trip count does, so every dimension of it becomes a symbol."""

    source: str


@attrs.frozen(order=True)
class BodyOrigin:
    """An array input a kept loop computes with (read in its body, or the start of a value
    it carries: horner's `x`, an ODE's state `y`): the body is compiled once for every
    size, so each dimension of it becomes a symbol from the first compile, as a trip
    count's would (duck sizing kept: equal sizes share a symbol until a call tells them
    apart)."""

    source: str


Origin = ScalarOrigin | SizeOrigin | ReadOrigin | BodyOrigin


@attrs.frozen(eq=False)
class OriginVar(ConstantVar):
    """A constant int (or a range of them) computed from inputs that are baked in.

    It is a `ConstantVar` in every other respect.

        >>> OriginVar(3, origins=frozenset({ScalarOrigin("L['n']")})).as_python_constant()
        3
    """

    origins: frozenset[Origin] = attrs.field(default=frozenset(), kw_only=True)


def origins_of(variables: Iterable[Variable]) -> frozenset[Origin]:
    """The origins of the tagged variables among `variables`.

    >>> origins_of([ConstantVar(1)])
    frozenset()
    """
    found: set[Origin] = set()
    for var in variables:
        if isinstance(var, OriginVar):
            found.update(var.origins)
    return frozenset(found)


def nested_origins(variables: Iterable[Variable]) -> frozenset[Origin]:
    """The origins of the tagged variables among `variables` and inside their tuples and
    lists (a shape `(n, 3)`).

    >>> nested_origins([TupleVar((ConstantVar(1),))])
    frozenset()
    """
    found: set[Origin] = set(origins_of(variables))
    for var in variables:
        if isinstance(var, TupleVar | ListVar):
            found.update(nested_origins(var.items))
    return frozenset(found)


def with_origins(var: Variable, *operands: Variable) -> Variable:
    """`var` tagged with its operands' origins when it is a plain int or a range.

    >>> with_origins(ConstantVar(2), ConstantVar(1)).describe()
    '2'
    """
    origins = origins_of(operands)
    if not origins or not isinstance(var, ConstantVar):
        return var
    value = var.value
    if not (type(value) is int or type(value) is range):
        return var
    return OriginVar(value, source=var.source, origins=origins_of([var]) | origins)


def size_var(size: Any, inputs: frozenset[str] = frozenset()) -> Variable:
    """A static size as a constant tagged with its origin (0 and 1 never become symbols);
    `inputs` names the array inputs the sized array was computed from (see `SizeOrigin`).

    >>> size_var(1).describe()
    '1'
    """
    if type(size) is int and size >= 2:
        return OriginVar(size, origins=frozenset({SizeOrigin(size, inputs)}))
    return ConstantVar(size)


def size_vars(
    sizes: Iterable[Any],
    inputs: Callable[[], frozenset[str]],
    created: Callable[[], frozenset[Origin]] = frozenset,
) -> tuple[Variable, ...]:
    """An array's sizes as `size_var`s; `inputs()` names the array inputs it was computed
    from, `created()` gives the origins of the shapes of the arrays it was made from
    (`np.arange(n)`): both asked only when the capture's policy may widen.

    >>> [var.describe() for var in size_vars((1, 4), frozenset)]
    ['1', '4']
    """
    sizes = tuple(sizes)
    wide = any(type(size) is int and size >= 2 for size in sizes) and _widens(current_policy())
    if not wide:
        return tuple(size_var(size) for size in sizes)
    names, made = inputs(), OriginVar(0, origins=created())
    return tuple(with_origins(size_var(size, names), made) for size in sizes)


def scalar_input_var(value: int, source: Any, policy: DynamicPolicy) -> ConstantVar:
    """A baked-in int input, tagged when the policy could make it an unspecialized input.

    >>> scalar_input_var(3, None, DynamicPolicy(False)).describe()
    '3'
    """
    if type(value) is int and _widens(policy) and int in policy.scalar_types:
        origin = ScalarOrigin(source.name)
        return OriginVar(value, source=source, origins=frozenset({origin}))
    return ConstantVar(value, source=source)


def note_loop_bounds(bounds: Iterable[Variable]) -> None:
    """Record, on the capture's policy, the origins of a kept loop's bounds."""
    origins = origins_of(bounds)
    if origins:
        current_policy().loop_bounds.update(origins)


def note_loop_reads(bounds: Iterable[Variable], reads: Callable[[], frozenset[str]]) -> None:
    """Record, on the capture's policy, the array inputs a kept loop reads (`reads()`, their
    source names) when one of its bounds is read from data, not computed from sizes."""
    if not any(isinstance(b, ScalarNodeVar) and b.expr is None for b in bounds):
        return
    policy = current_policy()
    if _widens(policy):
        policy.loop_bounds.update(ReadOrigin(source) for source in reads())


def note_loop_arrays(arrays: Callable[[], frozenset[str]]) -> None:
    """Record, on the capture's policy, the array inputs a kept loop computes with
    (`arrays()`, their source names), so that a new size of them does not capture again."""
    policy = current_policy()
    if _widens_body(policy):
        policy.loop_bounds.update(BodyOrigin(source) for source in arrays())


class WidenAhead(BaseException):
    """A loop about to be kept has bounds computed from baked-in inputs: stop the capture,
    whose graph would be thrown away, and capture again with them dynamic.

    A `BaseException`, as no handler between the loop and `capture_widening` (a graph
    break, a `try` block in the user's code, a loop falling back) may take it for a
    capture error.
    """


class FellBackWidened(BaseException):
    """A loop with bounds widened ahead fell back: capture again without the shortcut."""


def widen_ahead(
    bounds: Iterable[Variable], arrays: Callable[[], frozenset[str]] = frozenset
) -> None:
    """At the head of a loop about to be kept: raise `WidenAhead` when its bounds come from
    inputs, or the array inputs its body reads (`arrays()`, their source names) are ones,
    that widening would make dynamic (the capture's policy allows it).

        >>> widen_ahead([ConstantVar(3)])
    """
    policy = current_policy()
    if not policy.ahead:
        return
    body = {BodyOrigin(source) for source in arrays()} if _widens_body(policy) else set()
    origins = origins_of(bounds) | body
    if origins and _widen(policy, origins, apply=False):
        policy.loop_bounds.update(origins)
        raise WidenAhead


def fell_back(bounds: Iterable[Variable]) -> None:
    """A loop fell back (it is unrolled or breaks the graph): raise `FellBackWidened` when
    this capture widened loop bounds ahead and this loop's bounds are not constants.

        >>> fell_back([ConstantVar(3)])
    """
    policy = current_policy()
    static = (isinstance(b, ConstantVar) and type(b.value) in (int, bool) for b in bounds)
    if policy.widened_ahead and not all(static):
        raise FellBackWidened


def capture_widening(
    capture: Callable[[DynamicPolicy], _T], make_policy: Callable[[], DynamicPolicy]
) -> _T:
    """`capture(policy)` with the inputs that bound kept loops dynamic: captured again each
    time widening changed a record, whether at a loop's head (`WidenAhead`) or after the
    capture (`widen_loop_bounds`, the loops kept once the shortcut is off).

        >>> capture_widening(lambda policy: policy.mode, lambda: DynamicPolicy(False))
        False
    """
    ahead = True
    saved: _Records | None = None
    sizes: set[int] = set()
    recorded = loops_recorded()
    body_dropped = False
    while True:
        policy = make_policy()
        policy = attrs.evolve(
            policy,
            ahead=ahead and _widens(policy),
            widened_ahead=ahead and saved is not None,
            dynamic_sizes=frozenset(sizes) if ahead else frozenset(),
        )
        try:
            result = capture(policy)
        except WidenAhead:
            if saved is None:
                saved = _records(policy)
            sizes.update(o.size for o in policy.loop_bounds if isinstance(o, SizeOrigin))
            widen_loop_bounds(policy)
            continue
        except FellBackWidened:
            assert saved is not None
            log.info("a loop with widened bounds fell back: capturing static first")
            _restore(policy, saved)
            ahead = False
            continue
        except NeedsSympy:
            # A light capture that needs sympy starts over from outside (`light_capture`),
            # widening ahead again. Where arrays widened for the kept loops that compute
            # with them are why, they are static first instead, as a light capture needs.
            body = policy.body
            widened = body is not None and bool(body.before)
            if saved is not None:
                _restore(policy, saved)
            if body_dropped and body is not None:
                body.off = False  # sympy was needed without them too
                raise
            if body is None or not (light_active() and widened):
                raise
            drop_body_widening(policy)  # those of earlier calls (this one's are restored)
            body.off = True
            log.info("a light capture needs sympy with arrays widened: static first instead")
            forget_loops_after(recorded)
            body_dropped, ahead, saved, sizes = True, True, None, set()
            continue
        except BaseException:
            # A capture that starts over from outside widens ahead again, its loops that
            # fall back guarded by `fell_back`.
            if saved is not None:
                _restore(policy, saved)
            raise
        if widen_loop_bounds(policy):
            continue
        return result


# The per-code records a widening changes: sizes, scalars, the arrays widened for kept
# loops that compute with them.
_Records = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def _records(policy: DynamicPolicy) -> _Records:
    body = policy.body.before if policy.body is not None else {}
    return (dict(policy.observed or {}), dict(policy.scalars or {}), dict(body))


def _restore(policy: DynamicPolicy, saved: _Records) -> None:
    # The per-code records as they were before the first widening ahead.
    body = policy.body.before if policy.body is not None else None
    for record, before in zip((policy.observed, policy.scalars, body), saved, strict=True):
        if record is not None:
            record.clear()
            record.update(before)


def drop_body_widening(policy: DynamicPolicy) -> bool:
    """Undo the widening of the arrays kept loops compute with (`BodyOrigin`) on the
    policy's records, and turn it off for the code; whether any array was widened (then
    capture again: they are static first, as before the widening).

        >>> drop_body_widening(DynamicPolicy(None, {}))
        False
    """
    body, observed = policy.body, policy.observed
    if body is None or body.off or observed is None or not body.before:
        return False
    observed.update(body.before)
    body.before.clear()
    body.off = True
    return True


def _widens(policy: DynamicPolicy) -> bool:
    return policy.mode is None and policy.automatic and policy.observed is not None


def _widens_body(policy: DynamicPolicy) -> bool:
    return _widens(policy) and policy.body is not None and not policy.body.off


def widen_loop_bounds(policy: DynamicPolicy) -> bool:
    """Make the inputs that bounded kept loops dynamic; whether any changed (capture again).

    A Python int input is marked as changed (the policy then makes it a graph input);
    each input dimension of a recorded size is marked as seen changing.

        >>> widen_loop_bounds(DynamicPolicy(None, {}, scalars={}))
        False
    """
    if not policy.loop_bounds or not _widens(policy):
        return False
    return _widen(policy, policy.loop_bounds, apply=True)


def _widen(policy: DynamicPolicy, origins: Iterable[Origin], *, apply: bool) -> bool:
    # Whether making `origins` dynamic changes the policy's records; with `apply`, do it.
    observed = policy.observed
    scalars = policy.scalars
    if observed is None:
        return False
    changed = False
    for origin in sorted(origins, key=repr):
        if isinstance(origin, BodyOrigin):
            if not _widens_body(policy):
                continue
            whole = SizeOrigin(0, frozenset({origin.source}))
            shape = observed.get(origin.source)
            why = "is an array a kept loop computes with"
            widened = _widen_inputs(observed, whole, why, apply=apply)
            if widened and apply and shape is not None:
                _note_body(policy.body, origin.source, shape)
            changed = widened or changed
            continue
        if isinstance(origin, ReadOrigin):
            whole = SizeOrigin(0, frozenset({origin.source}))
            why = "is read by a loop whose trip count is data"
            changed = _widen_inputs(observed, whole, why, apply=apply) or changed
            if policy.unshared is not None and origin.source not in policy.unshared:
                # Made dynamic already (read by an enclosing loop), but sharing symbols.
                changed = True
                if apply:
                    policy.unshared.add(origin.source)
            continue
        if isinstance(origin, ScalarOrigin):
            if scalars is not None and scalars.get(origin.source) != CHANGED:
                changed = True
                if apply:
                    scalars[origin.source] = CHANGED
                    log.info("automatic dynamic: %s bounds a loop", origin.source)
            continue
        matched = False
        for source, shape in list(observed.items()):
            if origin.size in shape:
                changed = matched = True
                if apply:
                    observed[source] = tuple(None if d == origin.size else d for d in shape)
                    log.info(
                        "automatic dynamic: %s has a size %d that bounds a loop",
                        source,
                        origin.size,
                    )
        if not matched:
            why = f"makes a size {origin.size} that bounds a loop"
            changed = _widen_inputs(observed, origin, why, apply=apply) or changed
    return changed


def _note_body(body: BodyWidening | None, source: str, shape: tuple[int | None, ...]) -> None:
    # The sizes `source` had before the first widening for the loops computing with it.
    if body is not None:
        body.before.setdefault(source, shape)


def _widen_inputs(
    observed: dict[str, tuple[int | None, ...]], origin: SizeOrigin, why: str, *, apply: bool
) -> bool:
    # A size no input dimension has (a view's `n - 2`): every dimension of the inputs it
    # was computed from becomes a symbol, so the size is an expression of theirs. Sizes 0
    # and 1 stay static, as they would as symbols.
    changed = False
    for source in sorted(origin.inputs):
        shape = observed.get(source)
        if shape is None or not any(d is not None and d >= 2 for d in shape):
            continue
        changed = True
        if apply:
            observed[source] = tuple(None if d is not None and d >= 2 else d for d in shape)
            log.info("automatic dynamic: %s %s", source, why)
    return changed
