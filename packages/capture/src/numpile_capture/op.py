"""Ops: the canonical operations a graph node can apply, and their registry.

Each `Op` declares a kind, a meta rule (metadata in, metadata out) and an
eager NumPy implementation. Other layers key their own tables by op (VJP
rules, lowerings); an op without a lowering runs as an extern NumPy call.

A meta rule and an implementation take the same arguments: the node's inputs
positionally (an `ArrayMeta`/`ScalarMeta` or a concrete value respectively,
or a Python constant in both cases) and its static params as keywords.

    >>> get_op("add").kind
    <OpKind.POINTWISE: 'pointwise'>
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import attrs

from .meta import ArrayMeta, ScalarMeta


class OpKind(enum.Enum):
    """What an op does, which decides how passes and backends treat it."""

    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    SCAN = "scan"
    VIEW = "view"
    CREATION = "creation"
    INDEXING = "indexing"
    EXTERN = "extern"
    MUTATION = "mutation"
    RANDOM = "random"


_COMPUTING_KINDS = frozenset(
    {OpKind.POINTWISE, OpKind.REDUCTION, OpKind.SCAN, OpKind.EXTERN, OpKind.MUTATION}
)


class RaisesWhen(enum.Enum):
    """Which nodes of an op can raise its `run_time_error`."""

    ANY_DATA = "any data"
    INTEGER_RESULT = "an integer result"  # integers to negative integer powers
    INTEGER_INDEX = "an integer index array"  # an index out of bounds


MetaRule = Callable[..., "ArrayMeta | ScalarMeta"]
# NOTE: a node's inputs and parameters -> whether it may raise its op's `run_time_error`.
RaiseRule = Callable[[tuple[Any, ...], dict[str, Any]], bool]
Impl = Callable[..., Any]


@attrs.frozen(eq=False)
class Op:
    """One canonical operation. Ops compare and hash by identity.

    `mutates` lists the input positions an op writes to (in-place ops); a
    VIEW op's result aliases its first input (`read_only`: NumPy makes that view
    read-only, as `broadcast_to` and `diagonal`). `run_time_error` names the
    exception an op may raise depending on its input values (a singular
    matrix, an index out of bounds), which capture cannot rule out;
    `raises_when` narrows which of its nodes can raise it, and `may_raise`, given one
    node's inputs and parameters, rules it out where capture can prove it (an index
    within the loop bounds, an addition of Python scalars). `method` names the array
    method `impl` calls (`x.astype(...)`), which an op-by-op run calls itself from the
    user's line, so that NumPy's warnings name it (see `SourceLine`).
    """

    name: str
    kind: OpKind
    meta: MetaRule = attrs.field(repr=False)
    impl: Impl = attrs.field(repr=False)
    mutates: tuple[int, ...] = ()
    doc: str = ""
    run_time_error: str = ""
    raises_when: RaisesWhen = attrs.field(default=RaisesWhen.ANY_DATA, repr=False)
    may_raise: RaiseRule | None = attrs.field(default=None, repr=False)
    method: str = ""
    read_only: bool = False

    @property
    def computes(self) -> bool:
        """Whether the op computes values, so may set floating-point flags NumPy checks."""
        return self.kind in _COMPUTING_KINDS

    def __str__(self) -> str:
        return self.name


# NOTE: insertion-ordered so listings and generated tables are deterministic.
_REGISTRY: dict[str, Op] = {}


def register_op(op: Op) -> Op:
    """Add `op` to the canonical set; a name may be registered once."""
    if op.name in _REGISTRY:
        raise ValueError(f"op {op.name!r} is already registered")
    _REGISTRY[op.name] = op
    return op


def get_op(name: str) -> Op:
    """The registered op called `name`; KeyError if there is none."""
    _ensure_loaded()
    return _REGISTRY[name]


def all_ops() -> list[Op]:
    """Every registered op, in registration order."""
    _ensure_loaded()
    return list(_REGISTRY.values())


def _ensure_loaded() -> None:
    # Late import: the op modules import this module to register themselves.
    from . import ops  # noqa: F401
