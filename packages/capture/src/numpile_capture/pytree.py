"""Pytrees: nested tuples, lists and dicts with leaves, flattened and rebuilt.

>>> leaves, spec = tree_flatten({"a": (1, 2), "b": [3]})
>>> leaves
[1, 2, 3]
>>> tree_unflatten(spec, [4, 5, 6])
{'a': (4, 5), 'b': [6]}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs


@attrs.frozen
class TreeSpec:
    """The structure of a pytree: a container kind, its keys, and child specs.

    `kind` is "leaf", "tuple", "list" or "dict"; `keys` holds dict keys in order.
    """

    kind: str
    children: tuple[TreeSpec, ...] = ()
    keys: tuple[Any, ...] = ()

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
    leaves.append(tree)
    return LEAF


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
    return dict(zip(spec.keys, children, strict=True))


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """Apply `fn` to every leaf of `tree`, keeping its structure."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten(spec, [fn(leaf) for leaf in leaves])
