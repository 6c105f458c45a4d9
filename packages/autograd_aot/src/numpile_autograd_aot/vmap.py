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

`in_axes` is a prefix of the tuple of positional arguments, as in JAX: an int
(every leaf batched along that axis), None (not batched), or a tuple with one
entry per argument, each an int, None, or a tuple, list or dict matching that
argument's containers, down to an int or None for a whole subtree. `out_axes`
is a prefix of the output the same way; None there marks an output that does
not depend on a batched argument (an error otherwise). Outputs with an axis
that do not depend on a batched argument are broadcast along the batch.

    >>> per_leaf = vmap(lambda p: p["w"] * p["b"], in_axes=({"w": 0, "b": None},))
    >>> per_leaf({"w": np.ones((4, 3)), "b": np.arange(3.0)}).shape
    (4, 3)
    >>> both = vmap(lambda x: (x * 2, np.ones(2)), out_axes=(1, None))
    >>> [a.shape for a in both(np.ones((4, 3)))]
    [(3, 4), (2,)]
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    TransformCall,
    compile_function,
    get_op,
    register_transform,
    tree_flatten,
    tree_unflatten,
)

from .batching_table import batch_nodes
from .pytree import tree_flatten as user_tree_flatten
from .pytree import tree_unflatten as user_tree_unflatten

__all__ = ["vmap"]

# NOTE: a pytree prefix (see the module docstring): ints and None at its leaves.
Axes = Any


class _Axis:
    # One axis (an int or None) standing for every leaf of a subtree in an axes tree; a
    # plain class, so that both flatteners take it as a leaf.
    __slots__ = ("axis", "count")

    def __init__(self, axis: int | None, count: int) -> None:
        self.axis = axis
        self.count = count


def _axes_tree(prefix: Axes, tree: Any, flatten: Callable[[Any], tuple[list[Any], Any]]) -> Any:
    if prefix is None or (isinstance(prefix, int) and not isinstance(prefix, bool)):
        return _Axis(prefix, len(flatten(tree)[0]))
    if isinstance(prefix, tuple | list) and isinstance(tree, tuple | list):
        if len(prefix) == len(tree):
            return [_axes_tree(p, t, flatten) for p, t in zip(prefix, tree, strict=True)]
    elif isinstance(prefix, dict) and isinstance(tree, dict) and prefix.keys() == tree.keys():
        return {key: _axes_tree(prefix[key], tree[key], flatten) for key in tree}
    raise ValueError(
        f"vmap axes {prefix!r} do not match the structure of {_described(tree)}: give an int "
        "or None, or a tuple, list or dict with the same entries"
    )


def _described(tree: Any) -> str:
    if isinstance(tree, tuple | list | dict):
        return f"a {type(tree).__name__} of {len(tree)} entries"
    return f"a leaf of type {type(tree).__name__}"


def _leaf_axes(
    prefix: Axes, tree: Any, flatten: Callable[[Any], tuple[list[Any], Any]]
) -> list[int | None]:
    """The axis of each leaf of `tree` (in `flatten`'s order) under the axes `prefix`."""
    marks, _ = flatten(_axes_tree(prefix, tree, flatten))
    axes = [mark.axis for mark in marks for _ in range(mark.count)]
    if len(axes) != len(flatten(tree)[0]):  # a container one flattener takes as a leaf
        raise ValueError(f"vmap axes {prefix!r} do not match the structure of the value")
    return axes


def _argument_axes(
    in_axes: Axes, args: tuple[Any, ...], flatten: Callable[[Any], tuple[list[Any], Any]]
) -> list[list[int | None]]:
    # The axis of each leaf of each positional argument.
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise ValueError(f"vmap in_axes has {len(in_axes)} entries for {len(args)} arguments")
    if not isinstance(in_axes, tuple):
        in_axes = (in_axes,) * len(args)
    return [_leaf_axes(axes, arg, flatten) for axes, arg in zip(in_axes, args, strict=True)]


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
    axes = _argument_axes(in_axes, tuple(call.args), tree_flatten)
    flat = [tree_flatten(arg) for arg in call.args]
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
    for leaf, axis in zip(leaves, _leaf_axes(out_axes, output, tree_flatten), strict=True):
        if not isinstance(leaf, Node) or not isinstance(leaf.meta, ArrayMeta):
            results.append(leaf)
            continue
        value = values.get(leaf, leaf)
        if axis is None:
            if leaf in carried:
                raise ValueError(_UNBATCHED_OUTPUT)
            results.append(value)
            continue
        if leaf not in carried:
            meta = leaf.meta
            value = graph.call(get_op("broadcast_to"), value, shape=(size, *meta.shape))
        results.append(_moved_from_front(graph, value, axis))
    _drop_example(graph, [*batched, *(node for node in region if node in carried)])
    return tree_unflatten(spec, results)


_UNBATCHED_OUTPUT = (
    "vmap out_axes is None for an output that depends on a batched argument: give it an "
    "axis (an int) to stack the examples along"
)


def _drop_example(graph: Graph, candidates: list[Node]) -> None:
    # The example's nodes that the batched ones replaced: nothing reads them any more (the
    # inlined function has returned), so they leave the graph rather than run for nothing.
    dead = set(candidates)
    users = graph.users()
    for node in reversed(graph.nodes):
        if node in dead and any(user not in dead for user in users[node]):
            dead.discard(node)
    # A node read only by dead nodes is dead; one read by a live node was kept above, and
    # the reverse walk keeps the readers of each kept node too.
    graph.nodes[:] = [node for node in graph.nodes if node not in dead]
    for node in dead:
        graph.locations.pop(node, None)


def _loop(fn: Callable[..., Any], in_axes: Axes, out_axes: Axes) -> Callable[..., Any]:
    # The eager form (a graph break in `fn`): once per example, the results stacked (over
    # user pytrees: dataclasses of gradients stack field by field).
    def run(*args: Any, **kwargs: Any) -> Any:
        axes = _argument_axes(in_axes, args, user_tree_flatten)
        flat = [user_tree_flatten(arg) for arg in args]
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
        flat_outputs = [user_tree_flatten(output)[0] for output in outputs]
        spec = user_tree_flatten(outputs[0])[1]
        stacked = []
        for i, axis in enumerate(_leaf_axes(out_axes, outputs[0], user_tree_flatten)):
            if axis is not None:
                stacked.append(np.stack([np.asarray(out[i]) for out in flat_outputs], axis=axis))
                continue
            # An unbatched output (out_axes None) is the same in every example.
            first = flat_outputs[0][i]
            if any(not np.array_equal(out[i], first) for out in flat_outputs[1:]):
                raise ValueError(_UNBATCHED_OUTPUT)
            stacked.append(first)
        return user_tree_unflatten(spec, stacked)

    return run


def _forwarding(run: Callable[..., Any]) -> types.FunctionType:
    def batched(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs)

    return batched  # type: ignore[return-value]


def _in_namespace_of(fn: Any, function: types.FunctionType) -> types.FunctionType:
    # `function` with the globals of the user's function under `fn` (through transform
    # wrappers): compiled as the root, it may then read the globals of the code it inlines.
    inner = fn
    while not isinstance(inner, types.FunctionType) or hasattr(inner, "__wrapped__"):
        following = getattr(inner, "__wrapped__", None) or getattr(inner, "fn", None)
        if following is None or following is inner:
            break
        inner = following
    if not isinstance(inner, types.FunctionType):
        return function
    return types.FunctionType(
        function.__code__,
        inner.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )


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
    batched = _in_namespace_of(fn, _forwarding(run))
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
