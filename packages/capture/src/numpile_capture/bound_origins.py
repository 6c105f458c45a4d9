"""Where a kept loop's bounds came from, so that trip counts never specialize.

Under the default policy (`dynamic=None`) a Python int input and an array's sizes are
baked into the first graph. When such an int only bounds a loop that capture keeps
(`range(sweeps)`, `range(n - 1, -1, -1)` with `n = b.shape[0]`), baking it in compiles
once more for each new trip count, although the loop's code does not depend on it.
So capture tags those ints with their origins (`OriginVar`: a constant that remembers
the inputs it was computed from), a kept loop records the origins of its bounds on the
capture's policy, and the dispatcher captures the frame once more with those inputs
dynamic (`widen_loop_bounds`): the Python int becomes an unspecialized graph input (its
uses that need the value still guard on it: a created array's shape, a branch's
outcome) and every input dimension of the size becomes a symbol (duck sizing: a square
matrix whose order bounds the loop is symbolic in both dimensions).

    >>> var = with_origins(ConstantVar(7), size_var(8))
    >>> sorted(var.origins) if isinstance(var, OriginVar) else None
    [SizeOrigin(size=8)]
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import attrs

from .dynamic_shapes import CHANGED, DynamicPolicy, current_policy
from .variables import ConstantVar, Variable

log = logging.getLogger("numpile.capture.dynamic")


@attrs.frozen(order=True)
class ScalarOrigin:
    """A Python int input, by the name of its source (`L['sweeps']`)."""

    source: str


@attrs.frozen(order=True)
class SizeOrigin:
    """A static array size: every input dimension of this size is its possible origin."""

    size: int


Origin = ScalarOrigin | SizeOrigin


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


def size_var(size: Any) -> Variable:
    """A static size as a constant tagged with its origin (0 and 1 never become symbols).

    >>> size_var(1).describe()
    '1'
    """
    if type(size) is int and size >= 2:
        return OriginVar(size, origins=frozenset({SizeOrigin(size)}))
    return ConstantVar(size)


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


def _widens(policy: DynamicPolicy) -> bool:
    return policy.mode is None and policy.automatic and policy.observed is not None


def widen_loop_bounds(policy: DynamicPolicy) -> bool:
    """Make the inputs that bounded kept loops dynamic; whether any changed (capture again).

    A Python int input is marked as changed (the policy then makes it a graph input);
    each input dimension of a recorded size is marked as seen changing.

        >>> widen_loop_bounds(DynamicPolicy(None, {}, scalars={}))
        False
    """
    if not policy.loop_bounds or not _widens(policy):
        return False
    observed = policy.observed
    scalars = policy.scalars
    assert observed is not None
    changed = False
    for origin in sorted(policy.loop_bounds, key=repr):
        if isinstance(origin, ScalarOrigin):
            if scalars is not None and scalars.get(origin.source) != CHANGED:
                scalars[origin.source] = CHANGED
                changed = True
                log.info("automatic dynamic: %s bounds a loop", origin.source)
            continue
        for source, shape in list(observed.items()):
            if origin.size in shape:
                observed[source] = tuple(None if d == origin.size else d for d in shape)
                changed = True
                log.info(
                    "automatic dynamic: %s has a size %d that bounds a loop", source, origin.size
                )
    return changed
