"""Pytrees: nested tuples, lists, dicts and field containers with leaves, flattened and
rebuilt.

Field containers are instances of the user's dataclasses and attrs classes (as parameters
of a model are often held): their fields, in declaration order, are children; rebuilding
makes a new instance of the class with those fields set (no `__init__` runs, as a copy).
numpile's own attrs classes (graph nodes, metadata, variables) are leaves.

>>> leaves, spec = tree_flatten({"a": (1, 2), "b": [3]})
>>> leaves
[1, 2, 3]
>>> tree_unflatten(spec, [4, 5, 6])
{'a': (4, 5), 'b': [6]}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import attrs


@attrs.frozen
class TreeSpec:
    """The structure of a pytree: a container kind, its keys, and child specs.

    `kind` is "leaf", "tuple", "list", "dict" or "fields"; `keys` holds dict keys or field
    names in order; `cls` is a field container's class.
    """

    kind: str
    children: tuple[TreeSpec, ...] = ()
    keys: tuple[Any, ...] = ()
    cls: type | None = None

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)


LEAF = TreeSpec("leaf")


def tree_flatten(tree: Any) -> tuple[list[Any], TreeSpec]:
    """Leaves of `tree` in order, and the spec that rebuilds it."""
    leaves: list[Any] = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _flatten_into(tree: Any, leaves: list[Any]) -> TreeSpec:
    if type(tree) is tuple:
        return TreeSpec("tuple", tuple(_flatten_into(item, leaves) for item in tree))
    if type(tree) is list:
        return TreeSpec("list", tuple(_flatten_into(item, leaves) for item in tree))
    if type(tree) is dict:
        keys = tuple(tree)
        children = tuple(_flatten_into(tree[key], leaves) for key in keys)
        return TreeSpec("dict", children, keys)
    names = field_names(type(tree))
    if names is not None:
        children = tuple(_flatten_into(getattr(tree, name), leaves) for name in names)
        return TreeSpec("fields", children, names, type(tree))
    leaves.append(tree)
    return LEAF


def field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a user's dataclass or attrs class, in order; None for any other
    class (numpile's own classes included).

    >>> @dataclasses.dataclass
    ... class Params:
    ...     w: float
    ...     b: float
    >>> Params.__module__ = "model"  # a user's module (doctests run in numpile's)
    >>> field_names(Params)
    ('w', 'b')
    >>> field_names(TreeSpec) is None
    True
    """
    if cls.__module__.partition(".")[0].startswith("numpile"):
        return None
    if dataclasses.is_dataclass(cls):
        return tuple(field.name for field in dataclasses.fields(cls))
    if attrs.has(cls):
        return tuple(field.name for field in attrs.fields(cls))
    return None


def tree_unflatten(spec: TreeSpec, leaves: list[Any]) -> Any:
    """Rebuild the tree described by `spec` from `leaves`."""
    return _build(spec, iter(leaves))


def _build(spec: TreeSpec, leaves: Iterator[Any]) -> Any:
    if spec.kind == "leaf":
        return next(leaves)
    children = [_build(child, leaves) for child in spec.children]
    if spec.kind == "tuple":
        return tuple(children)
    if spec.kind == "list":
        return children
    if spec.kind == "fields":
        assert spec.cls is not None
        made: Any = object.__new__(spec.cls)
        for name, child in zip(spec.keys, children, strict=True):
            object.__setattr__(made, name, child)
        return made
    return dict(zip(spec.keys, children, strict=True))


def broadcast_prefix(prefix: Any, tree: Any) -> list[Any]:
    """The value of `prefix` (a tree that is a prefix of `tree`'s structure, as `vmap`'s
    `in_axes`) for each leaf of `tree`, in `tree_flatten`'s order. Raises ValueError when
    `prefix` is not a prefix of `tree`.

    >>> broadcast_prefix({"a": 0, "b": None}, {"a": (1, 2), "b": [3]})
    [0, 0, None]
    """
    _, spec = tree_flatten(tree)
    values: list[Any] = []
    _broadcast_into(prefix, spec, values)
    return values


def _broadcast_into(prefix: Any, spec: TreeSpec, values: list[Any]) -> None:
    container = type(prefix) in (tuple, list, dict) or field_names(type(prefix)) is not None
    if not container:
        values.extend([prefix] * spec.num_leaves)
        return
    mismatch = ValueError(f"{prefix!r} is not a prefix of a tree of structure {spec}")
    if spec.kind in ("tuple", "list"):
        if type(prefix) not in (tuple, list) or len(prefix) != len(spec.children):
            raise mismatch
        children = list(prefix)
    elif spec.kind == "dict":
        if type(prefix) is not dict or set(prefix) != set(spec.keys):
            raise mismatch
        children = [prefix[key] for key in spec.keys]
    elif spec.kind == "fields" and type(prefix) is spec.cls:
        children = [getattr(prefix, name) for name in spec.keys]
    else:
        raise mismatch
    for child_prefix, child in zip(children, spec.children, strict=True):
        _broadcast_into(child_prefix, child, values)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """Apply `fn` to every leaf of `tree`, keeping its structure."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten(spec, [fn(leaf) for leaf in leaves])
