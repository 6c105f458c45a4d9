"""What a trace of a loop body or branch block may change, saved to be put back.

A body is traced on the frame itself; `Snapshot.take(frame)` before and
`snapshot.restore(frame)` after leave the frame (pc, stack, locals, ends), the side
effects and every Python list, dict, object, cell and iterator the frame reaches as they
were. A trace that changed one of those containers cannot be kept as a loop:
`restore` raises `LoopFallback` after restoring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .loop_exit import LoopFallback
from .variables import (
    CellVar,
    DictVar,
    IteratorVar,
    ListVar,
    ObjectVar,
    TupleVar,
    Variable,
)

if TYPE_CHECKING:
    from .frame import Frame


class Snapshot:
    """The frame and the Python containers it reaches, to restore after a body's trace."""

    def __init__(self, frame: Frame) -> None:
        state = frame.state
        self.pc = frame.pc
        self.ends = (frame.result, frame.yielded)
        self.stack = list(state.stack)
        self.locals = dict(state.locals)
        effects = frame.tracer.side_effects
        self.effects = len(effects.effects)
        self.globals = dict(effects.globals)
        self.attributes = dict(effects.attributes)
        self.contents: list[tuple[Variable, Any]] = []
        seen: set[int] = set()
        for var in [*self.stack, *self.locals.values()]:
            self._visit(var, seen)

    @classmethod
    def take(cls, frame: Frame) -> Snapshot:
        return cls(frame)

    def _visit(self, var: Variable, seen: set[int]) -> None:
        if id(var) in seen:
            return
        seen.add(id(var))
        if isinstance(var, ListVar):
            self.contents.append((var, list(var.items)))
            children: list[Variable] = list(var.items)
        elif isinstance(var, DictVar):
            self.contents.append((var, dict(var.items)))
            children = list(var.items.values())
        elif isinstance(var, ObjectVar):
            self.contents.append((var, dict(var.attributes)))
            children = list(var.attributes.values())
        elif isinstance(var, CellVar):
            self.contents.append((var, var.contents))
            children = [var.contents] if var.contents is not None else []
        elif isinstance(var, TupleVar):
            children = list(var.items)
        elif isinstance(var, IteratorVar):
            self.contents.append((var, var.position))
            children = list(var.items)
        else:
            children = []
        for child in children:
            self._visit(child, seen)

    def changed(self) -> bool:
        """Whether a container, object, cell or side effect changed since the snapshot."""
        return any(_content(var) != before for var, before in self.contents)

    def restore(self, frame: Frame) -> None:
        changed = self.changed()
        effects = frame.tracer.side_effects
        grew = len(effects.effects) != self.effects or effects.globals != self.globals
        state = frame.state
        frame.pc = self.pc
        frame.result, frame.yielded = self.ends
        state.stack[:] = self.stack
        state.locals.clear()
        state.locals.update(self.locals)
        del effects.effects[self.effects :]
        effects.globals.clear()
        effects.globals.update(self.globals)
        effects.attributes.clear()
        effects.attributes.update(self.attributes)
        for var, before in self.contents:
            _set_content(var, before)
        if changed or grew:
            raise LoopFallback("it changes a Python container, object or global")


def _content(var: Variable) -> Any:
    if isinstance(var, ListVar):
        return list(var.items)
    if isinstance(var, DictVar):
        return dict(var.items)
    if isinstance(var, ObjectVar):
        return dict(var.attributes)
    if isinstance(var, CellVar):
        return var.contents
    if isinstance(var, IteratorVar):
        return var.position
    return None


def _set_content(var: Variable, before: Any) -> None:
    if isinstance(var, ListVar):
        var.items[:] = before
    elif isinstance(var, DictVar):
        var.items.clear()
        var.items.update(before)
    elif isinstance(var, ObjectVar):
        var.attributes.clear()
        var.attributes.update(before)
    elif isinstance(var, CellVar):
        var.contents = before
    elif isinstance(var, IteratorVar):
        var.position = before
