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
tuple with an int or None per positional argument (applied to every leaf of
that argument's tree); `out_axes` is an int for every output leaf. Outputs
that do not depend on a batched argument are broadcast along the batch.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
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

InAxes = int | None | Sequence[int | None]


def _axes_per_argument(in_axes: InAxes, count: int) -> tuple[int | None, ...]:
    if in_axes is None or isinstance(in_axes, int):
        return (in_axes,) * count
    axes = tuple(in_axes)
    if len(axes) != count:
        raise ValueError(f"vmap in_axes has {len(axes)} entries for {count} arguments")
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


def _expand(fn: Any, in_axes: InAxes, out_axes: int, call: TransformCall) -> Any:
    # The trace rule: `fn` inlined on one example, that region batched.
    graph = call.graph
    axes = _axes_per_argument(in_axes, len(call.args))
    flat = [tree_flatten(arg) for arg in call.args]
    batched_leaves = [
        (leaf, axis)
        for (leaves, _), axis in zip(flat, axes, strict=True)
        if axis is not None
        for leaf in leaves
    ]
    if not batched_leaves:
        raise ValueError("vmap needs at least one batched argument (in_axes all None)")
    size = _batch_size(batched_leaves)
    batched: dict[Node, Node] = {}
    examples = []
    for (leaves, spec), axis in zip(flat, axes, strict=True):
        if axis is None:
            examples.append(tree_unflatten(spec, leaves))
            continue
        replaced = []
        for leaf in leaves:
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
    for leaf in leaves:
        if not isinstance(leaf, Node) or not isinstance(leaf.meta, ArrayMeta):
            results.append(leaf)
            continue
        value = values.get(leaf, leaf)
        if leaf not in carried:
            meta = leaf.meta
            value = graph.call(get_op("broadcast_to"), value, shape=(size, *meta.shape))
        results.append(_moved_from_front(graph, value, out_axes))
    _drop_example(graph, [*batched, *(node for node in region if node in carried)])
    return tree_unflatten(spec, results)


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


def _loop(fn: Callable[..., Any], in_axes: InAxes, out_axes: int) -> Callable[..., Any]:
    # The eager form (a graph break in `fn`): once per example, the results stacked (over
    # user pytrees: dataclasses of gradients stack field by field).
    def run(*args: Any, **kwargs: Any) -> Any:
        axes = _axes_per_argument(in_axes, len(args))
        flat = [user_tree_flatten(arg) for arg in args]
        sizes = {
            np.shape(leaf)[axis]
            for (leaves, _), axis in zip(flat, axes, strict=True)
            if axis is not None
            for leaf in leaves
        }
        if len(sizes) != 1:
            raise ValueError(f"vmap got batched arguments of different sizes {sorted(sizes)}")
        size = sizes.pop()
        outputs = []
        for index in range(size):
            example_args = [
                arg
                if axis is None
                else user_tree_unflatten(spec, [np.take(leaf, index, axis) for leaf in leaves])
                for arg, (leaves, spec), axis in zip(args, flat, axes, strict=True)
            ]
            outputs.append(user_tree_flatten(fn(*example_args, **kwargs)))
        spec = outputs[0][1]
        stacked = [
            np.stack([np.asarray(out[0][i]) for out in outputs], axis=out_axes)
            for i in range(len(outputs[0][0]))
        ]
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
    in_axes: InAxes = 0,
    out_axes: int = 0,
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
