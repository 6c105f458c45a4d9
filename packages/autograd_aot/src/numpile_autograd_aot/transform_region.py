"""The traced region of a transform call: the differentiated function inlined into the
caller's graph on fresh aliases of its differentiated leaves, and its reverse sweep.

The trace rules of `grad`, `vjp`, `jacrev` and `vmap` share it (`transform_rules`,
`jacobian_rules`, `vmap`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

from numpile_capture import (
    Graph,
    Node,
    OpKind,
    OriginVar,
    ScalarInputVar,
    TransformCall,
    Unsupported,
    get_op,
    tree_flatten,
    tree_unflatten,
)
from numpile_capture.trace_rules import RuleKind, rule_for

from .config import config
from .joint import append_backward, input_cotangent
from .loop_sharing import map_tree
from .loop_stacks import LoopStacks
from .vjp_loop import LoopVjpUnsupported
from .vjp_table import differentiable

log = logging.getLogger("numpile.autograd_aot")

_T = TypeVar("_T")

__all__ = [
    "Region",
    "cotangent_node",
    "drop_added",
    "drop_replaced",
    "function_name",
    "map_region",
    "region_cotangents",
    "trace_region",
    "trace_reversed",
]


@attrs.frozen(eq=False)
class Region:
    """The inlined forward of one transform call: its op nodes, the aliases standing for the
    differentiated leaves (None for a leaf without gradient), and the output tree."""

    nodes: tuple[Node, ...]
    targets: tuple[Node | None, ...]
    output: Any


def _alias_leaf(graph: Graph, leaf: Any) -> tuple[Any, Node | None]:
    # A differentiated leaf as a fresh node of its own, so that only this path is
    # differentiated (a closure reading the same array stays a constant, as in JAX).
    if isinstance(leaf, ScalarInputVar | OriginVar):
        leaf = leaf.as_python_constant()  # differentiated: its value becomes a constant
    if isinstance(leaf, Node):
        if differentiable(leaf.meta):
            alias = graph.call(get_op("alias"), leaf)
            return alias, alias
        return leaf, None
    if type(leaf) is float:
        node = graph.call(get_op("full"), leaf, shape=(), dtype=np.float64)
        return node, node
    if leaf is None or type(leaf) in (bool, int):
        return leaf, None
    raise Unsupported(f"not supported yet: differentiating a {type(leaf).__name__} in a graph")


def trace_region(
    call: TransformCall,
    fn: Any,
    args: Sequence[Any],
    argnums: Sequence[int],
    *,
    keep_loops: bool = False,
    pin_trip_counts: bool = False,
) -> tuple[Region, list[Any]]:
    """Inline `fn` with its differentiated arguments aliased: the region, and the pytree
    specs of those arguments. A region that writes to arrays is `Unsupported`.
    `keep_loops`: its loops stay loop nodes (see `trace_reversed`), else they unroll;
    `pin_trip_counts`: kept loops have their bounds read as ints (guarded)."""
    graph = call.graph
    start = len(graph.nodes)
    replaced = list(args)
    targets: list[Node | None] = []
    specs = []
    for argnum in argnums:
        if argnum >= len(args):
            raise TypeError(f"argnums {argnum} is out of range for {len(args)} arguments")
        leaves, spec = tree_flatten(args[argnum])
        aliased = [_alias_leaf(graph, leaf) for leaf in leaves]
        targets += [target for _, target in aliased]
        replaced[argnum] = tree_unflatten(spec, [value for value, _ in aliased])
        specs.append(spec)
    loops = (keep_loops, pin_trip_counts)
    output = _inline(call, fn, tuple(replaced), dict(call.kwargs), loops)
    nodes = tuple(node for node in graph.nodes[start:] if node.op is not None)
    written = [node for node in nodes if node.op is not None and node.op.kind is OpKind.MUTATION]
    if written:
        raise Unsupported(
            f"not supported yet: differentiating {function_name(fn)}, which writes to arrays "
            f"({written[0].op.name}), inside a compiled function; the transform runs eagerly"  # type: ignore[union-attr]
        )
    return Region(nodes, tuple(targets), output), specs


def _inline(
    call: TransformCall,
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    loops: tuple[bool, bool],
) -> Any:
    # `fn` traced into the graph; a transform's function (`grad(f)` made in captured code,
    # under `jacfwd`) by its own rule, since inlining it would trace its eager body.
    rule = rule_for(fn)
    if rule is not None and rule.kind is RuleKind.TRANSFORM and rule.expand is not None:
        return rule.expand(TransformCall(call.graph, args, kwargs, call.inline))
    keep_loops, pin_trip_counts = loops
    return call.inline(fn, args, kwargs, keep_loops=keep_loops, pin_trip_counts=pin_trip_counts)


def trace_reversed(
    call: TransformCall,
    fn: Any,
    args: Sequence[Any],
    argnums: Sequence[int],
    sweep: Callable[[Region], _T],
) -> tuple[Region, list[Any], _T]:
    """`trace_region` with `fn`'s loops kept, then `sweep(region)`, which appends its
    reverse sweep: a `for` loop goes through the loop VJP `grad` uses (`vjp_loop`), so the
    graph does not grow with the trip count, nor changes with it (the stacks take their
    length at run time). Where a loop has no such VJP (`LoopVjpUnsupported`), the region
    and the sweep's nodes are removed and `fn` is traced again: with the loops' bounds
    read as ints (a first iteration on other types needs the trip count; a new one
    compiles again), then, if a loop still has none (a `while`, a `break`), with the
    loops unrolled (up to the capture's unroll limit; past it the call is a graph break,
    and the eager transform names the loop).

        >>> trace_reversed(call, loss, call.args, (0,), sweep)  # doctest: +SKIP
    """
    graph = call.graph
    start = len(graph.nodes)
    if config.keep_loops:
        for pin in (False, True):
            region, specs = trace_region(
                call, fn, args, argnums, keep_loops=True, pin_trip_counts=pin
            )
            try:
                return region, specs, sweep(region)
            except LoopVjpUnsupported as error:
                log.info("%s: %s", function_name(fn), error)
                drop_added(graph, start)
    region, specs = trace_region(call, fn, args, argnums)
    return region, specs, sweep(region)


def drop_added(graph: Graph, start: int, *, keep: Collection[Node] = ()) -> None:
    """Remove the op nodes added to `graph` since it had `start` nodes (nothing outside
    them reads them yet), except those of `keep` (with every node they read); inputs
    added since stay, as the capture's sources name them."""
    kept: set[Node] = set()
    pending = list(keep)
    while pending:
        node = pending.pop()
        if node not in kept:
            kept.add(node)
            pending.extend(node.input_nodes())
    dropped = [node for node in graph.nodes[start:] if node.op is not None and node not in kept]
    for node in dropped:
        graph.locations.pop(node, None)
    gone = set(dropped)
    graph.nodes[start:] = [node for node in graph.nodes[start:] if node not in gone]


