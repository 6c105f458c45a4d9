"""The rebuild program of a graph break: steps that make the live Python values at the break.

Slot k of the program is made by step k, from the graph's outputs, the fetched values,
constants and earlier slots; `Replay` entries then replay the capture's side effects on
those values (see `side_effects`). `graph_break` writes the program; `break_runner` runs it.

    >>> Build(tuple, (0, 1))
    Build(kind=<class 'tuple'>, slots=(0, 1), keys=())
"""

from __future__ import annotations

import types
from typing import Any

import attrs


@attrs.frozen
class FromGraph:
    """Output `index` of the graph."""

    index: int


@attrs.frozen
class FromInput:
    """Value `index` of the fetched values that are not graph inputs."""

    index: int


@attrs.frozen
class Constant:
    """A value known at capture time (and guarded)."""

    value: Any


@attrs.frozen
class Build:
    """A new tuple, list or dict (`kind`) of earlier slots (`keys` for dicts)."""

    kind: type
    slots: tuple[int, ...]
    keys: tuple[Any, ...] = ()


@attrs.frozen
class GetAttr:
    """`slots[slot].name` (a bound method live at the break)."""

    slot: int
    name: str


@attrs.frozen
class CompiledCallee:
    """A user function called at the break: it runs compiled on its own."""

    # NOTE: a FunctionType; typed Any because mypy binds FunctionType attributes.
    fn: Any


@attrs.frozen
class MakeFunction:
    """A function the captured code defined (a lambda, a nested def); `closure` are the slots
    of its cells (`MakeCell`), empty when it closes over nothing."""

    code: types.CodeType
    globals: dict[str, Any] = attrs.field(repr=False)
    defaults: int | None
    kwdefaults: int | None
    closure: tuple[int, ...] = ()


@attrs.frozen
class MakeCell:
    """A new cell holding `slots[value]` (empty when None: filled by `FillCell`)."""

    value: int | None = None


@attrs.frozen
class FillCell:
    """`slots[cell].cell_contents = slots[value]` (a function that refers to itself)."""

    cell: int
    value: int


@attrs.frozen
class MakeIterator:
    """`iter(slots[slot])`: an iterator live at the break, over its remaining items."""

    slot: int


@attrs.frozen
class Call:
    """`slots[fn](*slots[args], **{keys: slots[kwargs]})`: a generator made again, not started."""

    fn: int
    args: tuple[int, ...]
    keys: tuple[str, ...] = ()
    kwargs: tuple[int, ...] = ()


@attrs.frozen
class NewObject:
    """An instance of a user class made during capture: `cls.__new__(cls)` (filled later)."""

    cls: type


@attrs.frozen
class SetAttributes:
    """`object.__setattr__(slots[target], name, slots[value])` for each name: the attributes
    of a `NewObject` (so slots and frozen classes work, and attributes may refer back)."""

    target: int
    names: tuple[str, ...]
    values: tuple[int, ...]


Step = (
    FromGraph
    | FromInput
    | Constant
    | Build
    | GetAttr
    | CompiledCallee
    | MakeFunction
    | MakeCell
    | FillCell
    | MakeIterator
    | Call
    | NewObject
    | SetAttributes
)


@attrs.frozen
class Replay:
    """One side effect to replay after the graph, on rebuilt values (see `side_effects`).

    kind "contents": `slots[target]` (a list or dict) gets the contents of `slots[value]`;
    "attribute": `setattr(slots[target], name, slots[value])`; "global":
    `globals[name] = slots[value]` (`target` unused).
    """

    kind: str
    target: int
    name: str
    value: int
