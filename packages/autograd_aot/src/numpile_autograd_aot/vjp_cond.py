"""The VJP of a `cond` (an `if` on a run-time value inside a loop body): a `cond` of VJPs.

A `cond` node chooses one of two subgraphs by its predicate; its backward is a `cond` node
on the same predicate whose branches are each branch's reverse sweep: branch `b` becomes a
graph taking the branch's inputs and the cotangents of its results, that runs `b` again
(recomputing its intermediates) and returns the cotangent of each differentiated input
(zeros where the branch does not read it). So a loop whose body holds an `if` keeps its
VJP (`vjp_loop`): the reverse loop's body recomputes the predicate and takes the branch
the forward took.

    >>> grad(lambda x: branchy_recurrence(x, 5000))(x)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from numpile_capture import Graph, Node, get_op

from .joint import append_backward, input_cotangent
from .vjp_table import VjpContext, differentiable, register_vjp


@register_vjp(get_op("cond"))
def _cond_vjp(ctx: VjpContext) -> list[Node | None]:
    node, graph = ctx.node, ctx.graph
    assert node.op is not None
    if node.op.mutates:
        # Late import: vjp_loop imports this module's table; its error names the node.
        from .vjp_loop import loop_error

        raise loop_error(graph, node, "an `if` whose branches write arrays in place")
    params = dict(node.params)
    branches: tuple[Graph, Graph] = (params["then_branch"], params["else_branch"])
    pred, *inputs = node.inputs
    items = ctx.items or {0: ctx.cotangent}
    seeded = sorted(items)
    wanted = [
        k
        for k, value in enumerate(inputs)
        if ctx.wants(1 + k) and isinstance(value, Node) and differentiable(value.meta)
    ]
    grads: list[Node | None] = [None] * len(node.inputs)
    if not wanted:
        return grads
    then_vjp, else_vjp = (_branch_vjp(branch, seeded, items, wanted) for branch in branches)
    cotangents = [items[j] for j in seeded]
    both = graph.call(
        get_op("cond"), pred, *inputs, *cotangents, then_branch=then_vjp, else_branch=else_vjp
    )
    for slot, k in enumerate(wanted):
        meta = inputs[k].meta
        grads[1 + k] = graph.add_node(get_op("loop_output"), (both,), {"index": slot}, meta)
    return grads


def _branch_vjp(
    branch: Graph, seeded: list[int], items: dict[int, Node], wanted: list[int]
) -> Graph:
    # (branch inputs..., cotangents of the seeded results...) -> cotangents of the wanted
    # inputs: the branch run again, then its reverse sweep.
    new = Graph()
    values = [new.placeholder(p.name, p.meta) for p in branch.placeholders]
    seeds = [new.placeholder(f"ct{j}", items[j].meta) for j in seeded]
    mapping: dict[Node, Any] = dict(zip(branch.placeholders, values, strict=True))
    copied: list[Node] = []
    for inner in branch.nodes:
        if inner.op is None:
            continue
        args = tuple(mapping[v] if isinstance(v, Node) else v for v in inner.inputs)
        mapping[inner] = new.add_node(inner.op, args, inner.kwargs, inner.meta)
        copied.append(mapping[inner])
    outputs = branch.output if isinstance(branch.output, tuple) else (branch.output,)
    pairs = [
        (mapping[outputs[j]], seed)
        for j, seed in zip(seeded, seeds, strict=True)
        if isinstance(outputs[j], Node)
    ]
    targets = [values[k] for k in wanted]
    found = append_backward(new, copied, targets, pairs)
    results = []
    for target in targets:
        result = input_cotangent(new, found, target)
        assert result is not None  # a wanted input is differentiable
        results.append(result)
    new.output = tuple(results)
    return new
