"""Side effects met during capture, replayed in Python after the graph runs.

Captured code may mutate what it did not create: append to a list argument,
write an item of a dict argument, set an attribute of a user object, assign
a global. The tracer models the new state at once (later reads see it) and
records the effect here; when the graph has run, the effects are replayed on
the real objects, in program order, before the breaking instruction or the
return. Mutated containers get their final contents (one replay per
container); attribute and global writes replay one by one.

    >>> from numpile_capture.variables import ConstantVar, ListVar
    >>> effects = SideEffects()
    >>> effects.mutate(ListVar([], source=None))  # a list made by the function: nothing
    >>> effects.pending
    False
"""

from __future__ import annotations

import attrs

from .variables import DictVar, ListVar, Variable


@attrs.frozen
class ContainerWrite:
    """`container` (a list or dict read from a source) ends with its modelled contents."""

    container: ListVar | DictVar


@attrs.frozen
class AttributeWrite:
    """`setattr(obj, name, value)` on an object read from a source."""

    obj: Variable
    name: str
    value: Variable


@attrs.frozen
class GlobalWrite:
    """`globals()[name] = value` in the captured function's globals."""

    name: str
    value: Variable


Effect = ContainerWrite | AttributeWrite | GlobalWrite


class SideEffects:
    """The effects of one capture, in program order (see the module docstring).

    `globals` maps global names written so far to their new variables, so
    later reads in the same capture see the write.
    """

    def __init__(self) -> None:
        self.effects: list[Effect] = []
        self.globals: dict[str, Variable] = {}
        # NOTE: attribute values written so far, by (identity of the object, name).
        self.attributes: dict[tuple[int, str], Variable] = {}
        self._containers: set[int] = set()

    @property
    def pending(self) -> bool:
        """Whether anything must be replayed after the graph."""
        return bool(self.effects)

    def mutate(self, container: Variable) -> None:
        """Note that `container` is mutated; only containers read from a source matter."""
        if container.source is None or id(container) in self._containers:
            return
        assert isinstance(container, ListVar | DictVar)
        self._containers.add(id(container))
        self.effects.append(ContainerWrite(container))

    def set_attribute(self, obj: Variable, name: str, value: Variable) -> None:
        """Record `obj.name = value`."""
        self.attributes[(_identity(obj), name)] = value
        self.effects.append(AttributeWrite(obj, name, value))

    def attribute(self, obj: Variable, name: str) -> Variable | None:
        """The value written to `obj.name` during this capture, if any."""
        return self.attributes.get((_identity(obj), name))

    def set_global(self, name: str, value: Variable) -> None:
        """Record `global name; name = value`."""
        self.globals[name] = value
        self.effects.append(GlobalWrite(name, value))


def _identity(obj: Variable) -> int:
    # The object itself for inputs (one object may be read from two sources), else the variable.
    value = getattr(obj, "value", None)
    return id(value) if obj.source is not None and value is not None else id(obj)
