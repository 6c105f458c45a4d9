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


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """Apply `fn` to every leaf of `tree`, keeping its structure."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten(spec, [fn(leaf) for leaf in leaves])
