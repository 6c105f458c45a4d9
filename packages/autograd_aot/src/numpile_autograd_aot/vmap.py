"""`vmap`: a function of one example applied to a batch, as one graph.

`vmap(fn, in_axes, out_axes)` returns a function compiled with
`numpile.compile`'s machinery (`compile_function`, static shapes). Its trace
rule inlines `fn` on one example (the batched arguments sliced at index 0)
and rewrites that region for the whole batch with the batching table
(`batching_table.batch_nodes`): each op once, on arrays with a leading batch
axis. So `vmap(f)` compiles to one graph the inductor fuses, and composes:
`vmap(grad(loss))` batches the forward and backward nodes `grad`'s rule
traced, `vmap(vmap(f))` and `compile(vmap(f))` trace the inner rule, and a
`vmap` called inside a compiled function joins the caller's graph. Where `fn`
cannot be captured (a graph break), the call runs eagerly: `fn` once per
example, the results stacked.

    >>> import numpy as np
    >>> batched = vmap(lambda row, w: np.tanh(row @ w), in_axes=(0, None))
    >>> batched(np.ones((4, 3)), np.ones((3, 2))).shape
    (4, 2)

`in_axes` is an int (every argument batched along that axis), None, or a
tuple with an entry per positional argument; each entry is an int, None, or a
tree that is a prefix of that argument's tree (a dict of axes for a dict of
parameters: `({"w": None, "b": 0}, 0)`), as in JAX. `out_axes` is likewise an
int or a prefix of the output's tree. Outputs that do not depend on a batched
argument are broadcast along the batch.

    >>> params = {"w": np.ones(3), "b": np.arange(4.0)}
    >>> vmap(lambda p, x: p["w"] @ x + p["b"], in_axes=({"w": None, "b": 0}, 0))(
    ...     params, np.ones((4, 3)))
    array([3., 4., 5., 6.])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    TransformCall,
    broadcast_prefix,
    compile_function,
    get_op,
    register_transform,
    tree_flatten,
    tree_unflatten,
)

from .batching_table import batch_nodes
from .eager_entry import forwarding_function, in_namespace_of
from .pytree import broadcast_prefix as user_broadcast_prefix
from .pytree import tree_flatten as user_tree_flatten
from .pytree import tree_unflatten as user_tree_unflatten
from .transform_region import drop_replaced
from .transform_rules import fold_constructor

__all__ = ["vmap"]

Axes = Any
"""vmap's axes: an int, None, or a tree that is a prefix of the value's (per argument for
`in_axes`: a tuple/list with an entry per argument)."""


_UNBATCHED = (
    "vmap out_axes is None for an output that depends on the batched arguments: give it an axis"
)


def _axes_per_argument(in_axes: Axes, count: int) -> tuple[Any, ...]:
    if type(in_axes) not in (tuple, list):
        return (in_axes,) * count
    axes = tuple(in_axes)
    if len(axes) != count:
        raise ValueError(f"vmap in_axes has {len(axes)} entries for {count} arguments")
    return axes


def _leaf_axes(prefix: Any, tree: Any, broadcast: Callable[[Any, Any], list[Any]]) -> list[Any]:
    # The axis of each leaf of `tree`: `prefix` broadcast over it, each an int or None.
    try:
        axes = broadcast(prefix, tree)
    except ValueError as error:
        raise ValueError(
            f"vmap axes {prefix!r} do not match the structure of the value: give an int, "
            "None, or a prefix of its tree"
        ) from error
    for axis in axes:
        if axis is not None and not isinstance(axis, int):
            raise ValueError(f"vmap axes must be ints or None, got {axis!r}")
    return axes


def _moved_to_front(graph: Graph, node: Node, axis: int) -> Node:
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    axis = axis % meta.ndim
    if axis == 0:
        return node
    order = (axis, *(a for a in range(meta.ndim) if a != axis))
    return graph.call(get_op("transpose"), node, axes=order)


def _moved_from_front(graph: Graph, node: Node, axis: int) -> Node:
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    axis = axis % meta.ndim
    if axis == 0:
        return node
    rest = list(range(1, meta.ndim))
    order = (*rest[:axis], 0, *rest[axis:])
    return graph.call(get_op("transpose"), node, axes=order)


def _batch_size(leaves: list[tuple[Any, int]]) -> int:
    sizes = set()
    for leaf, axis in leaves:
        meta = leaf.meta if isinstance(leaf, Node) else None
        if not isinstance(meta, ArrayMeta) or meta.ndim == 0:
            raise ValueError(f"vmap batches arrays with at least one dim, got {meta or leaf!r}")
        size = meta.shape[axis % meta.ndim]
        if not isinstance(size, int):
            raise ValueError("vmap needs a static batch size")
        sizes.add(size)
    if len(sizes) != 1:
        raise ValueError(f"vmap got batched arguments of different sizes {sorted(sizes)}")
    return sizes.pop()


def _expand(fn: Any, in_axes: Axes, out_axes: Axes, call: TransformCall) -> Any:
    # The trace rule: `fn` inlined on one example, that region batched.
    graph = call.graph
    prefixes = _axes_per_argument(in_axes, len(call.args))
    flat = [tree_flatten(arg) for arg in call.args]
    axes = [
        _leaf_axes(prefix, arg, broadcast_prefix)
        for prefix, arg in zip(prefixes, call.args, strict=True)
    ]
    batched_leaves = [
        (leaf, axis)
        for (leaves, _), leaf_axes in zip(flat, axes, strict=True)
        for leaf, axis in zip(leaves, leaf_axes, strict=True)
        if axis is not None
    ]
    if not batched_leaves:
        raise ValueError("vmap needs at least one batched argument (in_axes all None)")
    size = _batch_size(batched_leaves)
    batched: dict[Node, Node] = {}
    examples = []
    for (leaves, spec), leaf_axes in zip(flat, axes, strict=True):
        replaced = []
        for leaf, axis in zip(leaves, leaf_axes, strict=True):
            if axis is None:
                replaced.append(leaf)
                continue
            moved = _moved_to_front(graph, leaf, axis)
            example = graph.call(get_op("getitem"), moved, index=(0,))
            batched[example] = moved
            replaced.append(example)
        examples.append(tree_unflatten(spec, replaced))
    start = len(graph.nodes)
    output = call.inline(fn, tuple(examples), dict(call.kwargs))
    region = [node for node in graph.nodes[start:] if node.op is not None]
    values, carried = batch_nodes(graph, region, batched, size)
    leaves, spec = tree_flatten(output)
    results = []
    for leaf, axis in zip(leaves, _leaf_axes(out_axes, output, broadcast_prefix), strict=True):
        if not isinstance(leaf, Node) or not isinstance(leaf.meta, ArrayMeta):
            results.append(leaf)
            continue
        value = values.get(leaf, leaf)
        if axis is None:
            if leaf in carried:
                raise ValueError(_UNBATCHED)
            results.append(leaf)
            continue
        if leaf not in carried:
            meta = leaf.meta
            value = graph.call(get_op("broadcast_to"), value, shape=(size, *meta.shape))
        results.append(_moved_from_front(graph, value, axis))
    drop_replaced(graph, [*batched, *(node for node in region if node in carried)])
    return tree_unflatten(spec, results)


def _loop(fn: Callable[..., Any], in_axes: Axes, out_axes: Axes) -> Callable[..., Any]:
    # The eager form (a graph break in `fn`): once per example, the results stacked (over
    # user pytrees: dataclasses of gradients stack field by field).
    def run(*args: Any, **kwargs: Any) -> Any:
        prefixes = _axes_per_argument(in_axes, len(args))
        flat = [user_tree_flatten(arg) for arg in args]
        axes = [
            _leaf_axes(prefix, arg, user_broadcast_prefix)
            for prefix, arg in zip(prefixes, args, strict=True)
        ]
        sizes = {
            np.shape(leaf)[axis]
            for (leaves, _), leaf_axes in zip(flat, axes, strict=True)
            for leaf, axis in zip(leaves, leaf_axes, strict=True)
            if axis is not None
        }
        if len(sizes) != 1:
            raise ValueError(f"vmap got batched arguments of different sizes {sorted(sizes)}")
        size = sizes.pop()
        outputs = []
        for index in range(size):
            example_args = [
                user_tree_unflatten(
                    spec,
                    [
                        leaf if axis is None else np.take(leaf, index, axis)
                        for leaf, axis in zip(leaves, leaf_axes, strict=True)
                    ],
                )
                for (leaves, spec), leaf_axes in zip(flat, axes, strict=True)
            ]
            outputs.append(fn(*example_args, **kwargs))
        first_leaves, spec = user_tree_flatten(outputs[0])
        out_leaf_axes = _leaf_axes(out_axes, outputs[0], user_broadcast_prefix)
        per_example = [user_tree_flatten(out)[0] for out in outputs]
        stacked = []
        for i, axis in enumerate(out_leaf_axes):
            values = [np.asarray(leaves[i]) for leaves in per_example]
            if axis is not None:
                stacked.append(np.stack(values, axis=axis))
            elif all(np.array_equal(v, values[0], equal_nan=True) for v in values):
                stacked.append(np.asarray(first_leaves[i]))
            else:
                raise ValueError(_UNBATCHED)

        return user_tree_unflatten(spec, stacked)

    return run


def vmap(
    fn: Callable[..., Any],
    in_axes: Axes = 0,
    out_axes: Axes = 0,
    *,
    backend: str | None = None,
) -> Callable[..., Any]:
    """`fn` of one example mapped over a batch axis of its arguments, compiled as one graph
    (see the module docstring); `backend` is `numpile.compile`'s.

    >>> vmap(lambda x: np.sum(x**2))(np.arange(6.0).reshape(3, 2))
    array([ 1., 13., 41.])
    """
    name = getattr(fn, "__qualname__", type(fn).__name__)

    def expand(call: TransformCall) -> Any:
        return _expand(fn, in_axes, out_axes, call)

    run = _loop(fn, in_axes, out_axes)
    batched = in_namespace_of(fn, forwarding_function(run))
    for function in (run, batched):
        function.__qualname__ = f"vmap({name})"
        register_transform(function, expand, f"vmap of {name}")
    compiled = compile_function(batched, dynamic=False, backend=backend)

    def vmapped(*args: Any, **kwargs: Any) -> Any:
        return compiled(*args, **kwargs)

    vmapped.__qualname__ = f"vmap({name})"
    vmapped.__wrapped__ = fn  # type: ignore[attr-defined]
    register_transform(vmapped, expand, f"vmap of {name}")
    return vmapped


def _fold_vmap(call: TransformCall) -> Any:
    # vmap(...) called in captured code: made at capture time on a Python function (its
    # result carries the rule); on a function the captured code made, a graph-only stand-in.
    def rule(bound: inspect.BoundArguments) -> Callable[[TransformCall], Any]:
        fn, in_axes, out_axes = (bound.arguments[k] for k in ("fn", "in_axes", "out_axes"))
        return lambda inner: _expand(fn, in_axes, out_axes, inner)

    return fold_constructor(vmap, call, rule)


register_transform(vmap, _fold_vmap, "numpile.vmap")
