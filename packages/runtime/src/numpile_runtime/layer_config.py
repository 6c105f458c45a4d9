"""The base of every layer's configuration: attrs fields, a scoped `patch`, a stable `key`.

Each layer keeps one attrs class of documented fields (`CaptureConfig`,
`AutogradConfig`, `InductorConfig`) and derives it from `LayerConfig`, so they
all change and hash the same way:

    >>> import attrs
    >>> from typing import ClassVar
    >>> @attrs.define
    ... class DemoConfig(LayerConfig):
    ...     threads: int = 0
    ...     flags: tuple[str, ...] = ()
    ...     debug_dir: str | None = None
    ...     KEY_EXCLUDES: ClassVar[frozenset[str]] = frozenset({"debug_dir"})
    >>> config = DemoConfig()
    >>> with config.patch(threads=2):
    ...     config.threads
    2
    >>> config.threads
    0
    >>> config.key()
    'threads=0 flags=[]'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, ClassVar, Self

import attrs

__all__ = ["LayerConfig"]


class LayerConfig:
    """Mixin of a layer's attrs config class: `patch(**changes)` and `key()`.

    `patch` sets fields for the duration of a `with` block (a mutable config:
    the live `config` object of a layer); `key()` is the text of the fields
    that change compiled code, for cache keys. Fields named in the class
    variable `KEY_EXCLUDES` (debug output, cache switches) stay out of the key.

        >>> import attrs
        >>> @attrs.frozen
        ... class Knobs(LayerConfig):
        ...     fast: bool = False
        >>> Knobs().key()
        'fast=False'
    """

    __slots__ = ()

    # NOTE: field names that do not change compiled code; subclasses override it.
    KEY_EXCLUDES: ClassVar[frozenset[str]] = frozenset()

    @contextlib.contextmanager
    def patch(self, **changes: Any) -> Iterator[Self]:
        """Set fields for the duration of a `with` block, then restore them.

        An unknown name raises AttributeError before anything changes; a frozen
        config (one built per compile) cannot be patched: use `attrs.evolve`.
        """
        fields = _field_names(self)
        unknown = [name for name in changes if name not in fields]
        if unknown:
            raise AttributeError(f"{type(self).__name__} has no field(s) {', '.join(unknown)}")
        saved = {name: getattr(self, name) for name in changes}
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def key(self) -> str:
        """The fields that change compiled code, as `name=value` text in field order.

        Callables appear by qualified name and sequences as lists, so the key
        is the same in every process.
        """
        return " ".join(
            f"{name}={_key_text(getattr(self, name))}"
            for name in _field_names(self)
            if name not in self.KEY_EXCLUDES
        )


def _field_names(config: LayerConfig) -> tuple[str, ...]:
    cls = type(config)
    if not attrs.has(cls):
        raise TypeError(f"{cls.__name__} must be an attrs class to be a LayerConfig")
    return tuple(field.name for field in attrs.fields(cls))


def _key_text(value: Any) -> str:
    # A function's repr holds its address: name it instead.
    if callable(value) and not isinstance(value, type):
        module = getattr(value, "__module__", None) or ""
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        return f"{module}.{name}"
    if isinstance(value, tuple | list):
        return repr([_key_text(item) if callable(item) else item for item in value])
    return repr(value)