def map_region(region: Region, mapping: Mapping[Node, Any]) -> Region:
    """`region` after `share_forward_loops` replaced some of its nodes (`mapping`): its
    nodes in the same order, each once, and its output, mapped."""
    nodes = dict.fromkeys(mapping.get(node, node) for node in region.nodes)
    return Region(tuple(nodes), region.targets, map_tree(region.output, mapping))


def region_cotangents(
    graph: Graph,
    region: Region,
    seeds: list[tuple[Any, Node]],
    *,
    shared_loops: dict[Node, Node] | None = None,
    stacked_loops: dict[Node, LoopStacks] | None = None,
) -> list[Any]:
    """The reverse sweep of `region` from `seeds` (output, cotangent) appended to `graph`:
    one cotangent per target (None where the leaf has no gradient). `shared_loops`
    collects the loops whose stacking loop computes them too (see `share_forward_loops`),
    `stacked_loops` the stacks of those loops (see `append_backward`)."""
    targets = [t for t in region.targets if t]
    cotangents = append_backward(
        graph,
        region.nodes,
        targets,
        seeds,
        shared_loops=shared_loops,
        stacked_loops=stacked_loops,
    )
    return [
        None if target is None else input_cotangent(graph, cotangents, target)
        for target in region.targets
    ]


def cotangent_node(graph: Graph, cotangent: Any, out: Node) -> Node:
    """`cotangent` (a node or a Python number) as a node of `out`'s shape and dtype."""
    meta = out.meta
    if not isinstance(cotangent, Node):
        return graph.call(get_op("full"), cotangent, shape=meta.shape, dtype=meta.dtype)  # type: ignore[union-attr]
    if tuple(cotangent.meta.shape) != tuple(meta.shape):  # type: ignore[union-attr]
        raise ValueError(
            f"the cotangent has shape {tuple(cotangent.meta.shape)}; "  # type: ignore[union-attr]
            f"the output has shape {tuple(meta.shape)}"  # type: ignore[union-attr]
        )
    if cotangent.meta.dtype != meta.dtype:  # type: ignore[union-attr]
        return graph.call(get_op("astype"), cotangent, dtype=meta.dtype)  # type: ignore[union-attr]
    return cotangent


def function_name(fn: Any) -> str:
    """A function's qualified name, for messages (a function made by captured code is a
    variable with code)."""
    code = getattr(fn, "code", None)
    return str(getattr(fn, "__qualname__", None) or getattr(code, "co_qualname", fn))


def drop_replaced(graph: Graph, candidates: list[Node]) -> None:
    """Remove the nodes of `candidates` that nothing outside them reads: the traced
    example's nodes that batched ones replaced, which would otherwise run for nothing."""
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
