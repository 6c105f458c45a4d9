"""Pytrees of the transforms: containers of arrays, flattened to leaves and rebuilt (optree).

Tuples, lists, dicts, NamedTuples, `OrderedDict`, `defaultdict` and `deque`
are containers out of the box; dataclasses and attrs classes are registered
the first time one is met (their `init` fields are the children); any other
class becomes a container through `register_pytree_node`. `None` is a leaf.
Everything else is a leaf: a transform that finds a leaf which is neither an
array nor a number among the arguments it differentiates raises a
`TypeError` that says how to register its class, so nothing silently gets no
gradient.

    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Params:
    ...     w: float
    ...     b: float
    >>> leaves, spec = tree_flatten({"p": Params(1.0, 2.0), "n": (3.0,)})
    >>> leaves
    [3.0, 1.0, 2.0]
    >>> tree_unflatten(spec, [30.0, 10.0, 20.0])
    {'p': Params(w=10.0, b=20.0), 'n': (30.0,)}

Dict children are ordered by sorted key (optree's rule), and rebuilt in the
dict's own order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

if TYPE_CHECKING:
    from optree import PyTreeSpec

__all__ = [
    "broadcast_prefix",
    "PyTreeSpec",
    "check_leaves",
    "leaf_paths",
    "register_pytree_node",
    "tree_flatten",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]

# NOTE: optree is imported by the first pytree operation, not with the package (about
# 70 ms of `import numpile` on a loaded machine; a compile without a transform needs none).
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name == "PyTreeSpec":
            import optree

            return optree.PyTreeSpec
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# NOTE: the optree namespace of numpile's registrations, so they do not leak into other
# users of optree in the same process.
NAMESPACE = "numpile"

# NOTE: classes registered here (explicitly or on first sight), so each is registered once.
_REGISTERED: set[type] = set()

_NUMBERS = (bool, int, float, complex, np.generic, np.ndarray)


def register_pytree_node(
    cls: type,
    flatten: Callable[[Any], tuple[Iterable[Any], Any]],
    unflatten: Callable[[Any, Iterable[Any]], Any],
) -> type:
    """Make `cls` a pytree container: `flatten(obj) -> (children, aux)`, where `aux` is
    hashable static data, and `unflatten(aux, children) -> obj`. Returns `cls`.

    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> _ = register_pytree_node(
    ...     Pair, lambda p: ((p.a, p.b), None), lambda _, children: Pair(*children)
    ... )
    >>> tree_flatten(Pair(1.0, 2.0))[0]
    [1.0, 2.0]
    """
    import optree

    if cls in _REGISTERED:
        raise ValueError(f"{cls.__qualname__} is already a registered pytree node")
    optree.register_pytree_node(
        cls,
        lambda obj: _flattened(flatten(obj)),
        unflatten,
        namespace=NAMESPACE,
    )
    _REGISTERED.add(cls)
    return cls


def _flattened(result: tuple[Iterable[Any], Any]) -> tuple[tuple[Any, ...], Any]:
    children, aux = result
    return tuple(children), aux


def _register_fields(cls: type, names: tuple[str, ...]) -> None:
    # Dataclasses and attrs classes: the `init` fields, by keyword.
    import optree

    def flatten(obj: Any) -> tuple[tuple[Any, ...], tuple[str, ...], tuple[str, ...]]:
        return tuple(getattr(obj, name) for name in names), names, names

    def unflatten(keys: Any, children: Iterable[Any]) -> Any:
        return cls(**dict(zip(keys, children, strict=True)))

    optree.register_pytree_node(
        cls,
        flatten,
        unflatten,
        path_entry_type=optree.GetAttrEntry,
        namespace=NAMESPACE,
    )
    _REGISTERED.add(cls)


def _auto_register(cls: type) -> bool:
    # Registers a dataclass or attrs class met for the first time; says whether it did.
    if cls in _REGISTERED or isinstance(cls, type) is False:
        return False
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    elif attrs.has(cls):
        names = tuple(a.alias or a.name for a in attrs.fields(cls) if a.init)
        if any(a.name != (a.alias or a.name) for a in attrs.fields(cls) if a.init):
            return False  # private attrs fields: init keywords differ from the names read
    else:
        return False
    _register_fields(cls, names)
    return True


def tree_flatten(tree: Any) -> tuple[list[Any], PyTreeSpec]:
    """Leaves of `tree` in order, and the spec that rebuilds it.

    >>> tree_flatten([1, (2, None)])[0]
    [1, 2, None]
    """
    import optree

    while True:
        leaves, spec = optree.tree_flatten(tree, none_is_leaf=True, namespace=NAMESPACE)
        fresh = [
            leaf for leaf in leaves if type(leaf) is not np.ndarray and _auto_register(type(leaf))
        ]
        if not fresh:
            return leaves, spec


def broadcast_prefix(prefix: Any, tree: Any) -> list[Any]:
    """The value of `prefix` (a tree that is a prefix of `tree`'s structure, as JAX's
    `in_axes`) for each leaf of `tree`, in `tree_flatten`'s order; None in `prefix` is a value.

    >>> broadcast_prefix({"a": 0, "b": None}, {"a": (1, 2), "b": [3]})
    [0, 0, None]
    """
    import optree

    tree_flatten(tree)  # registers dataclasses and attrs classes met for the first time
    full = optree.tree_broadcast_prefix(prefix, tree, none_is_leaf=True, namespace=NAMESPACE)
    leaves, _ = optree.tree_flatten(full, none_is_leaf=True, namespace=NAMESPACE)
    return list(leaves)


def leaf_paths(tree: Any) -> list[tuple[tuple[str, Any], ...] | None]:
    """How each leaf of `tree` (in `tree_flatten`'s order) is reached: ("item", key) and
    ("attr", name) steps, or None when a container of the path does not say (a class
    registered with `register_pytree_node`).

    >>> leaf_paths({"a": [1.0]})
    [(('item', 'a'), ('item', 0))]
    """
    import optree

    tree_flatten(tree)  # registers dataclasses and attrs classes met for the first time
    accessors, _, _ = optree.tree_flatten_with_accessor(
        tree, none_is_leaf=True, namespace=NAMESPACE
    )
    paths: list[tuple[tuple[str, Any], ...] | None] = []
    for accessor in accessors:
        steps: list[tuple[str, Any]] = []
        for entry in accessor:
            if isinstance(entry, optree.GetAttrEntry):
                steps.append(("attr", entry.name))
            elif isinstance(entry, optree.SequenceEntry | optree.MappingEntry):
                steps.append(("item", entry.entry))
            else:
                break
        else:
            paths.append(tuple(steps))
            continue
        paths.append(None)
    return paths


def tree_unflatten(spec: PyTreeSpec, leaves: Iterable[Any]) -> Any:
    """Rebuild the tree described by `spec` from `leaves`.

    >>> leaves, spec = tree_flatten({"a": 1, "b": [2]})
    >>> tree_unflatten(spec, [10, 20])
    {'a': 10, 'b': [20]}
    """
    import optree

    return optree.tree_unflatten(spec, list(leaves))


def tree_structure(tree: Any) -> PyTreeSpec:
    """The spec of `tree` (its containers, without the leaves).

    >>> tree_structure((1, 2)) == tree_structure((3, 4))
    True
    """
    return tree_flatten(tree)[1]


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """`fn` applied to the leaves of `tree` (and the matching leaves of `rest`).

    >>> tree_map(lambda a, b: a + b, {"x": 1, "y": 2}, {"x": 10, "y": 20})
    {'x': 11, 'y': 22}
    """
    leaves, spec = tree_flatten(tree)
    others = [spec.flatten_up_to(other) for other in rest]
    return tree_unflatten(spec, [fn(*items) for items in zip(leaves, *others, strict=True)])


def check_leaves(leaves: Iterable[Any], what: str) -> None:
    """Raise a TypeError naming `what` when a leaf is neither an array, a number nor None: an
    unregistered container whose arrays would otherwise silently get no gradient.

    >>> check_leaves([np.zeros(2), 1.0, None], "grad of f")
    >>> check_leaves([object()], "grad of f")
    Traceback (most recent call last):
    TypeError: grad of f: a differentiated argument holds a object, which is not an array, \
a number or a registered pytree container; make its class a dataclass or an attrs class, or \
register it with numpile.register_pytree_node(object, flatten, unflatten)
    """
    for leaf in leaves:
        if leaf is None or isinstance(leaf, _NUMBERS):
            continue
        name = type(leaf).__qualname__
        raise TypeError(
            f"{what}: a differentiated argument holds a {name}, which is not an array, a number "
            "or a registered pytree container; make its class a dataclass or an attrs class, "
            f"or register it with numpile.register_pytree_node({name}, flatten, unflatten)"
        )
