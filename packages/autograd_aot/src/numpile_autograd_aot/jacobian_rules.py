"""Trace rules of the forward transforms: `jvp`, `linearize`, `jacfwd`, `jacrev`, `hessian`
called from captured code.

Inside `numpile.compile` (or `vmap`), these calls add nodes to the graph being captured
instead of running: the differentiated function is inlined on fresh aliases of its
arguments (as `grad`'s rule does), then

- `jvp` appends the tangent of each region node (`jvp_graph.append_tangents`) from the
  given tangents;
- `jacfwd` pushes every column of the identity at once: the tangent region is traced on
  one basis vector and batched over all of them with the batching table (`batch_nodes`,
  as `vmap` does), so a Jacobian costs one batched tangent pass, not one pass per input
  element;
- `jacrev` pulls every row of the identity back the same way through the reverse sweep;
- `hessian` is `jacfwd(grad(f))`: `grad`'s rule runs inside `jacfwd`'s.

Where a rule cannot express the call (complex values, sizes known only at run time,
integer inputs or outputs of a Jacobian) it raises `Unsupported`: the call becomes a graph
break and the transform runs eagerly, with the same values.

    >>> @numpile.compile  # doctest: +SKIP
    ... def newton_step(x):
    ...     return x - np.linalg.solve(hessian(f)(x), grad(f)(x))   # one graph
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from numpile_capture import (
    ArrayMeta,
    Graph,
    Node,
    TransformCall,
    Unsupported,
    compile_function,
    get_op,
    register_transform,
    tree_flatten,
    tree_unflatten,
)

from .batching_table import batch_nodes
from .eager_entry import forwarding_function, in_namespace_of
from .jvp_graph import append_tangents, output_tangent
from .transform_region import (
    Region,
    cotangent_node,
    drop_replaced,
    function_name,
    region_cotangents,
    trace_region,
)
from .transform_rules import (
    argnums_of,
    fold_constructor,
    fold_transform,
)
from .transforms import grad

__all__ = [
    "expand_jacfwd",
    "expand_jacrev",
    "expand_jvp",
    "expand_linearize",
    "fold_hessian",
    "fold_jacobian",
    "traceable_jacobian",
]


def _check_keywords(name: str, kwargs: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(kwargs) - allowed
    if unknown:
        raise TypeError(f"{name}() got unexpected keyword argument(s) {', '.join(sorted(unknown))}")


def _seed_tangents(
    graph: Graph, region: Region, tangent_trees: Sequence[Any], specs: Sequence[Any]
) -> dict[Node, Node]:
    # The tangent of each differentiated alias, from trees shaped like the primals.
    leaves: list[Any] = []
    for tree, spec in zip(tangent_trees, specs, strict=True):
        found, found_spec = tree_flatten(tree)
        if found_spec != spec:
            raise ValueError(f"a tangent's structure {found_spec} differs from its primal's {spec}")
        leaves += found
    return {
        target: cotangent_node(graph, leaf, target)
        for target, leaf in zip(region.targets, leaves, strict=True)
        if target is not None
    }


def _tangent_tree(graph: Graph, region: Region, tangents: dict[Node, Node]) -> Any:
    leaves, spec = tree_flatten(region.output)
    return tree_unflatten(spec, [output_tangent(graph, tangents, leaf) for leaf in leaves])


def expand_jvp(call: TransformCall) -> Any:
    """The trace rule of `jvp(fn, primals, tangents)`: the inlined forward and its tangents.

    >>> expand_jvp(call)  # doctest: +SKIP
    """
    if len(call.args) != 3:
        raise TypeError(f"jvp() takes fn, primals and tangents, got {len(call.args)} arguments")
    _check_keywords("jvp", call.kwargs, {"compiler", "partitioner"})
    fn, primals, tangents = call.args[0], tuple(call.args[1]), tuple(call.args[2])
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals and {len(tangents)} tangents")
    inner = TransformCall(call.graph, primals, {}, call.inline)
    region, specs = trace_region(inner, fn, primals, range(len(primals)))
    seeds = _seed_tangents(call.graph, region, tangents, specs)
    append_tangents(call.graph, region.nodes, seeds)
    return region.output, _tangent_tree(call.graph, region, seeds)


def expand_linearize(call: TransformCall) -> Any:
    """The trace rule of `linearize(fn, *primals)`: the inlined forward now, and an `f_jvp`
    whose own rule appends tangents where the code calls it.

    >>> expand_linearize(call)  # doctest: +SKIP
    """
    if not call.args:
        raise TypeError("linearize() needs a function")
    _check_keywords("linearize", call.kwargs, {"compiler", "partitioner"})
    fn, primals = call.args[0], call.args[1:]
    inner = TransformCall(call.graph, tuple(primals), {}, call.inline)
    region, specs = trace_region(inner, fn, primals, range(len(primals)))

    def f_jvp(*tangents: Any) -> Any:
        raise RuntimeError(
            "an f_jvp made by linearize inside a compiled function can only be called inside it"
        )

    def expand_f_jvp(use: TransformCall) -> Any:
        if len(use.args) != len(primals) or use.kwargs:
            raise TypeError(f"f_jvp takes {len(primals)} tangent(s), got {len(use.args)}")
        seeds = _seed_tangents(use.graph, region, use.args, specs)
        append_tangents(use.graph, region.nodes, seeds)
        return _tangent_tree(use.graph, region, seeds)

    register_transform(f_jvp, expand_f_jvp, f"the f_jvp of {function_name(fn)}")
    return region.output, f_jvp


def _static_size(node: Node, what: str) -> tuple[ArrayMeta, int]:
    meta = node.meta
    if not isinstance(meta, ArrayMeta) or meta.dtype.kind != "f":
        raise Unsupported(f"not supported yet: a Jacobian of {what} {meta} inside a graph")
    if not all(isinstance(d, int) for d in meta.shape):
        raise Unsupported(f"not supported yet: a Jacobian of {what} of symbolic shape in a graph")
    return meta, math.prod(meta.shape)


def _basis(graph: Graph, total: int, offset: int, meta: ArrayMeta) -> tuple[Node, Node]:
    # Rows offset .. offset+size of the identity of order `total`, shaped (total, *shape)
    # (the batched basis), and its first row (the example the region is traced on).
    size = math.prod(meta.shape)
    eye = graph.call(get_op("eye"), n=total, m=size, k=-offset, dtype=meta.dtype)
    batched = graph.call(get_op("reshape"), eye, shape=(total, *meta.shape))
    return batched, graph.call(get_op("getitem"), batched, index=(0,))


def _batched_value(
    graph: Graph,
    node: Node,
    values: dict[Node, Node],
    carried: set[Node],
    total: int,
) -> Node:
    value = values.get(node, node)
    if node in carried:
        return value
    meta = node.meta
    assert isinstance(meta, ArrayMeta)
    return graph.call(get_op("broadcast_to"), value, shape=(total, *meta.shape))


def _block(
    graph: Graph, rows: Node, offset: int, size: int, lead: tuple[int, ...], trail: tuple[int, ...]
) -> Node:
    # rows[offset:offset+size] of a (total, ...) array, as an array of shape lead + trail.
    piece = graph.call(get_op("getitem"), rows, index=(slice(offset, offset + size),))
    return graph.call(get_op("reshape"), piece, shape=(*lead, *trail))


def _nest(out_tree: Any, specs: Sequence[Any], blocks: list[list[Node]], single: bool) -> Any:
    # blocks[o][i]: the Jacobian of output leaf o w.r.t. differentiated leaf i, nested as JAX
    # does: the output's structure, each leaf holding the arguments' structures.
    out_leaves, out_spec = tree_flatten(out_tree)
    nested = []
    for o in range(len(out_leaves)):
        found = iter(blocks[o])
        per_arg = [
            tree_unflatten(spec, [next(found) for _ in range(spec.num_leaves)]) for spec in specs
        ]
        nested.append(per_arg[0] if single else tuple(per_arg))
    return tree_unflatten(out_spec, nested)


def _float_targets(region: Region) -> list[tuple[Node, ArrayMeta, int]]:
    targets = []
    for target in region.targets:
        if target is None:
            raise Unsupported("not supported yet: a Jacobian with respect to integer inputs")
        meta, size = _static_size(target, "an input")
        targets.append((target, meta, size))
    return targets


def expand_jacfwd(fn: Any, argnums: tuple[int, ...], single: bool, call: TransformCall) -> Any:
    """The trace rule of a `jacfwd` function: one tangent pass, batched over the identity.

    >>> expand_jacfwd(f, (0,), True, call)  # doctest: +SKIP
    """
    graph = call.graph
    region, specs = trace_region(call, fn, call.args, argnums)
    targets = _float_targets(region)
    total = sum(size for _, _, size in targets)
    batched: dict[Node, Node] = {}
    seeds: dict[Node, Node] = {}
    offset = 0
    for target, meta, size in targets:
        rows, example = _basis(graph, total, offset, meta)
        batched[example], seeds[target] = rows, example
        offset += size
    start = len(graph.nodes)
    tangents = dict(seeds)
    append_tangents(graph, region.nodes, tangents)
    out_leaves, _ = tree_flatten(region.output)
    out_tangents = [output_tangent(graph, tangents, leaf) for leaf in out_leaves]
    if any(tangent is None for tangent in out_tangents):
        raise Unsupported("not supported yet: a Jacobian of integer outputs inside a graph")
    tangent_region = [node for node in graph.nodes[start:] if node.op is not None]
    values, carried = batch_nodes(graph, tangent_region, batched, total)
    blocks = []
    for leaf, tangent in zip(out_leaves, out_tangents, strict=True):
        assert tangent is not None
        out_meta, _ = _static_size(leaf, "an output")
        rows = _batched_value(graph, tangent, values, carried, total)
        # (total, *out) -> (*out, total): a column per input element.
        order = (*range(1, len(out_meta.shape) + 1), 0)
        columns = graph.call(get_op("transpose"), rows, axes=order)
        per_input = []
        offset = 0
        for _, meta, size in targets:
            piece = graph.call(
                get_op("getitem"), columns, index=(Ellipsis, slice(offset, offset + size))
            )
            per_input.append(
                graph.call(get_op("reshape"), piece, shape=(*out_meta.shape, *meta.shape))
            )
            offset += size
        blocks.append(per_input)
    drop_replaced(graph, [*batched, *(node for node in tangent_region if node in carried)])
    return _nest(region.output, specs, blocks, single)


def expand_jacrev(fn: Any, argnums: tuple[int, ...], single: bool, call: TransformCall) -> Any:
    """The trace rule of a `jacrev` function: one reverse sweep, batched over the identity.

    >>> expand_jacrev(f, (0,), True, call)  # doctest: +SKIP
    """
    graph = call.graph
    region, specs = trace_region(call, fn, call.args, argnums)
    targets = _float_targets(region)
    out_leaves, _ = tree_flatten(region.output)
    outputs = []
    for leaf in out_leaves:
        if not isinstance(leaf, Node):
            raise Unsupported("not supported yet: a Jacobian of a Python value inside a graph")
        outputs.append((leaf, *_static_size(leaf, "an output")))
    total = sum(size for _, _, size in outputs)
    batched: dict[Node, Node] = {}
    seeds: list[tuple[Any, Node]] = []
    offset = 0
    for leaf, meta, size in outputs:
        rows, example = _basis(graph, total, offset, meta)
        batched[example] = rows
        seeds.append((leaf, example))
        offset += size
    start = len(graph.nodes)
    cotangents = region_cotangents(graph, region, seeds)
    backward_region = [node for node in graph.nodes[start:] if node.op is not None]
    values, carried = batch_nodes(graph, backward_region, batched, total)
    gradients = []
    for cotangent in cotangents:
        assert cotangent is not None  # _float_targets: every target is a float array
        gradients.append(_batched_value(graph, cotangent, values, carried, total))
    blocks = []
    offset = 0
    for _, out_meta, out_size in outputs:
        blocks.append(
            [
                _block(graph, rows, offset, out_size, tuple(out_meta.shape), tuple(meta.shape))
                for rows, (_, meta, _) in zip(gradients, targets, strict=True)
            ]
        )
        offset += out_size
    drop_replaced(graph, [*batched, *(node for node in backward_region if node in carried)])
    return _nest(region.output, specs, blocks, single)


Expand = Callable[[Any, tuple[int, ...], bool, TransformCall], Any]


def traceable_jacobian(
    jacobian: Callable[..., Any],
    expand: Expand,
    fn: Any,
    argnums: tuple[int, ...],
    single: bool,
    kind: str,
) -> Callable[..., Any]:
    """The Jacobian function `jacfwd`/`jacrev` return, built as `vmap` builds its own: it
    runs a compiled function whose body is traced by the rule, so the whole Jacobian is one
    batched graph; where the rule cannot express a call, the graph breaks there and
    `jacobian` (the eager form: one pass per basis vector) runs instead. The returned
    function carries the rule too, so it joins the graph when called from captured code.

    >>> traceable_jacobian(jacobian, expand_jacfwd, f, (0,), True, "jacfwd")  # doctest: +SKIP
    """
    name = function_name(fn)
    forwarding = in_namespace_of(fn, forwarding_function(jacobian))
    compiled = compile_function(forwarding, dynamic=False)

    def run_compiled(*args: Any) -> Any:
        return compiled(*args)

    # In the user's namespace too: compiled as a root, it reads the globals of `fn`.
    public = in_namespace_of(fn, run_compiled)  # type: ignore[arg-type]
    for function in (jacobian, forwarding, public):
        function.__wrapped__ = fn  # type: ignore[attr-defined]
        function.__qualname__ = f"{kind}({name})"
        register_transform(
            function, lambda call: expand(fn, argnums, single, call), f"{kind} of {name}"
        )
    return public


def fold_jacobian(make: Callable[..., Any], expand: Expand, call: TransformCall) -> Any:
    """The trace rule of `jacfwd` / `jacrev` themselves (see `fold_constructor`).

    >>> fold_jacobian(jacfwd, expand_jacfwd, call)  # doctest: +SKIP
    """

    def rule(bound: inspect.BoundArguments) -> Callable[[TransformCall], Any]:
        fn = bound.arguments["fn"]
        numbers, single = argnums_of(bound)
        return lambda inner: expand(fn, numbers, single, inner)

    return fold_constructor(make, call, rule)


def fold_hessian(
    hessian: Callable[..., Any], jacfwd: Callable[..., Any], call: TransformCall
) -> Any:
    """The trace rule of `hessian` called in captured code: `jacfwd(grad(fn))`, each folded
    by its own rule.

    >>> fold_hessian(hessian, jacfwd, call)  # doctest: +SKIP
    """
    bound = inspect.signature(hessian).bind(*call.args, **call.kwargs)
    bound.apply_defaults()
    fn, argnums = bound.arguments["fn"], bound.arguments["argnums"]
    gradient = fold_transform(grad, TransformCall(call.graph, (fn, argnums), {}, call.inline))
    inner = TransformCall(call.graph, (gradient, argnums), {}, call.inline)
    return fold_jacobian(jacfwd, expand_jacfwd, inner)
